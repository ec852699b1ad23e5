// Count: the bytes each lesson kernel moves to and from global memory (emulator/traffic.py).
import { barChart } from "../bars.js";
import { client } from "./client.js";
import { $, clearErrors, markShown, readForm, rules, setBusy, showErrors, status, writeHash } from "./form.js";
import { fmt, size } from "./format.js";
import { html, setHtml } from "./html.js";
import { resultOf } from "./reply.js";
import { quickErrors } from "./rules.js";

export const TENSORS = ["Q", "K", "V", "S", "P", "O"];

function trafficTable(t, caption) {
  const rows = TENSORS.filter((name) => t.reads[name] || t.writes[name]).map(
    (name) =>
      html`<tr><td><span class="tensor t-${name}">${name}</span></td><td>${fmt(t.reads[name])}</td><td>${fmt(t.writes[name])}</td></tr>`,
  );
  return html`<table class="numbers"><caption>${caption}</caption>
    <thead><tr><th scope="col">Tensor</th><th scope="col">Read (bytes)</th><th scope="col">Written (bytes)</th></tr></thead>
    <tbody>${rows}</tbody>
    <tfoot><tr><th scope="row">Total</th><td colspan="2">${fmt(t.total_bytes)} bytes (${size(t.total_bytes)})</td></tr></tfoot></table>`;
}

/**
 * Draw a count reply: the chosen kernel's bytes, and plain beside fused. Count shows
 * the lesson's kernels only, as the film does; the tuned kernels appear with Time.
 */
export function renderCount(r) {
  const s = r.selected;
  const causal = s.causal ? ", causal" : "";
  const tiles = s.query_tiles === 1 ? "tile" : "tiles";
  setHtml(
    $("count-body"),
    html`
    <p>${r.label}, N = ${fmt(s.n)}, d = ${s.d}${causal}, M = ${fmt(s.workgroup_bytes)} B:
       tiles of B_r = ${s.block_rows} query rows and B_c = ${s.block_cols} key rows (${fmt(s.query_tiles)} query ${tiles}).</p>
    <p class="big-number" id="count-total">${fmt(s.total_bytes)} bytes</p>
    <p>${size(s.total_bytes)} to and from global memory, one head, float32.</p>
    ${trafficTable(s, "Bytes per tensor, " + r.label)}
    <p>Plain moves <strong id="count-plain">${fmt(r.plain.total_bytes)}</strong> bytes, fused
       <strong id="count-fused">${fmt(r.fused.total_bytes)}</strong>: the plain kernel moves
       <strong id="count-ratio">${r.ratio.toFixed(1)}</strong> times as much.</p>
    <div id="count-chart"></div>
    <ul class="legend-inline" aria-hidden="true">${TENSORS.map((t) => html`<li><span class="swatch sw-${t}"></span>${t}</li>`)}</ul>`,
  );
  const rows = [
    { label: "Plain", traffic: r.plain },
    { label: "Fused", traffic: r.fused },
  ];
  $("count-chart").appendChild(
    barChart(rows, {
      title: `Bytes moved at N = ${fmt(s.n)}, d = ${s.d}: plain ${size(r.plain.total_bytes)}, fused ${size(r.fused.total_bytes)}`,
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
  status.textContent = client.ready ? "Counting…" : "Starting Python, then counting…";
  const result = await fetchCounts(p);
  setBusy(false);
  if (!result) return null;
  const sel = result.selected;
  writeHash({ ...p, n: String(sel.n), d: String(sel.d), workgroup_bytes: String(sel.workgroup_bytes) });
  markShown("count-result", p);
  renderCount(result);
  status.textContent = `Counted: ${result.label}, ${fmt(result.selected.total_bytes)} bytes.`;
  return result;
}
