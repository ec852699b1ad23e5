// Time when the Direction is Backward: the WGSL backward kernels (../gpu/backward.js)
// on the visitor's GPU. Each kernel first runs once at N ≤ the backward check's limit
// on the worker's seeded inputs (Q, K, V, dO, and the float32 forward's O and L), and
// every kernel's dQ, dK, dV go back to Python together for the float64 check (lab_api
// "time_checks", as "check_backward_output" checks one); only kernels that pass are timed. GPU failures take time.js's one path.
import { _ } from "../i18n.js";
import { client } from "./client.js";
import { backwardQuickErrors, renderBackwardCount } from "./backward.js";
import { $, buttons, clearErrors, markShown, readForm, setBusy, showErrors, status, writeHash } from "./form.js";
import { fmt } from "./format.js";
import { gpu, renderGpuCard, showGpuFailure, timePrepare } from "./time.js";
import { renderBackwardTime } from "./time-backward-render.js";
import { distinctRuns } from "./time-stats.js";

let controller = null;

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
    // One request (lab_api "time") brings the count, the plan of every run (the build
    // without counters: the instrumented one's 9 storage buffers are asked for only by
    // test runs), the same runs planned at the check's N with its inputs, and the
    // roofline probes' plan; a limit this GPU offers too little of is named there.
    const prep = await timePrepare(p, g, probe, renderBackwardCount);
    if (!prep) return null;
    const { counts, plan } = prep;
    const s = counts.selected;
    const n = Number(s.n);
    const d = Number(s.d);
    const causal = Boolean(s.causal);
    // Each distinct run is timed once.
    const { timed: kernels, same } = distinctRuns(plan.kernels, plan.same_run);
    const checkN = prep.check_n;
    const data = prep.inputs;
    const outputs = {};
    for (const kernel of kernels) {
      status.textContent = _("Checking {kernel} on your GPU at N = {n} before timing it…", { kernel, n: fmt(checkN) });
      const run = await g.runBackward({ plan: prep.check_plan, kernel, data });
      outputs[kernel] = { dQ: Array.from(run.dQ), dK: Array.from(run.dK), dV: Array.from(run.dV) };
    }
    const rep = await client.request("time_checks", p, { outputs });
    const failed = rep.ok ? kernels.map((k) => rep.result[k].errors).find(Boolean) : rep.errors;
    if (failed) {
      showErrors(failed);
      return null;
    }
    const checks = rep.result;
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
    ).rooflineAfterTime({ g, probe, result, counts, direction: "backward", params: p, probePlan: prep.probe_plan });
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
