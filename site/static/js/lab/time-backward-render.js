// The backward Time card: what the forward card carries (the software-adapter note,
// bytes counted by the emulator, GB/s, each run's spread, the chart of speed-up beside
// the traffic ratio) and plain words on why the two ratios differ on this GPU.
import { _, pgettext } from "../i18n.js";
import { gradientTable } from "./backward.js";
import { $, status } from "./form.js";
import { fmt, msText, rate, size, times } from "./format.js";
import { fillHtml, html, setHtml } from "./html.js";
import { whyWords } from "./time-backward-words.js";
import { drawRatios, spreadText, speedupText } from "./time-render.js";
import { compared, timeResult } from "./time-stats.js";

/** The card's words (outside the html`` literals, where Babel's extractor finds them). */
function cardWords({ n, d, causal, checkN }, result) {
  const setup = { n: fmt(n), d: String(d), check_n: fmt(checkN) };
  return {
    passed: pgettext("check verdict", "passed"),
    failed: pgettext("check verdict", "failed"),
    notTimed: _("not timed: its gradients failed the float64 check"),
    low: " " + _("(below the timer's resolution)"),
    software: _(
      "{adapter} runs WebGPU on this computer's CPU, not on a graphics chip. These times say nothing about a GPU's memory: they time CPU code, so do not read the lesson's claim from them.",
    ),
    setup: causal
      ? _(
          "Backward pass, N = {n}, d = {d}, causal, one head, float32, median of the samples and their spread (fastest–slowest). Before timing, each kernel ran once at N = {check_n} on the same seeded inputs as Check (O and L from the float32 forward), and its dQ, dK and dV went through the float64 check.",
          setup,
        )
      : _(
          "Backward pass, N = {n}, d = {d}, one head, float32, median of the samples and their spread (fastest–slowest). Before timing, each kernel ran once at N = {check_n} on the same seeded inputs as Check (O and L from the float32 forward), and its dQ, dK and dV went through the float64 check.",
          setup,
        ),
    wrong: _("A kernel gave wrong gradients: it is not timed."),
    table: _("Backward times on your GPU"),
    kernel: _("Kernel"),
    checked: _("Checked first"),
    bytes: _("Bytes (counted)"),
    ms: _("ms (median)"),
    spread: _("Spread (fastest–slowest)"),
    gbps: _("GB/s (counted bytes)"),
    speedup: _("Speed-up over plain"),
    fewer: _("fewer bytes than plain (counted)"),
    fast: _("as fast as plain (measured)"),
    note: _("Bytes are the emulator's count, the numbers Count shows; GB/s divides them by the time."),
    method:
      result.method === "timestamp"
        ? _("GPU timestamps, rounded to 100 µs by Chrome.")
        : result.method === "wall"
          ? _("Wall clock from submit to done (no timestamp queries).")
          : "",
  };
}

function backwardRow(name, k, st, check, w, counted) {
  const verdict = check.passed
    ? html`<span class="verdict-pass">${w.passed}</span>`
    : html`<span class="verdict-fail">${w.failed}</span>`;
  const bytes = counted ? counted.total_bytes : null;
  const bytesCell = bytes === null ? "–" : html`${fmt(bytes)}<br><span class="note">${size(bytes)}</span>`;
  if (!k || !st) {
    return html`<tr><th scope="row">${name}</th><td data-label="${w.checked}" id="time-${name}-check">${verdict}</td>
      <td data-label="${w.bytes}" id="time-${name}-bytes">${bytesCell}</td><td colspan="5">${w.notTimed}</td></tr>`;
  }
  const r = st.result;
  const low = k.belowResolution ? w.low : "";
  return html`<tr><th scope="row">${name}</th><td data-label="${w.checked}" id="time-${name}-check">${verdict}</td>
      <td data-label="${w.bytes}" id="time-${name}-bytes">${bytesCell}</td>
      <td data-label="${w.ms}" id="time-${name}-ms">${msText(r.medianMs)}${low}</td>
      <td data-label="${w.spread}" id="time-${name}-spread">${spreadText(r)}</td>
      <td data-label="GFLOP/s" id="time-${name}-gflops">${rate(k.gflops)}</td>
      <td data-label="${w.gbps}" id="time-${name}-gbps">${rate(st.gbps)}</td>
      <td data-label="${w.speedup}" id="time-${name}-speedup">${st.base ? speedupText(st.base, r) : "–"}</td></tr>`;
}

/** The results of the timed backward kernels and what the card reads beside them. */
function backwardStats(timed, traffic, plainName) {
  const stats = {};
  const results = [];
  for (const [name, k] of Object.entries(timed)) {
    if (!traffic[name]) continue;
    const result = timeResult({
      kernel: name,
      shaders: k.shaders,
      tiles: k.tiling,
      samplesMs: k.sampleMs,
      bytes: traffic[name].total_bytes,
      flop: k.flop,
    });
    results.push(result);
    stats[name] = { result, gbps: result.bytes / (result.medianMs / 1000) / 1e9 };
  }
  const base = stats[plainName];
  for (const [name, st] of Object.entries(stats)) {
    if (!base || name === plainName) continue;
    st.base = base.result;
    st.speedup = base.result.medianMs / st.result.medianMs;
    st.fewer = base.result.bytes / st.result.bytes;
  }
  return { stats, results };
}

/**
 * Draw a backward Time: result (gpu timeBackward), counts (the backward count reply),
 * {n, d, causal, checks: {kernel: check reply}, checkN, kernels: [timed, plain first],
 * same: [{kernel, as}], probe}.
 */
export function renderBackwardTime(result, counts, opts) {
  const { checks, checkN, kernels, same = [], probe = {} } = opts;
  const plainName = counts.plain.kernel;
  const fusedName = counts.fused.kernel;
  // Count's numbers: the count reply for plain, fused and the chosen kernel.
  const traffic = { [plainName]: counts.plain, [fusedName]: counts.fused, [counts.selected.kernel]: counts.selected };
  const timed = result.kernels || {};
  const w = cardWords(opts, result);
  const software = probe.software;
  const { stats } = backwardStats(timed, traffic, plainName);
  const rows = kernels.map((name) => backwardRow(name, timed[name], stats[name], checks[name], w, traffic[name]));
  const caption = (name) => _("{kernel} on your GPU against float64 (N = {n})", { kernel: name, n: fmt(checkN) });
  const checkTables = kernels.map((name) => gradientTable(checks[name].tensors, caption(name), `time-${name}`));
  const wrong = kernels.some((k) => !checks[k].passed);
  const sameWords = ({ kernel, as }) =>
    _("{kernel} runs the same shaders at the same tiles and constants as {as}: it is timed once, in {as}'s row.", {
      kernel,
      as,
    });
  const why = whyWords(stats[plainName], stats[fusedName], software);
  setHtml(
    $("time-body"),
    html`
    ${software ? html`<p class="time-software" id="time-software">${fillHtml(w.software, { adapter: html`<strong>${software}</strong>` })}</p>` : ""}
    <p>${w.setup}</p>
    ${wrong ? html`<p class="verdict-fail" id="time-check-warning">${w.wrong}</p>` : ""}
    <div class="table-scroll" tabindex="0" role="region" aria-label="${w.table}"><table class="numbers stack" id="time-table"><caption>${w.table}</caption>
      <thead><tr><th scope="col">${w.kernel}</th><th scope="col">${w.checked}</th><th scope="col">${w.bytes}</th><th scope="col">${w.ms}</th><th scope="col">${w.spread}</th><th scope="col">GFLOP/s</th><th scope="col">${w.gbps}</th><th scope="col">${w.speedup}</th></tr></thead>
      <tbody>${rows}</tbody></table></div>
    ${same.length ? html`<ul class="note" id="time-same">${same.map((x) => html`<li id="time-${x.kernel}-same">${sameWords(x)}</li>`)}</ul>` : ""}
    <div id="time-chart"></div>
    <ul class="legend-inline" aria-hidden="true"><li><span class="swatch sw-counted"></span>${w.fewer}</li><li><span class="swatch sw-measured"></span>${w.fast}</li></ul>
    ${why ? html`<p class="time-why" id="time-why">${why}</p>` : ""}
    ${checkTables}
    <p class="note" id="time-flop">${result.flopConvention} ${w.note}
      ${w.method}</p>`,
  );
  drawRatios($("time-chart"), stats, plainName);
  $("time-result").hidden = false;
  const f = stats[fusedName];
  const said =
    f && f.base
      ? compared(f.base, f.result) === "noise"
        ? _("Timed: fused backward {ratio} as fast as plain backward, within the noise.", { ratio: times(f.speedup) })
        : _("Timed: fused backward {ratio} as fast as plain backward.", { ratio: times(f.speedup) })
      : _("Timed.");
  const cpu = software
    ? " " + _("{adapter} runs on the CPU: these times say nothing about a GPU's memory.", { adapter: software })
    : "";
  status.textContent = said + cpu;
}
