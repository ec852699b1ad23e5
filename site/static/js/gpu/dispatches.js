// Applies a plan Python made: planner/__init__.py gpu_plan, through the worker's "gpu_plan"
// op (or, in tests, CPython). A plan names, for each kernel, its tiles, the shader file,
// entry point, override constants and dispatch of every pass, the bytes of every buffer
// and the heads of S and P one buffer holds; and, for the device, the limits to ask for.
// Nothing here derives a tile, a size or a limit: it only reads those numbers and lays
// out the dispatches they give.
//
// Pure: no DOM and no WebGPU globals.

import { fail } from "./errors.js";
import { _ } from "../i18n.js";

/**
 * The plan of `kernel` inside a device plan ({plans: {kernel: plan}, ...}). Throws an
 * "input" GpuError when the plan has none for it (a plan is made for a list of kernels).
 */
export function kernelPlan(plan, kernel) {
  const kp = plan && plan.plans && plan.plans[kernel];
  if (!kp) throw fail("input", _("No GPU plan was made for {kernel}.", { kernel }));
  return kp;
}

/**
 * The plan of one run, checked against what the run gives: `kernel` in `plan`, and,
 * for an instrumented run, a plan made for the instrumented build (it binds one more
 * storage buffer). `arrays` ({name: Float32Array}) must hold the plan's buffer bytes.
 * Throws an "input" GpuError.
 */
export function runPlan(plan, kernel, instrumented, arrays = {}) {
  const kp = kernelPlan(plan, kernel);
  if (instrumented && !kp.instrumented) {
    throw fail("input", _("The plan for {kernel} was made for the build without counters.", { kernel }));
  }
  for (const [name, arr] of Object.entries(arrays)) {
    const bytes = kp.buffers[name];
    if (bytes === undefined) continue;
    if (!(arr instanceof Float32Array) || arr.byteLength !== bytes) {
      throw fail(
        "input",
        _("{name} must be a Float32Array of {count} numbers, as the plan sizes it.", {
          name,
          count: String(bytes / Float32Array.BYTES_PER_ELEMENT),
        }),
      );
    }
  }
  return kp;
}

/**
 * The dispatches of a planned run, in order; each unit is {passIndex, h0, nh, xBase,
 * count}: heads [h0, h0 + nh) of the plan's head batches, and workgroups [xBase, xBase +
 * count) of the pass's planned x. `chunks` splits every pass into that many dispatches
 * along x (each with its own x_base), so no submission holds more than about 1 s of work.
 */
export function planDispatches(kp, chunks = 1) {
  const units = [];
  for (let h0 = 0; h0 < kp.heads; h0 += kp.head_batch) {
    const nh = Math.min(kp.head_batch, kp.heads - h0);
    kp.passes.forEach((pass, passIndex) => {
      const total = pass.dispatch[0];
      const per = Math.ceil(total / chunks);
      for (let xBase = 0; xBase < total; xBase += per) {
        units.push({ passIndex, h0, nh, xBase, count: Math.min(per, total - xBase) });
      }
    });
  }
  return units;
}
