// The float16 kernels (manifest "dtype": "float16", kernels_wgsl/fused_f16.wgsl) on the
// visitor's GPU: one run, read back as float16 bit patterns, as Python's plan says
// (planner/__init__.py through the worker's "float16_plan" op: tiles, shader constants,
// dispatch and buffer bytes at 2 bytes an element). They need the WebGPU feature the
// plan names (shader-f16); device.js asks for it where the adapter has it. Nothing here
// decides what a row's numbers mean: the page sends the bits to Python
// (emulator/float16_mirrors.py), which classifies the rows and compares them with its mirror.
import { _ } from "../i18n.js";
import { asGpuError, fail } from "./errors.js";
import { loadManifest } from "./files.js";
import { checkLost, getDevice, scoped } from "./device.js";
import { kernelPlan } from "./dispatches.js";
import { destroyRun, encodeUnits, prepareRun, readBuffer } from "./runs.js";

/**
 * Run float16 `kernel` once as `plan` says (a gpu_plan answer holding it: its N, d and
 * heads), on Q, K, V (Uint16Array of float16 bit patterns, (H, N, d) row-major, the
 * plan's bytes each). Returns {O: Uint16Array (H·N·d bit patterns), file, tiling}.
 * Throws GpuError: "feature" where the device lacks the plan's feature, "input" for a
 * plan of another dtype or arrays of the wrong size, others as device.js says.
 */
export async function runFloat16({ plan, kernel, Q, K, V }) {
  try {
    const manifest = await loadManifest();
    const kp = kernelPlan(plan, kernel);
    if (kp.dtype !== "float16") throw fail("input", `${kernel} is planned in ${kp.dtype}, not float16.`);
    for (const [name, arr] of [
      ["Q", Q],
      ["K", K],
      ["V", V],
    ]) {
      if (!(arr instanceof Uint16Array) || arr.byteLength !== kp.buffers[name])
        throw fail(
          "input",
          `${name} must be a Uint16Array of ${kp.buffers[name] / 2} float16 values, as the plan sizes it.`,
        );
    }
    const s = await getDevice(plan);
    if (kp.feature && !s.device.features.has(kp.feature)) {
      throw fail(
        "feature",
        _("This GPU offers no {feature}, so the float16 kernels cannot run on it.", { feature: kp.feature }),
      );
    }
    checkLost(s);
    const run = await prepareRun(s, manifest, kp, { instrumented: false, data: { Q, K, V } });
    try {
      const device = s.device;
      const O = await scoped(device, _("running {kernel}", { kernel }), async () => {
        const enc = device.createCommandEncoder();
        enc.clearBuffer(run.bufs.O);
        device.queue.submit([enc.finish()]);
        device.queue.submit([encodeUnits(device, run, 0, run.units.length, 1, null).finish()]);
        return new Uint16Array(await readBuffer(device, run.bufs.O, kp.buffers.O));
      });
      checkLost(s);
      return { O, file: run.shaders[0], tiling: kp.tiling };
    } finally {
      destroyRun(run);
    }
  } catch (err) {
    throw asGpuError(err);
  }
}
