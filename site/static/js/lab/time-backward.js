// Time when the Direction is Backward: the WGSL backward kernels (../gpu/backward.js)
// on the visitor's GPU. Each kernel first runs once at N ≤ the backward check's limit
// on the worker's seeded inputs (Q, K, V, dO, and the float32 forward's O and L), and
// its dQ, dK, dV go back to Python for the float64 check (api "check_backward_output");
// only kernels that pass are timed. GPU failures take time.js's one path.
import { _, pgettext } from "../i18n.js";
import { client } from "./client.js";
import { gradientTable, backwardQuickErrors, renderBackwardCount } from "./backward.js";
import { backwardCheckMaxN } from "./direction.js";
import { $, buttons, clearErrors, markShown, readForm, setBusy, showErrors, status, writeHash } from "./form.js";
import { fixed, fmt, msText, rate } from "./format.js";
import { html, setHtml } from "./html.js";
import { resultOf } from "./reply.js";
import { gpu, renderGpuCard, showGpuFailure } from "./time.js";

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
    const kernels = kernelsFor(counts);
    // The emulator plans every run (emulator/plan.py) and names the limit this GPU
    // offers too little of (the build without counters: the instrumented one's 9 storage
    // buffers are asked for only by test runs).
    const gpuParams = { limits: probe.limits, subgroup_min_size: g.subgroupMinOf(probe), instrumented: false, kernels };
    const plan = resultOf(await client.request("gpu_plan", p, gpuParams), showErrors);
    if (!plan) return null;
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
    renderBackwardTime(result, counts, { n, d, causal, checks, checkN, kernels });
    markShown("time-result", p);
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

function renderBackwardTime(result, counts, { n, d, causal, checks, checkN, kernels }) {
  const plainName = counts.plain.kernel;
  const fusedName = counts.fused.kernel;
  const traffic = {
    [plainName]: counts.plain,
    [fusedName]: counts.fused,
    [counts.selected.kernel]: counts.selected,
  };
  const timed = result.kernels || {};
  const plain = timed[plainName];
  // Words outside the html`` literals, where Babel's extractor finds them.
  const setup = { n: fmt(n), d: String(d), check_n: fmt(checkN) };
  const w = {
    passed: pgettext("check verdict", "passed"),
    failed: pgettext("check verdict", "failed"),
    notTimed: _("not timed: its gradients failed the float64 check"),
    low: " " + _("(below the timer's resolution)"),
    setup: causal
      ? _(
          "Backward pass, N = {n}, d = {d}, causal, one head, float32, median of the samples. Before timing, each kernel ran once at N = {check_n} on the same seeded inputs as Check (O and L from the float32 forward), and its dQ, dK and dV went through the float64 check.",
          setup,
        )
      : _(
          "Backward pass, N = {n}, d = {d}, one head, float32, median of the samples. Before timing, each kernel ran once at N = {check_n} on the same seeded inputs as Check (O and L from the float32 forward), and its dQ, dK and dV went through the float64 check.",
          setup,
        ),
    wrong: _("A kernel gave wrong gradients: it is not timed."),
    table: _("Backward times on your GPU"),
    kernel: _("Kernel"),
    checked: _("Checked first"),
    gbps: _("GB/s (counted bytes)"),
    speedup: _("Speed-up over plain"),
    note: _("GB/s divides the emulator's byte count by the time."),
    method:
      result.method === "timestamp"
        ? _("GPU timestamps, rounded to 100 µs by Chrome.")
        : result.method === "wall"
          ? _("Wall clock from submit to done (no timestamp queries).")
          : "",
  };
  const rows = kernels.map((name) => {
    const k = timed[name];
    const c = checks[name];
    const verdict = c.passed
      ? html`<span class="verdict-pass">${w.passed}</span>`
      : html`<span class="verdict-fail">${w.failed}</span>`;
    const bytes = traffic[name] ? traffic[name].total_bytes : null;
    if (!k) {
      return html`<tr><th scope="row">${name}</th><td id="time-${name}-check">${verdict}</td>
        <td colspan="4">${w.notTimed}</td></tr>`;
    }
    const low = k.belowResolution ? w.low : "";
    return html`<tr><th scope="row">${name}</th><td id="time-${name}-check">${verdict}</td>
      <td id="time-${name}-ms">${msText(k.medianMs)}${low}</td><td>${rate(k.gflops)}</td>
      <td>${bytes === null ? "–" : rate(bytes / (k.medianMs / 1000) / 1e9)}</td>
      <td>${plain && name !== plainName ? `${fixed(plain.medianMs / k.medianMs, 2)}×` : "–"}</td></tr>`;
  });
  const caption = (name) => _("{kernel} on your GPU against float64 (N = {n})", { kernel: name, n: fmt(checkN) });
  const checkTables = kernels.map((name) => gradientTable(checks[name].tensors, caption(name), `time-${name}`));
  const wrong = kernels.some((k) => !checks[k].passed);
  setHtml(
    $("time-body"),
    html`
    <p>${w.setup}</p>
    ${wrong ? html`<p class="verdict-fail" id="time-check-warning">${w.wrong}</p>` : ""}
    <div class="table-scroll" tabindex="0" role="region" aria-label="${w.table}"><table class="numbers"><caption>${w.table}</caption>
      <thead><tr><th scope="col">${w.kernel}</th><th scope="col">${w.checked}</th><th scope="col">ms</th><th scope="col">GFLOP/s</th><th scope="col">${w.gbps}</th><th scope="col">${w.speedup}</th></tr></thead>
      <tbody>${rows}</tbody></table></div>
    ${checkTables}
    <p class="note" id="time-flop">${result.flopConvention} ${w.note}
      ${w.method}</p>`,
  );
  $("time-result").hidden = false;
  status.textContent =
    plain && timed[fusedName]
      ? _("Timed: fused backward {ratio} times as fast as plain backward.", {
          ratio: fixed(plain.medianMs / timed[fusedName].medianMs, 2),
        })
      : _("Timed.");
}
