// Time when the Direction is Backward: the WGSL backward kernels (../gpu/backward.js)
// on the visitor's GPU. Each kernel first runs once at N ≤ the backward check's limit
// on the worker's seeded inputs (Q, K, V, dO, and the float32 forward's O and L), and
// its dQ, dK, dV go back to Python for the float64 check (api "check_backward_output");
// only kernels that pass are timed. GPU failures take time.js's one path.
import { _ } from "../i18n.js";
import { client } from "./client.js";
import { backwardQuickErrors, renderBackwardCount } from "./backward.js";
import { backwardCheckMaxN } from "./direction.js";
import { $, buttons, clearErrors, markShown, readForm, setBusy, showErrors, status, writeHash } from "./form.js";
import { fmt } from "./format.js";
import { resultOf } from "./reply.js";
import { gpu, renderGpuCard, showGpuFailure } from "./time.js";
import { renderBackwardTime } from "./time-backward-render.js";
import { distinctRuns } from "./time-stats.js";

let controller = null;

/**
 * The kernels Time runs: the chosen one and the plain and fused backward kernels the
 * count compares it with (their names come with the count's reply), plain first.
 */
function kernelsFor(counts) {
  const pair = [counts.plain.kernel, counts.fused.kernel];
  const kernel = counts.selected.kernel;
  return pair.includes(kernel) ? pair : [...pair, kernel];
}

export async function doBackwardTime() {
  clearErrors();
  $("time-retry").hidden = true;
  const p = readForm();
  const quick = backwardQuickErrors(p, "count");
  if (quick.length) {
    showErrors(quick);
    return null;
  }
  setBusy(true, "time");
  controller = new AbortController();
  const signal = controller.signal;
  try {
    status.textContent = _("Looking for a WebGPU adapter…");
    const g = await gpu();
    const probe = await g.probeGpu();
    if (!probe.ok) {
      showGpuFailure(probe.error || { kind: "no-adapter", message: probe.reason });
      return null;
    }
    renderGpuCard(probe);
    const counts = resultOf(await client.request("count", p), showErrors);
    if (!counts) return null;
    renderBackwardCount(counts);
    markShown("count-result", p);
    const s = counts.selected;
    const n = Number(s.n);
    const d = Number(s.d);
    const causal = Boolean(s.causal);
    // The emulator plans every run (planner/__init__.py) and names the limit this GPU
    // offers too little of (the build without counters: the instrumented one's 9 storage
    // buffers are asked for only by test runs). Each distinct run is timed once.
    const planned = kernelsFor(counts);
    const gpuParams = {
      limits: probe.limits,
      subgroup_min_size: g.subgroupMinOf(probe),
      instrumented: false,
      kernels: planned,
    };
    const plan = resultOf(await client.request("gpu_plan", p, gpuParams), showErrors);
    if (!plan) return null;
    const { timed: kernels, same } = distinctRuns(planned, plan.same_run);
    const checkN = Math.min(n, backwardCheckMaxN);
    const checkPlan = resultOf(await client.request("gpu_plan", { ...p, n: String(checkN) }, gpuParams), showErrors);
    if (!checkPlan) return null;
    const data = resultOf(
      await client.request("backward_inputs", { ...p, kernel: s.kernel, n: String(checkN) }),
      showErrors,
    );
    if (!data) return null;
    const checks = {};
    for (const kernel of kernels) {
      status.textContent = _("Checking {kernel} on your GPU at N = {n} before timing it…", { kernel, n: fmt(checkN) });
      const run = await g.runBackward({ plan: checkPlan, kernel, data });
      const rep = await client.request(
        "check_backward_output",
        { ...p, kernel, n: String(checkN) },
        { outputs: { dQ: Array.from(run.dQ), dK: Array.from(run.dK), dV: Array.from(run.dV) } },
      );
      if (!rep.ok) {
        showErrors(rep.errors);
        return null;
      }
      checks[kernel] = rep.result;
    }
    const passed = kernels.filter((k) => checks[k].passed);
    status.textContent = _("Timing the backward kernels on your GPU…");
    const result = passed.length
      ? await g.timeBackward({
          plan,
          kernels: passed,
          signal,
          onProgress: ({ kernel, sample, samples }) => {
            status.textContent = _("Timing {kernel} on your GPU: sample {sample} of {samples}…", {
              kernel,
              sample: String(sample),
              samples: String(samples),
            });
          },
        })
      : { kernels: {}, flopConvention: g.BACKWARD_FLOP_CONVENTION };
    writeHash(p);
    renderBackwardTime(result, counts, { n, d, causal, checks, checkN, kernels, same, probe });
    markShown("time-result", p);
    await (
      await import("./roofline.js")
    ).rooflineAfterTime({ g, probe, result, counts, direction: "backward", params: p });
    return result;
  } catch (err) {
    showGpuFailure(err);
    return null;
  } finally {
    controller = null;
    setBusy(false);
  }
}

/** Stop a backward Time at its next sample; results already shown stay. */
export function cancelBackwardTime() {
  if (controller) controller.abort();
  buttons.time.focus();
}
