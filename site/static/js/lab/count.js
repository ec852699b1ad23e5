// Count: the bytes each lesson kernel moves to and from global memory (emulator/traffic.py).
import { barChart } from "../bars.js";
import { _, ngettext } from "../i18n.js";
import { client } from "./client.js";
import { kernelLabel } from "./direction.js";
import { $, clearErrors, markShown, readForm, rules, setBusy, showErrors, status, writeHash } from "./form.js";
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

/** The sentence that names a count's kernel, sizes and tiles. */
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
    <p>${setupSentence(s, label)}</p>
    <p class="big-number" id="count-total">${w.total}</p>
    <p>${w.where}</p>
    ${trafficTable(s, w.caption)}
    <p>${fillHtml(w.compare, {
      plain: html`<strong id="count-plain">${fmt(r.plain.total_bytes)}</strong>`,
      fused: html`<strong id="count-fused">${fmt(r.fused.total_bytes)}</strong>`,
      ratio: html`<strong id="count-ratio">${fixed(r.ratio, 1)}</strong>`,
    })}</p>
    <div id="count-chart"></div>
    <ul class="legend-inline" aria-hidden="true">${TENSORS.map((t) => html`<li><span class="swatch sw-${t}"></span>${t}</li>`)}</ul>`,
  );
  const rows = [
    { label: _("Plain"), traffic: r.plain },
    { label: _("Fused"), traffic: r.fused },
  ];
  $("count-chart").appendChild(
    barChart(rows, {
      title: _("Bytes moved at N = {n}, d = {d}: plain {plain}, fused {fused}", {
        n: fmt(s.n),
        d: String(s.d),
        plain: size(r.plain.total_bytes),
        fused: size(r.fused.total_bytes),
      }),
    }),
  );
  $("count-result").hidden = false;
  $("count-result").classList.remove("stale");
}

/** Ask Python for the counts of the form's settings; the count result, or null after a message. */
export async function fetchCounts(p) {
  return resultOf(await client.request("count", p), showErrors);
}

export async function doCount() {
  clearErrors();
  const p = readForm();
  // A plainly bad value needs no Python: say so at once, even before Python has started.
  const quick = quickErrors(p, "count", rules);
  if (quick.length) {
    showErrors(quick);
    return null;
  }
  setBusy(true, "count");
  status.textContent = client.ready ? _("Counting…") : _("Starting Python, then counting…");
  const result = await fetchCounts(p);
  setBusy(false);
  if (!result) return null;
  const sel = result.selected;
  writeHash({ ...p, n: String(sel.n), d: String(sel.d), workgroup_bytes: String(sel.workgroup_bytes) });
  markShown("count-result", p);
  renderCount(result);
  status.textContent = _("Counted: {kernel}, {bytes} bytes.", {
    kernel: kernelLabel(sel.kernel || result.kernel, result.label),
    bytes: fmt(sel.total_bytes),
  });
  return result;
}
