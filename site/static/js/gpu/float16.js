// The float16 kernels (manifest "dtype": "float16", kernels_wgsl/fused_f16.wgsl) on the
// visitor's GPU: one run, read back as float16 bit patterns. They need the WebGPU feature
// the manifest's "dtypes" names (shader-f16); device.js asks for it where the adapter
// has it. Nothing here decides what a row's numbers mean: the page sends the bits to
// Python (emulator/float16.py), which classifies the rows and compares them with its mirror.
import { _ } from "../i18n.js";
import { asGpuError, fail } from "./errors.js";
import { loadManifest } from "./files.js";
import { checkLost, getDevice, scoped } from "./device.js";
import { featureOf, getPipeline } from "./pipelines.js";
import { lessonTiling } from "./plan.js";
import { readBuffer } from "./runs.js";

function storage(device, data, label) {
  const size = Math.max(16, Math.ceil(data.byteLength / 4) * 4);
  const buf = device.createBuffer({
    size,
    label,
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
  });
  if (data.byteLength) device.queue.writeBuffer(buf, 0, data.buffer, data.byteOffset, data.byteLength);
  return buf;
}

/**
 * Run float16 `kernel` once on `heads` heads of Q, K, V (Uint16Array of heads·n·d float16
 * bit patterns each, (H, N, d) row-major), full attention. Returns {O: Uint16Array
 * (H·N·d bit patterns), file}. Throws GpuError: "feature" where the device lacks the
 * dtype's feature, "input" for arrays of the wrong size, others as device.js says.
 */
export async function runFloat16({ kernel, n, d, heads = 1, Q, K, V }) {
  try {
    const manifest = await loadManifest();
    const feature = featureOf(manifest, kernel);
    for (const [name, arr] of [
      ["Q", Q],
      ["K", K],
      ["V", V],
    ]) {
      if (!(arr instanceof Uint16Array) || arr.length !== heads * n * d)
        throw fail("input", `${name} must be a Uint16Array of H·N·d = ${heads * n * d} float16 values.`);
    }
    const s = await getDevice(manifest, { limits: {} });
    if (feature && !s.device.features.has(feature)) {
      throw fail("feature", _("This GPU offers no {feature}, so the float16 kernels cannot run on it.", { feature }));
    }
    checkLost(s);
    const tiling = lessonTiling(manifest, kernel, d);
    const { pipeline, spec, file } = await getPipeline(s, manifest, kernel, 0, d, tiling, false);
    const device = s.device;
    const O = await scoped(device, _("running {kernel}", { kernel }), async () => {
      const bufs = { Q: storage(device, Q, "Q"), K: storage(device, K, "K"), V: storage(device, V, "V") };
      bufs.O = storage(device, new Uint16Array(heads * n * d), "O");
      const params = device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(params, 0, new Uint32Array([n, 0, 0, 0]));
      const entries = Object.entries(spec.bindings).map(([name, binding]) => ({
        binding,
        resource: { buffer: name === "params" ? params : bufs[name] },
      }));
      const bindGroup = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
      const enc = device.createCommandEncoder();
      const pass = enc.beginComputePass();
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, bindGroup);
      pass.dispatchWorkgroups(Math.ceil(n / tiling.blockRows), heads, 1);
      pass.end();
      device.queue.submit([enc.finish()]);
      const out = new Uint16Array(await readBuffer(device, bufs.O, Math.ceil((heads * n * d * 2) / 4) * 4));
      for (const b of [...Object.values(bufs), params]) b.destroy();
      return out.slice(0, heads * n * d);
    });
    checkLost(s);
    return { O, file };
  } catch (err) {
    throw asGpuError(err);
  }
}
