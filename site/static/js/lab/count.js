// Count: the bytes each lesson kernel moves to and from global memory (emulator/traffic.py).
import { barChart, NARROW } from "../bars.js";
import { _, ngettext } from "../i18n.js";
import { client } from "./client.js";
import { kernelLabel } from "./direction.js";
import { busyWith, readChecked } from "./action.js";
import { $, markShown, rules, setBusy, showErrors, status, writeHash } from "./form.js";
import { fixed, fmt, size } from "./format.js";
import { fillHtml, html, setHtml } from "./html.js";
import { resultOf } from "./reply.js";
import { quickErrors } from "./rules.js";

export const TENSORS = ["Q", "K", "V", "S", "P", "O"];

/** A table of bytes read and written per tensor, with its total (shared with the backward count). */
export function trafficTable(t, caption, tensors = TENSORS) {
  const rows = tensors
    .filter((name) => t.reads[name] || t.writes[name])
    .map(
      (name) =>
        html`<tr><td><span class="tensor t-${name}">${name}</span></td><td>${fmt(t.reads[name])}</td><td>${fmt(t.writes[name])}</td></tr>`,
    );
  // Words outside the html`` literals, where Babel's extractor finds them.
  const w = {
    tensor: _("Tensor"),
    read: _("Read (bytes)"),
    written: _("Written (bytes)"),
    total: _("Total"),
    totalBytes: _("{bytes} bytes ({size})", { bytes: fmt(t.total_bytes), size: size(t.total_bytes) }),
  };
  return html`<table class="numbers"><caption>${caption}</caption>
    <thead><tr><th scope="col">${w.tensor}</th><th scope="col">${w.read}</th><th scope="col">${w.written}</th></tr></thead>
    <tbody>${rows}</tbody>
    <tfoot><tr><th scope="row">${w.total}</th><td colspan="2">${w.totalBytes}</td></tr></tfoot></table>`;
}

/** A count's sizes and tiles as the sentences about it name them (the backward count's too). */
export function setupValues(s, label) {
  return {
    kernel: label,
    n: fmt(s.n),
    d: String(s.d),
    m: fmt(s.workgroup_bytes),
    br: fmt(s.block_rows),
    bc: fmt(s.block_cols),
    tiles: fmt(s.query_tiles),
  };
}

function setupSentence(s, label) {
  const values = setupValues(s, label);
  return s.causal
    ? ngettext(
        "{kernel}, N = {n}, d = {d}, causal, M = {m} B: tiles of B_r = {br} query rows and B_c = {bc} key rows ({tiles} query tile).",
        "{kernel}, N = {n}, d = {d}, causal, M = {m} B: tiles of B_r = {br} query rows and B_c = {bc} key rows ({tiles} query tiles).",
        s.query_tiles,
        values,
      )
    : ngettext(
        "{kernel}, N = {n}, d = {d}, M = {m} B: tiles of B_r = {br} query rows and B_c = {bc} key rows ({tiles} query tile).",
        "{kernel}, N = {n}, d = {d}, M = {m} B: tiles of B_r = {br} query rows and B_c = {bc} key rows ({tiles} query tiles).",
        s.query_tiles,
        values,
      );
}

/** The count card's first lines: its setup sentence, the total (w.total) in big, and
 *  where those bytes go (w.where) (shared with the backward count). */
export function countHead(setup, w) {
  return html`<p>${setup}</p>
    <p class="big-number" id="count-total">${w.total}</p>
    <p>${w.where}</p>`;
}

/** The sentence on plain's and fused's totals and their ratio (`compare`, from _() with
 *  {plain}, {fused} and {ratio} left in), the chart's place and its legend of `tensors`
 *  (shared with the backward count). */
export function plainBesideFused(compare, r, tensors) {
  return html`<p>${fillHtml(compare, {
    plain: html`<strong id="count-plain">${fmt(r.plain.total_bytes)}</strong>`,
    fused: html`<strong id="count-fused">${fmt(r.fused.total_bytes)}</strong>`,
    ratio: html`<strong id="count-ratio">${fixed(r.ratio, 1)}</strong>`,
  })}</p>
    <div id="count-chart"></div>
    <ul class="legend-inline" aria-hidden="true">${tensors.map((t) => html`<li><span class="swatch sw-${t}"></span>${t}</li>`)}</ul>`;
}

// The chart last drawn is drawn again when the phone layout starts or stops applying (a
// phone turned, a window narrowed), so that its words keep their size.
let redraw = null;
window.matchMedia(NARROW).addEventListener("change", () => redraw && redraw());

/** Draw the count's bar chart of `rows` ({label, traffic}) and show the count, fresh. */
export function showCountChart(rows, options) {
  const chart = $("count-chart");
  redraw = () => chart.isConnected && chart.replaceChildren(barChart(rows, options));
  redraw();
  $("count-result").hidden = false;
  $("count-result").classList.remove("stale");
}

/**
 * Draw a count reply: the chosen kernel's bytes, and plain beside fused. Count shows
 * the lesson's kernels only, as the film does; the tuned kernels appear with Time.
 */
export function renderCount(r) {
  const s = r.selected;
  const label = kernelLabel(s.kernel || r.kernel, r.label);
  const w = {
    total: _("{bytes} bytes", { bytes: fmt(s.total_bytes) }),
    where: _("{size} to and from global memory, one head, float32.", { size: size(s.total_bytes) }),
    caption: _("Bytes per tensor, {kernel}", { kernel: label }),
    compare: _("Plain moves {plain} bytes, fused {fused}: the plain kernel moves {ratio} times as much."),
  };
  setHtml(
    $("count-body"),
    html`
    ${countHead(setupSentence(s, label), w)}
    ${trafficTable(s, w.caption)}
    ${plainBesideFused(w.compare, r, TENSORS)}`,
  );
  const rows = [
    { label: _("Plain"), traffic: r.plain },
    { label: _("Fused"), traffic: r.fused },
  ];
  showCountChart(rows, {
    title: _("Bytes moved at N = {n}, d = {d}: plain {plain}, fused {fused}", {
      n: fmt(s.n),
      d: String(s.d),
      plain: size(r.plain.total_bytes),
      fused: size(r.fused.total_bytes),
    }),
  });
}

/** Ask Python for the counts of the form's settings; the count result, or null after a message. */
export async function fetchCounts(p) {
  return resultOf(await client.request("count", p), showErrors);
}

/**
 * Count at the form's settings (forward or backward): quick(p) answers a plainly bad
 * value first; then Python's count, drawn by render(result), the settings it used in
 * the address, and said(result) in the status line. The count result, or null.
 */
export async function countWith(quick, render, said) {
  const p = readChecked(quick);
  if (!p) return null;
  busyWith("count", _("Counting…"), _("Starting Python, then counting…"));
  const result = await fetchCounts(p);
  setBusy(false);
  if (!result) return null;
  const sel = result.selected;
  writeHash({ ...p, n: String(sel.n), d: String(sel.d), workgroup_bytes: String(sel.workgroup_bytes) });
  markShown("count-result", p);
  render(result);
  status.textContent = said(result);
  return result;
}

export function doCount() {
  return countWith(
    (p) => quickErrors(p, "count", rules),
    renderCount,
    (result) =>
      _("Counted: {kernel}, {bytes} bytes.", {
        kernel: kernelLabel(result.selected.kernel || result.kernel, result.label),
        bytes: fmt(result.selected.total_bytes),
      }),
  );
}
