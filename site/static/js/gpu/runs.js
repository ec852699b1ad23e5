// Attention runs on the device: buffers, dispatches, read-back, and the timing loop, each
// as Python's plan gives it (planner/__init__.py, laid out by dispatches.js).
import { _ } from "../i18n.js";
import { asGpuError, fail } from "./errors.js";
import { loadManifest } from "./files.js";
import { checkLost, getDevice, scoped } from "./device.js";
import { getPipeline } from "./pipelines.js";
import { kernelPlan, planDispatches, runPlan } from "./dispatches.js";

export const RESOLUTION_MS = 0.1; // Chrome rounds GPU timestamps to 100 µs (and coarsens performance.now)
const TIMESTAMP_NOTE = _(
  "GPU timestamps (timestamp-query). Chrome rounds them to 100 µs, so each sample batches dispatches until it holds at least 10 ms of GPU work.",
);
const WALL_NOTE = _(
  "Wall-clock time from submit to onSubmittedWorkDone (this GPU offers no timestamp queries); each sample holds at least 10 ms of work.",
);
export const FLOP_CONVENTION = _(
  "FLOP counts 4·N²·d per head, forward pass: N²·d multiply-adds for QKᵀ and N²·d for PV, 2 FLOP each; softmax's exponentials are not counted. Causal counts half (N²/2 of the scores), though a tiled kernel computes the diagonal tiles in full.",
);

const USAGE_STORAGE = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

function makeStorage(device, bytes, label) {
  return device.createBuffer({ size: Math.max(16, Math.ceil(bytes / 4) * 4), usage: USAGE_STORAGE(), label });
}

/**
 * Every buffer of a kernel plan (kp.buffers: bytes), filled from `data` where it has the
 * tensor, and the bind groups of the plan's dispatches (planDispatches). Exported for
 * backward.js, which runs its passes the same way.
 */
export async function prepareRun(s, manifest, kp, { instrumented, chunks = 1, data }) {
  const device = s.device;
  return scoped(device, _("allocating buffers"), async () => {
    const bufs = {};
    for (const [name, bytes] of Object.entries(kp.buffers)) {
      bufs[name] = makeStorage(device, bytes, name);
      if (data[name]) device.queue.writeBuffer(bufs[name], 0, data[name]);
    }
    if (instrumented) bufs.counters = makeStorage(device, manifest.instrument.slots.length * 4, "counters");
    const units = planDispatches(kp, chunks);
    const encoded = [];
    const shaders = [];
    for (const u of units) {
      const { pipeline, spec, file } = await getPipeline(s, manifest, kp, u.passIndex, instrumented);
      if (!shaders.includes(file)) shaders.push(file);
      const params = device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(params, 0, new Uint32Array([kp.n, kp.causal ? 1 : 0, u.h0, u.xBase]));
      const entries = Object.entries(spec.bindings).map(([name, binding]) => ({
        binding,
        resource: { buffer: name === "params" ? params : bufs[name] },
      }));
      if (instrumented) entries.push({ binding: manifest.instrument.binding, resource: { buffer: bufs.counters } });
      const bindGroup = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
      encoded.push({ ...u, pipeline, bindGroup, params });
    }
    return { bufs, units: encoded, shaders };
  });
}

export function destroyRun(run) {
  for (const b of Object.values(run.bufs)) b.destroy();
  for (const u of run.units) u.params.destroy();
}

/** Encode `reps` runs of units[from, to) in one compute pass; optional timestamps. */
export function encodeUnits(device, run, from, to, reps, querySet) {
  const enc = device.createCommandEncoder();
  const desc = querySet ? { timestampWrites: { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } } : {};
  const pass = enc.beginComputePass(desc);
  for (let r = 0; r < reps; r++) {
    for (let i = from; i < to; i++) {
      const u = run.units[i];
      pass.setPipeline(u.pipeline);
      pass.setBindGroup(0, u.bindGroup);
      pass.dispatchWorkgroups(u.count, u.nh, 1);
    }
  }
  pass.end();
  return enc;
}

export async function readBuffer(device, src, bytes) {
  const staging = device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(src, 0, staging, 0, bytes);
  device.queue.submit([enc.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const copy = staging.getMappedRange().slice(0);
  staging.unmap();
  staging.destroy();
  return copy;
}

/** Instrument counters read back as {tensor: {read, write}} in bytes. */
export async function readCounts(device, manifest, run) {
  const raw = new Uint32Array(await readBuffer(device, run.bufs.counters, manifest.instrument.slots.length * 4));
  const counts = {};
  manifest.instrument.slots.forEach((slot, i) => {
    const [tensor, kind] = slot.split(".");
    counts[tensor] ??= { read: 0, write: 0 };
    counts[tensor][kind] += raw[i] * manifest.bytes_per_element;
  });
  return counts;
}

/**
 * Run one kernel once on Q, K, V (Float32Array, N·d each, row-major (N, d)), as `plan`
 * says: Python's gpu_plan answer for this kernel at this N, d, causal and M (and, with
 * `instrumented`, made for the instrumented build).
 * `chunks` > 1 splits every pass into that many dispatches along x (as timing does for
 * long runs), each with its own x_base; the result must not change.
 * Returns {O: Float32Array(N·d), counts?: {Q: {read, write}, ...} in bytes, tiling: the
 * plan's, shaders: [.wgsl files run]}. Throws GpuError.
 */
export async function runAttention({ plan, kernel, Q, K, V, instrumented = false, chunks = 1 }) {
  try {
    const manifest = await loadManifest();
    const kp = runPlan(plan, kernel, instrumented, { Q, K, V });
    const s = await getDevice(plan);
    const out = await runOnce(s, manifest, kp, { instrumented, chunks, data: { Q, K, V }, read: ["O"] });
    return { O: out.O, counts: out.counts, tiling: kp.tiling, kernel, shaders: out.shaders };
  } catch (err) {
    throw asGpuError(err);
  }
}

/**
 * Run a kernel plan once on a held device `s`: its buffers (filled from `data` where it
 * has the tensor, cleared otherwise), every dispatch in one submission, then each buffer
 * `read` names read back. The one run-once path of the forward (runAttention) and the
 * backward (backward.js runBackward) kernels. Returns {[name]: Float32Array for each of
 * `read`, counts?: {tensor: {read, write}} in bytes (instrumented), shaders: [.wgsl
 * files run]}. Throws what WebGPU throws (callers make it a GpuError).
 */
export async function runOnce(s, manifest, kp, { instrumented, chunks = 1, data, read }) {
  checkLost(s);
  const run = await prepareRun(s, manifest, kp, { instrumented, chunks, data });
  try {
    const device = s.device;
    const out = await scoped(device, _("running {kernel}", { kernel: kp.kernel }), async () => {
      const enc = device.createCommandEncoder();
      for (const [name, buf] of Object.entries(run.bufs)) if (!data[name]) enc.clearBuffer(buf);
      device.queue.submit([enc.finish()]);
      device.queue.submit([encodeUnits(device, run, 0, run.units.length, 1, null).finish()]);
      const arrays = {};
      for (const name of read)
        arrays[name] = new Float32Array(await readBuffer(device, run.bufs[name], kp.buffers[name]));
      if (instrumented) arrays.counts = await readCounts(device, manifest, run);
      return arrays;
    });
    checkLost(s);
    return { ...out, shaders: run.shaders };
  } finally {
    destroyRun(run);
  }
}

/**
 * Submit `reps` runs of run.units[from, to) in one compute pass and time it: the GPU's
 * timestamps where the device `s` has them (ms; NaN for a non-positive delta, which the
 * caller discards), else the wall clock from submit to onSubmittedWorkDone. The one
 * timed submission of timeKernels and backward.js timeBackward.
 */
export async function timeSubmission(s, run, from, to, reps, kernel) {
  const device = s.device;
  return scoped(device, _("timing {kernel}", { kernel }), async () => {
    let querySet = null;
    let resolve = null;
    if (s.timestamps) {
      querySet = device.createQuerySet({ type: "timestamp", count: 2 });
      resolve = device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
    }
    const enc = encodeUnits(device, run, from, to, reps, querySet);
    if (querySet) enc.resolveQuerySet(querySet, 0, 2, resolve, 0);
    const t0 = performance.now();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    const wall = performance.now() - t0;
    if (!querySet) return wall;
    const ticks = new BigUint64Array(await readBuffer(device, resolve, 16));
    querySet.destroy();
    resolve.destroy();
    if (ticks[1] <= ticks[0]) return NaN; // non-positive: discard
    return Number(ticks[1] - ticks[0]) / 1e6; // unsigned 64-bit nanoseconds
  });
}

/** `count` float32 values, xorshift32 from `seed`, uniform on [-1, 1): timing data only, never all zeros. */
export function randomFloats(count, seed) {
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

function throwIfCancelled(signal) {
  if (signal && signal.aborted) throw fail("cancelled", _("Time cancelled. Earlier results are kept."));
}

/**
 * Time one kernel: warm-up, then samples of `reps` runs each, until every sample
 * holds >= minSampleMs of GPU work and there are >= minSamples samples; median, and
 * every sample (sampleMs, sorted, ms per run) for the spread.
 * No submission holds more than about maxSubmitMs: long runs are split into chunks.
 */
async function timeOne(s, manifest, kp, job) {
  const { minSampleMs, minSamples, maxSubmitMs, onProgress, signal } = job;
  const kernel = kp.kernel;
  const data = {};
  ["Q", "K", "V"].forEach((name, i) => (data[name] = randomFloats(kp.buffers[name] / 4, 12345 + i)));
  const useTs = s.timestamps;

  const submitAndTime = (run, from, to, reps) => timeSubmission(s, run, from, to, reps, kernel);

  const base = { instrumented: false, data };
  // Warm-up and estimate with the whole run in one chunk per pass.
  let run = await prepareRun(s, manifest, kp, { ...base, chunks: 1 });
  const first = await submitAndTime(run, 0, run.units.length, 1);
  checkLost(s);
  let estimate = first;
  if (first < maxSubmitMs) {
    const again = await submitAndTime(run, 0, run.units.length, 1);
    if (again > 0) estimate = again;
  }
  if (!(estimate > 0)) estimate = RESOLUTION_MS;
  // Split long runs: each pass into enough dispatches that one holds < maxSubmitMs / 2.
  const chunks = Math.max(1, Math.ceil(estimate / (maxSubmitMs / 2)));
  if (chunks > 1) {
    destroyRun(run);
    run = await prepareRun(s, manifest, kp, { ...base, chunks });
  }
  try {
    const reps = Math.max(1, Math.ceil(minSampleMs / estimate));
    const repsPerSubmit = chunks > 1 ? 1 : Math.max(1, Math.min(reps, Math.floor(maxSubmitMs / estimate)));
    const samples = [];
    let below = false;
    let attempts = 0;
    while (samples.length < minSamples && attempts < minSamples * 3) {
      throwIfCancelled(signal);
      attempts++;
      let total = 0;
      let done = 0;
      while (done < reps && !Number.isNaN(total)) {
        const r = Math.min(repsPerSubmit, reps - done);
        if (chunks > 1) {
          for (let i = 0; i < run.units.length; i++) {
            const ms = await submitAndTime(run, i, i + 1, 1);
            if (!(ms > 0)) {
              total = NaN;
              break;
            }
            if (ms < RESOLUTION_MS) below = true;
            total += ms;
          }
        } else {
          const ms = await submitAndTime(run, 0, run.units.length, r);
          if (!(ms > 0)) total = NaN;
          else {
            if (ms < RESOLUTION_MS) below = true;
            total += ms;
          }
        }
        done += r;
        checkLost(s);
        throwIfCancelled(signal);
      }
      if (total > 0) samples.push(total / reps);
      if (onProgress) onProgress({ kernel, sample: samples.length, of: minSamples });
    }
    if (!samples.length) {
      throw fail(
        "internal",
        _("Timing {kernel} gave no usable sample: every timestamp delta was zero or negative.", { kernel }),
      );
    }
    const sorted = [...samples].sort((a, b) => a - b);
    const medianMs = sorted[Math.floor(sorted.length / 2)];
    return {
      medianMs,
      samples: samples.length,
      sampleMs: sorted,
      reps,
      submissionsPerSample: chunks > 1 ? run.units.length * reps : Math.ceil(reps / repsPerSubmit),
      method: useTs ? "timestamp" : "wall",
      belowResolution: below || medianMs * reps < RESOLUTION_MS,
      tiling: kp.tiling,
      shaders: run.shaders,
    };
  } finally {
    destroyRun(run);
  }
}

/**
 * Open (or keep) a device with the limits `plan` (Python's gpu_plan answer) asks for, so
 * that later runAttention and timeKernels calls with it, or with plans at a smaller N,
 * share it and its compiled pipelines. Throws GpuError.
 */
export async function openDevice(plan) {
  try {
    await getDevice(plan);
  } catch (err) {
    throw asGpuError(err);
  }
}

/**
 * Time `kernels` (default: every kernel of `plan`, Python's gpu_plan answer, in its
 * order) on random float32 inputs of the plan's sizes.
 * onProgress({kernel, index, of: kernels, sample, samples}) after each sample;
 * an aborted `signal` stops at the next sample with a "cancelled" GpuError.
 * Returns {kernels: {name: {medianMs, samples, sampleMs, reps, method,
 * belowResolution, tiling, shaders, flop, gflops}}, method, note, flopConvention, speedup}.
 * FLOP counts 4·N²·d per head, half that for causal (FLOP_CONVENTION). Throws GpuError.
 */
export async function timeKernels({
  plan,
  kernels = plan.kernels,
  minSampleMs = 10,
  minSamples = 7,
  maxSubmitMs = 1000,
  onProgress = null,
  signal = null,
}) {
  try {
    const manifest = await loadManifest();
    const plans = kernels.map((kernel) => kernelPlan(plan, kernel));
    const s = await getDevice(plan);
    const out = {};
    for (const [index, kp] of plans.entries()) {
      const kernel = kp.kernel;
      throwIfCancelled(signal);
      const progress = onProgress
        ? (p) => onProgress({ ...p, index: index + 1, kernels: kernels.length, samples: minSamples })
        : null;
      if (progress) progress({ kernel, sample: 0 });
      const r = await timeOne(s, manifest, kp, { minSampleMs, minSamples, maxSubmitMs, onProgress: progress, signal });
      const flop = 4 * kp.n * kp.n * kp.d * kp.heads * (kp.causal ? 0.5 : 1);
      r.flop = flop;
      r.gflops = flop / (r.medianMs / 1e3) / 1e9;
      out[kernel] = r;
    }
    return {
      kernels: out,
      method: s.timestamps ? "timestamp" : "wall",
      note: s.timestamps ? TIMESTAMP_NOTE : WALL_NOTE,
      flopConvention: FLOP_CONVENTION,
      speedup: out.plain && out.fused ? out.plain.medianMs / out.fused.medianMs : null,
      limits: { ...s.limits },
    };
  } catch (err) {
    throw asGpuError(err);
  }
}

/** One line for a timeKernels result, e.g. "plain 12.3 ms, fused 1.2 ms: 10.2× (GPU timestamps)". */
export function formatTiming(result) {
  const parts = [];
  for (const [name, r] of Object.entries(result.kernels || {})) {
    const ms = r.medianMs >= 1 ? r.medianMs.toFixed(2) : r.medianMs.toFixed(3);
    parts.push(`${name} ${ms} ms${r.belowResolution ? " (below timer resolution)" : ""}`);
  }
  const speed = result.speedup ? `: fused ${result.speedup.toFixed(1)}× as fast` : "";
  const how = result.method === "timestamp" ? "GPU timestamps, rounded to 100 µs by Chrome" : "wall clock";
  return `${parts.join(", ")}${speed} (${how}).`;
}
