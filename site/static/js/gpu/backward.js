// The WGSL backward kernels (kernels_wgsl/bwd_*.wgsl) on the visitor's GPU: every pass
// the manifest's "wgsl" list gives, in order, over one head. The native host does the
// same (cannery_host/wgsl.py Runner.run_backward); the tiles are the lesson rule
// (plan.js lessonTiling), so the bytes the counters read back are the emulator's.
//
// Buffers: Q, K, V, O, dO (N·d float32 each), L (N, the forward's logsumexp), D (N),
// dQ, dK, dV (N·d), and S, P, dP, dS (N·N) for a kernel whose passes bind them.
import { asGpuError, fail } from "./errors.js";
import { _, num } from "../i18n.js";
import { loadManifest } from "./files.js";
import { checkLost, currentState, getAdapter, getDevice, scoped } from "./device.js";
import { getPipeline } from "./pipelines.js";
import { BYTES, lessonTiling, webgpuDefaults } from "./plan.js";
import { encodeUnits, readBuffer } from "./runs.js";

const RESOLUTION_MS = 0.1; // as runs.js: Chrome rounds GPU timestamps to 100 µs
export const BACKWARD_FLOP_CONVENTION = _(
  "FLOP counts 2.5 × the forward's 4·N²·d per head, that is 10·N²·d, the convention of FlashAttention's own benchmarks (the backward does five N²·d matrix products to the forward's two); causal counts half.",
);

const SQUARE = ["S", "P", "dP", "dS"];

/**
 * Bytes of one N·N table (S, P, dP, dS) for one head, rounded up to a whole number of vec4s:
 * the tuned elementwise passes (bwd_fast_softmax.wgsl, bwd_fast_ds.wgsl) view a table as
 * array<vec4<f32>>, and read its last entries through a component of the last vec4
 * (cannery_host/wgsl.py rounds the same way).
 */
function tableBytes(n) {
  return Math.ceil((n * n * BYTES) / 16) * 16;
}

/** Workgroups along x for a pass's manifest "grid" (emulator/shaders.py dispatch_size). */
export function gridSize(grid, n, tiling) {
  if (grid === "query_tiles") return Math.ceil(n / tiling.blockRows);
  if (grid === "key_tiles") return Math.ceil(n / tiling.blockCols);
  if (grid === "rows") return n;
  throw fail("internal", `Unknown grid “${grid}” in the manifest.`);
}

/**
 * The limits a backward run asks for: {name: value}, read from the manifest's
 * passes (storage buffers bound, the instrumented build's counters included; the
 * N·N tables; workgroup memory and size). Throws a "limits" GpuError naming the
 * limit when the adapter offers less.
 */
export function backwardLimits(manifest, kernel, n, d, workgroupBytes, instrumented, offered) {
  const tiling = lessonTiling(manifest, kernel, d, workgroupBytes);
  const passes = manifest.kernels[kernel].wgsl;
  const storage = Math.max(
    ...passes.map((p) => Object.keys(p.bindings).filter((b) => b !== "params").length + (instrumented ? 1 : 0)),
  );
  const square = passes.some((p) => SQUARE.some((t) => t in p.bindings)) ? tableBytes(n) : 0;
  const invocations = Math.max(...passes.map((p) => (p.constants || {}).WG || tiling.blockRows));
  const needs = {
    maxStorageBuffersPerShaderStage: storage,
    maxComputeWorkgroupStorageSize: tiling.workgroupBytes,
    maxComputeInvocationsPerWorkgroup: invocations,
    maxComputeWorkgroupSizeX: invocations,
    maxStorageBufferBindingSize: Math.max(square, n * d * BYTES),
    maxBufferSize: Math.max(square, n * d * BYTES),
  };
  for (const [name, need] of Object.entries(needs)) {
    if (offered && need > Number(offered[name])) {
      const values = {
        limit: name,
        need: num(need),
        offer: num(Number(offered[name])),
        kernel,
        n: num(n),
        d: String(d),
      };
      let message;
      if (name !== "maxStorageBuffersPerShaderStage") {
        message = _(
          "This run needs {limit} = {need} ({kernel} at N = {n}, d = {d} needs it), but this GPU offers {offer}.",
          values,
        );
      } else if (instrumented) {
        message = _(
          "This run needs {limit} = {need} ({kernel}'s passes bind {need} storage buffers, the instrumented build's counters included), but this GPU offers {offer}.",
          values,
        );
      } else {
        message = _(
          "This run needs {limit} = {need} ({kernel}'s passes bind {need} storage buffers), but this GPU offers {offer}.",
          values,
        );
      }
      throw fail("limits", message);
    }
  }
  return { needs, tiling };
}

async function backwardDevice(manifest, kernels, n, d, workgroupBytes, instrumented) {
  const held = currentState();
  const adapter = held ? held.adapter : await getAdapter();
  const defaults = webgpuDefaults(manifest);
  const limits = {};
  for (const kernel of kernels) {
    const { needs } = backwardLimits(manifest, kernel, n, d, workgroupBytes, instrumented, adapter.limits);
    for (const [name, v] of Object.entries(needs)) limits[name] = Math.max(limits[name] || 0, v, defaults[name] || 0);
  }
  return getDevice(manifest, { limits });
}

function storage(device, bytes, label) {
  return device.createBuffer({
    size: Math.max(16, Math.ceil(bytes / 4) * 4),
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    label,
  });
}

async function prepare(s, manifest, { kernel, n, d, causal, tiling, instrumented, data }) {
  const device = s.device;
  return scoped(device, "allocating backward buffers", async () => {
    const bufs = {};
    for (const name of ["Q", "K", "V", "O", "dO"]) {
      bufs[name] = storage(device, n * d * BYTES, name);
      device.queue.writeBuffer(bufs[name], 0, data[name]);
    }
    bufs.L = storage(device, n * BYTES, "L");
    device.queue.writeBuffer(bufs.L, 0, data.L);
    bufs.D = storage(device, n * BYTES, "D");
    for (const name of ["dQ", "dK", "dV"]) bufs[name] = storage(device, n * d * BYTES, name);
    const passes = manifest.kernels[kernel].wgsl;
    for (const name of SQUARE) {
      if (passes.some((p) => name in p.bindings)) bufs[name] = storage(device, tableBytes(n), name);
    }
    if (instrumented) bufs.counters = storage(device, manifest.instrument.slots.length * 4, "counters");
    const params = device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    device.queue.writeBuffer(params, 0, new Uint32Array([n, causal ? 1 : 0, 0, 0]));
    const units = [];
    const shaders = [];
    for (const [passIndex, spec] of passes.entries()) {
      const { pipeline, file } = await getPipeline(s, manifest, kernel, passIndex, d, tiling, instrumented);
      if (!shaders.includes(file)) shaders.push(file);
      const entries = Object.entries(spec.bindings).map(([name, binding]) => ({
        binding,
        resource: { buffer: name === "params" ? params : bufs[name] },
      }));
      if (instrumented) entries.push({ binding: manifest.instrument.binding, resource: { buffer: bufs.counters } });
      const bindGroup = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
      units.push({ pass: spec.pass, pipeline, bindGroup, count: gridSize(spec.grid, n, tiling), nh: 1, params });
    }
    return { bufs, units, shaders, params };
  });
}

function destroy(run) {
  for (const b of Object.values(run.bufs)) b.destroy();
  run.params.destroy();
}

function asF32(x) {
  return x instanceof Float32Array ? x : new Float32Array(x);
}

/**
 * Run a backward kernel once. data: {Q, K, V, O, dO: N·d floats row-major, L: N floats}
 * (arrays or Float32Array; L finite). Returns {dQ, dK, dV: Float32Array(N·d),
 * counts?: {tensor: {read, write}} in bytes (instrumented), tiling, shaders}. Throws GpuError.
 */
export async function runBackward({
  kernel,
  n,
  d,
  causal = false,
  workgroupBytes = 16384,
  instrumented = false,
  data,
}) {
  try {
    const manifest = await loadManifest();
    if (manifest.kernels[kernel]?.direction !== "backward") throw fail("input", `${kernel} is not a backward kernel.`);
    const s = await backwardDevice(manifest, [kernel], n, d, workgroupBytes, instrumented);
    const tiling = lessonTiling(manifest, kernel, d, workgroupBytes);
    const f32 = Object.fromEntries(["Q", "K", "V", "O", "dO", "L"].map((k) => [k, asF32(data[k])]));
    const run = await prepare(s, manifest, { kernel, n, d, causal, tiling, instrumented, data: f32 });
    try {
      await scoped(s.device, _("running {kernel}", { kernel }), async () => {
        s.device.queue.submit([encodeUnits(s.device, run, 0, run.units.length, 1, null).finish()]);
        await s.device.queue.onSubmittedWorkDone();
      });
      checkLost(s);
      const out = { tiling, shaders: run.shaders };
      for (const name of ["dQ", "dK", "dV"]) {
        out[name] = new Float32Array(await readBuffer(s.device, run.bufs[name], n * d * BYTES));
      }
      if (instrumented) {
        const raw = new Uint32Array(
          await readBuffer(s.device, run.bufs.counters, manifest.instrument.slots.length * 4),
        );
        const counts = {};
        manifest.instrument.slots.forEach((slot, i) => {
          const [tensor, kind] = slot.split(".");
          counts[tensor] = counts[tensor] || { read: 0, write: 0 };
          counts[tensor][kind] += raw[i] * manifest.bytes_per_element;
        });
        out.counts = counts;
      }
      return out;
    } finally {
      destroy(run);
    }
  } catch (err) {
    throw asGpuError(err);
  }
}

function randomFloats(count, seed) {
  // xorshift32 on [-1, 1), as runs.js: timing data only.
  const out = new Float32Array(count);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < count; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = ((x >>> 0) / 4294967296) * 2 - 1;
  }
  return out;
}

/** A stand-in logsumexp for timing: ln(keys row i sees) + 1/2 (cannery_host/wgsl.py timing_lse). */
function timingL(n, causal) {
  return Float32Array.from({ length: n }, (_, i) => Math.log(causal ? i + 1 : n) + 0.5);
}

/**
 * Time backward `kernels` at (N, d), one head, on random inputs: a warm-up, then
 * samples of `reps` runs, each sample >= minSampleMs of GPU work, >= minSamples
 * samples, the median (GPU timestamps when the device has them, else wall clock).
 * Returns {kernels: {name: {medianMs, samples, reps, method, belowResolution, tiling,
 * shaders, flop, gflops}}, method, flopConvention}. Throws GpuError ("cancelled" on abort).
 */
export async function timeBackward({
  kernels,
  n,
  d,
  causal = false,
  workgroupBytes = 16384,
  minSampleMs = 10,
  minSamples = 5,
  onProgress = null,
  signal = null,
}) {
  try {
    const manifest = await loadManifest();
    const s = await backwardDevice(manifest, kernels, n, d, workgroupBytes, false);
    const device = s.device;
    const data = {};
    ["Q", "K", "V", "O", "dO"].forEach((k, i) => (data[k] = randomFloats(n * d, 777 + i)));
    data.L = timingL(n, causal);
    const flop = 2.5 * 4 * n * n * d * (causal ? 0.5 : 1);
    const out = {};
    for (const [index, kernel] of kernels.entries()) {
      const tiling = lessonTiling(manifest, kernel, d, workgroupBytes);
      const run = await prepare(s, manifest, { kernel, n, d, causal, tiling, instrumented: false, data });
      try {
        const sample = async (reps) =>
          scoped(device, _("timing {kernel}", { kernel }), async () => {
            let qs = null;
            let resolve = null;
            if (s.timestamps) {
              qs = device.createQuerySet({ type: "timestamp", count: 2 });
              resolve = device.createBuffer({
                size: 16,
                usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC,
              });
            }
            const enc = encodeUnits(device, run, 0, run.units.length, reps, qs);
            if (qs) enc.resolveQuerySet(qs, 0, 2, resolve, 0);
            const t0 = performance.now();
            device.queue.submit([enc.finish()]);
            await device.queue.onSubmittedWorkDone();
            const wall = performance.now() - t0;
            if (!qs) return wall;
            const ticks = new BigUint64Array(await readBuffer(device, resolve, 16));
            qs.destroy();
            resolve.destroy();
            return ticks[1] > ticks[0] ? Number(ticks[1] - ticks[0]) / 1e6 : NaN;
          });
        await sample(1); // warm-up
        checkLost(s);
        let estimate = await sample(1);
        if (!(estimate > 0)) estimate = RESOLUTION_MS;
        const reps = Math.max(1, Math.ceil(minSampleMs / estimate));
        const samples = [];
        let below = false;
        for (let attempt = 0; samples.length < minSamples && attempt < minSamples * 3; attempt++) {
          if (signal && signal.aborted) throw fail("cancelled", _("Time cancelled. Earlier results are kept."));
          const ms = await sample(reps);
          checkLost(s);
          if (ms > 0) {
            if (ms < RESOLUTION_MS) below = true;
            samples.push(ms / reps);
          }
          if (onProgress)
            onProgress({
              kernel,
              index: index + 1,
              kernels: kernels.length,
              sample: samples.length,
              samples: minSamples,
            });
        }
        if (!samples.length) throw fail("internal", _("Timing {kernel} gave no usable sample.", { kernel }));
        const sorted = [...samples].sort((a, b) => a - b);
        const medianMs = sorted[Math.floor(sorted.length / 2)];
        out[kernel] = {
          medianMs,
          samples: samples.length,
          reps,
          method: s.timestamps ? "timestamp" : "wall",
          belowResolution: below || medianMs * reps < RESOLUTION_MS,
          tiling,
          shaders: run.shaders,
          flop,
          gflops: flop / (medianMs / 1e3) / 1e9,
        };
      } finally {
        destroy(run);
      }
    }
    return { kernels: out, method: s.timestamps ? "timestamp" : "wall", flopConvention: BACKWARD_FLOP_CONVENTION };
  } catch (err) {
    throw asGpuError(err);
  }
}
