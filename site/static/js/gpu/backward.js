// The WGSL backward kernels (kernels_wgsl/bwd_*.wgsl) on the visitor's GPU: every pass
// the manifest's "wgsl" list gives, in order, over one head, as Python's plan lays them
// out (planner/__init__.py: tiles, shaders, dispatches, buffers). The native host runs the
// same plan (cannery_host/wgpu_runner.py Runner.run_backward), so the bytes the counters read
// back are the emulator's.
//
// Buffers: Q, K, V, O, dO (N·d float32 each), L (N, the forward's logsumexp), D (N),
// dQ, dK, dV (N·d), and S, P, dP, dS (N·N) for a kernel whose passes bind them.
import { asGpuError, fail } from "./errors.js";
import { _ } from "../i18n.js";
import { loadManifest } from "./files.js";
import { checkLost, getDevice } from "./device.js";
import { kernelPlan, runPlan } from "./dispatches.js";
import { RESOLUTION_MS, destroyRun, prepareRun, randomFloats, runOnce, timeSubmission } from "./runs.js";

export const BACKWARD_FLOP_CONVENTION = _(
  "FLOP counts 2.5 × the forward's 4·N²·d per head, that is 10·N²·d, the convention of FlashAttention's own benchmarks (the backward does five N²·d matrix products to the forward's two); causal counts half.",
);

function asF32(x) {
  return x instanceof Float32Array ? x : new Float32Array(x);
}

/**
 * Run a backward kernel once, as `plan` (Python's gpu_plan answer for this kernel at
 * this N, d, causal and M; made for the instrumented build with `instrumented`) says.
 * data: {Q, K, V, O, dO: N·d floats row-major, L: N floats} (arrays or Float32Array;
 * L finite). Returns {dQ, dK, dV: Float32Array(N·d), counts?: {tensor: {read, write}}
 * in bytes (instrumented), tiling, shaders}. Throws GpuError.
 */
export async function runBackward({ plan, kernel, instrumented = false, data }) {
  try {
    const manifest = await loadManifest();
    if (manifest.kernels[kernel]?.direction !== "backward") throw fail("input", `${kernel} is not a backward kernel.`);
    const f32 = Object.fromEntries(["Q", "K", "V", "O", "dO", "L"].map((k) => [k, asF32(data[k])]));
    const kp = runPlan(plan, kernel, instrumented, f32);
    const s = await getDevice(plan);
    const out = await runOnce(s, manifest, kp, { instrumented, data: f32, read: ["dQ", "dK", "dV"] });
    return { ...out, tiling: kp.tiling };
  } catch (err) {
    throw asGpuError(err);
  }
}

/** A stand-in logsumexp for timing: ln(keys row i sees) + 1/2 (cannery_host/wgpu_runner.py timing_lse). */
function timingL(n, causal) {
  return Float32Array.from({ length: n }, (_, i) => Math.log(causal ? i + 1 : n) + 0.5);
}

/**
 * Time backward `kernels` (default: every kernel of `plan`, Python's gpu_plan answer) at
 * the plan's N and d, one head, on random inputs: a warm-up, then
 * samples of `reps` runs, each sample >= minSampleMs of GPU work, >= minSamples
 * samples, the median (GPU timestamps when the device has them, else wall clock).
 * Returns {kernels: {name: {medianMs, samples, sampleMs (every sample, ms per run,
 * sorted), reps, method, belowResolution, tiling,
 * shaders, flop, gflops}}, method, flopConvention}. Throws GpuError ("cancelled" on abort).
 */
export async function timeBackward({
  plan,
  kernels = plan.kernels,
  minSampleMs = 10,
  minSamples = 7,
  onProgress = null,
  signal = null,
}) {
  try {
    const manifest = await loadManifest();
    const s = await getDevice(plan);
    const out = {};
    for (const [index, kernel] of kernels.entries()) {
      const kp = kernelPlan(plan, kernel);
      const { n, d, causal } = kp;
      const data = {};
      ["Q", "K", "V", "O", "dO"].forEach((k, i) => (data[k] = randomFloats(n * d, 777 + i)));
      data.L = timingL(n, causal);
      const flop = 2.5 * 4 * n * n * d * (causal ? 0.5 : 1);
      const run = await prepareRun(s, manifest, kp, { instrumented: false, data });
      try {
        const sample = (reps) => timeSubmission(s, run, 0, run.units.length, reps, kernel);
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
          sampleMs: sorted,
          reps,
          method: s.timestamps ? "timestamp" : "wall",
          belowResolution: below || medianMs * reps < RESOLUTION_MS,
          tiling: kp.tiling,
          shaders: run.shaders,
          flop,
          gflops: flop / (medianMs / 1e3) / 1e9,
        };
      } finally {
        destroyRun(run);
      }
    }
    return { kernels: out, method: s.timestamps ? "timestamp" : "wall", flopConvention: BACKWARD_FLOP_CONVENTION };
  } catch (err) {
    throw asGpuError(err);
  }
}
