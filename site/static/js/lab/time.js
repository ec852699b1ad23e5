// Time: the WGSL kernels on the visitor's GPU (../gpu/), each checked against
// float64 first. The GPU code turns every WebGPU failure into one GpuError
// {kind, message}; showGpuFailure is this file's one path for all of them, and
// Count and Check never depend on the GPU.
//
// The card is drawn by time-render.js (forward) and time-backward.js; both take
// their figures from time-stats.js; the roofline (roofline.js, loaded when Time is
// pressed) draws from the same run.
import { _ } from "../i18n.js";
import { client } from "./client.js";
import { renderCount } from "./count.js";
import { $, alertBox, clearErrors, markShown, readForm, setBusy, showErrors, status, writeHash } from "./form.js";
import { fmt } from "./format.js";
import { html, setHtml } from "./html.js";
import { resultOf } from "./reply.js";
import { renderTime } from "./time-render.js";
import { distinctRuns } from "./time-stats.js";

let gpuModule = null;
let lastGpuFailure = null;

export async function gpu() {
  if (!gpuModule) {
    try {
      gpuModule = await import("../gpu/index.js");
    } catch (err) {
      throw { kind: "fetch", message: _("The page could not load its WebGPU code ({error}).", { error: err.message }) };
    }
  }
  return gpuModule;
}

// Failures after which a fresh device may well work.
const RETRYABLE = new Set(["device-lost", "out-of-memory", "validation", "internal", "fetch"]);

export function renderGpuCard(probe) {
  const info = probe.adapterInfo || {};
  const lim = probe.limits || {};
  const feat = probe.features || {};
  const yes = (b) => (b ? _("yes") : _("no"));
  const name = [info.vendor, info.architecture].filter(Boolean).join(", ") || _("not reported");
  const sizes =
    info.subgroupMinSize === info.subgroupMaxSize
      ? `${info.subgroupMinSize}`
      : `${info.subgroupMinSize}–${info.subgroupMaxSize}`;
  // Words outside the html`` literals, where Babel's extractor finds them.
  const w = {
    title: _("Your GPU"),
    adapter: _("Adapter"),
    description: _("Description"),
    workgroup: _("Workgroup memory"),
    buffer: _("Largest storage buffer"),
    invocations: _("Invocations per workgroup"),
    timestamps: _("Timestamp queries"),
    subgroups: _("Subgroups"),
    f16: _("16-bit floats (f16)"),
    subgroupSizes:
      feat.subgroups && info.subgroupMinSize ? _("yes ({sizes} invocations)", { sizes }) : yes(feat.subgroups),
  };
  setHtml(
    $("gpu-card"),
    html`<div class="gpu-card"><h4>${w.title}</h4><dl>
    <dt>${w.adapter}</dt><dd>${name}</dd>
    ${info.description ? html`<dt>${w.description}</dt><dd>${info.description}</dd>` : ""}
    <dt>${w.workgroup}</dt><dd>${fmt(lim.maxComputeWorkgroupStorageSize || 0)} B</dd>
    <dt>${w.buffer}</dt><dd>${fmt(lim.maxStorageBufferBindingSize || 0)} B</dd>
    <dt>${w.invocations}</dt><dd>${fmt(lim.maxComputeInvocationsPerWorkgroup || 0)}</dd>
    <dt>${w.timestamps}</dt><dd>${yes(feat.timestamp)}</dd>
    <dt>${w.subgroups}</dt><dd>${w.subgroupSizes}</dd>
    <dt>${w.f16}</dt><dd>${yes(feat.f16)}</dd></dl></div>`,
  );
}

/** The one place a GPU failure becomes words: #lab-alert (role=alert) and a Retry button. */
export function showGpuFailure(err) {
  const kind = (err && err.kind) || "internal";
  let message = (err && err.message) || String(err);
  if (kind === "shader")
    message = _("Your browser could not compile one of the WGSL kernels: {error}.", { error: message });
  const still = _("Count and Check still work: they run in Python, not on the GPU.");
  if (!message.includes(still.split(":")[0])) message += " " + still;
  lastGpuFailure = kind;
  if (kind === "no-webgpu" || kind === "no-adapter")
    import("./roofline.js").then((m) => m.showMeasuredInstead(readForm())).catch(() => {});
  alertBox.dataset.kind = kind;
  alertBox.textContent = message;
  $("time-retry").hidden = !RETRYABLE.has(kind);
  status.textContent = _("Time did not run.");
}

let controller = null;

/** Stop Time after the sample it is on; the results shown before stay. */
export function cancelTime() {
  if (controller) controller.abort();
  status.textContent = _("Cancelling Time after this step…");
}

function stopIfCancelled() {
  if (controller && controller.signal.aborted) throw { kind: "cancelled", message: _("Time cancelled.") };
}

/**
 * Ask Python for all that Time needs before the GPU runs (lab_api op "time", for the
 * direction the form names), with this adapter's limits. Returns its result, or null
 * once its errors are shown; a count made before a refusal is shown above it, as
 * Count would show it. Stops (as cancelled) if Cancel was pressed meanwhile.
 */
export async function timePrepare(p, g, probe, renderCounts = renderCount) {
  const reply = await client.request("time", p, { limits: probe.limits, subgroup_min_size: g.subgroupMinOf(probe) });
  stopIfCancelled();
  const counts = reply.ok ? reply.result.counts : reply.done && reply.done.counts;
  if (counts) {
    renderCounts(counts);
    markShown("count-result", p);
  }
  return resultOf(reply, showErrors);
}

export async function doTime() {
  clearErrors();
  $("time-retry").hidden = true;
  const p = readForm();
  controller = new AbortController();
  const signal = controller.signal;
  setBusy(true, "time");
  try {
    status.textContent = _("Looking for a WebGPU adapter…");
    const g = await gpu();
    if (lastGpuFailure && RETRYABLE.has(lastGpuFailure)) g.resetDevice();
    lastGpuFailure = null;
    const probe = await g.probeGpu();
    if (!probe.ok) {
      showGpuFailure(probe.error || { kind: "no-adapter", message: probe.reason });
      return;
    }
    renderGpuCard(probe);
    stopIfCancelled();
    // One request (lab_api "time") brings all that Time needs from Python: the count;
    // the plan of every run (planner/__init__.py: whether this size fits this GPU, each
    // kernel's tiles, shaders and dispatches, the limits to ask for) of the lesson's
    // kernels plus the tuned fused kernels that fit this GPU's workgroup memory
    // ("optional": the others come back in left_out); the same runs planned at the
    // check's N, with its inputs; and the roofline probes' plan.
    const prep = await timePrepare(p, g, probe);
    if (!prep) return;
    const { plan, counts } = prep;
    const s = counts.selected;
    const n = Number(s.n);
    const d = Number(s.d);
    const causal = Boolean(s.causal);
    const workgroupBytes = Number(s.workgroup_bytes);
    // Each distinct run once: a tuned kernel the plan says runs the lesson kernel's
    // shaders at its tiles and constants (plan.same_run) is timed in that row.
    const { timed: kernels, same } = distinctRuns(["plain", "fused", ...plan.optional], plan.same_run);
    // a limit the probe leaves out is WebGPU's default, from the manifest the build copies
    const defaults = (await g.loadManifest()).webgpu_default_limits;
    const wgLimit = Number(
      (probe.limits || {}).maxComputeWorkgroupStorageSize || defaults.maxComputeWorkgroupStorageSize,
    );
    const leftOut = plan.left_out.map((k) => ({ name: k.kernel, need: k.need }));
    // Check before timing: every kernel's output at a small ragged size goes
    // back to Python (one request for them all, lab_api "time_checks") and through
    // the float64 checker, so a wrong kernel can never report a speed-up unnoticed.
    // One device for the checks and the timing.
    await g.openDevice(plan);
    const checkN = prep.check_n;
    const data = prep.inputs;
    const inputs = { Q: Float32Array.from(data.Q), K: Float32Array.from(data.K), V: Float32Array.from(data.V) };
    const outputs = {};
    for (const [i, kernel] of kernels.entries()) {
      status.textContent = _("Checking on your GPU before timing: kernel {i} of {k} ({kernel}), N = {n}…", {
        i: String(i + 1),
        k: String(kernels.length),
        kernel,
        n: fmt(checkN),
      });
      const run = await g.runAttention({ plan: prep.check_plan, kernel, ...inputs });
      stopIfCancelled();
      outputs[kernel] = Array.from(run.O);
    }
    const rep = await client.request("time_checks", p, { outputs });
    stopIfCancelled();
    const checks = {};
    for (const kernel of kernels) {
      const one = rep.ok ? rep.result[kernel] : { errors: rep.errors };
      checks[kernel] = one.errors ? { passed: false, max_abs_error: NaN, error: one.errors[0].message } : one;
    }
    const result = await g.timeKernels({
      plan,
      kernels,
      signal,
      onProgress: ({ kernel, index, kernels: of, sample, samples }) => {
        status.textContent = _("Timing on your GPU: kernel {i} of {k} ({kernel}), sample {sample} of {samples}…", {
          i: String(index),
          k: String(of),
          kernel,
          sample: String(Math.min(sample + 1, samples)),
          samples: String(samples),
        });
      },
    });
    writeHash(p);
    renderTime(result, counts, { n, d, causal, workgroupBytes, checks, checkN, leftOut, wgLimit, probe, same });
    markShown("time-result", p);
    await (
      await import("./roofline.js")
    ).rooflineAfterTime({ g, probe, result, counts, direction: "forward", params: p, probePlan: prep.probe_plan });
  } catch (err) {
    if (err && err.kind === "cancelled") {
      status.textContent = _("Time cancelled. Earlier results are kept.");
    } else {
      showGpuFailure(err);
    }
  } finally {
    controller = null;
    setBusy(false);
  }
}
