// Count and Check when the Direction is Backward: the backward kernels of
// emulator/backward.py, through the same worker ops as the forward
// ("count" and "check" with "direction": "backward"). Time's backward run is
// in time-backward.js. The cards, messages and stale notes are the forward's.
import { barChart } from "../bars.js";
import { client } from "./client.js";
import { $, buttons, clearErrors, markShown, readForm, rules, setBusy, showErrors, status, writeHash } from "./form.js";
import { backwardCheckMaxN } from "./direction.js";
import { fmt, sci, size } from "./format.js";
import { html, setHtml } from "./html.js";
import { resultOf } from "./reply.js";
import { quickErrors } from "./rules.js";

/** Every tensor a backward kernel may move, in the manifest's display order (tensors.order). */
export const BACKWARD_TENSORS = ["Q", "K", "V", "S", "P", "O", "dO", "L", "D", "dP", "dS", "dQ", "dK", "dV"];

/** The forward's quick checks (N, d, M, seed), then the backward check's own N limit. */
export function backwardQuickErrors(p, purpose) {
  const errors = quickErrors(p, purpose, rules);
  const n = Number(String(p.n).replace(/[,_\s]/g, ""));
  if (!errors.length && purpose === "check" && Number.isInteger(n) && n > backwardCheckMaxN) {
    errors.push({
      field: "n",
      message:
        `The backward check forms N×N tables in Python, so it stops at N = ${fmt(backwardCheckMaxN)}; ` +
        `N = ${fmt(n)} would take too long. Count works at any N.`,
    });
  }
  if (!errors.length && purpose !== "count" && p.input === "model") {
    errors.push({ field: "input", message: "The backward check runs on random inputs only." });
  }
  return errors;
}

function trafficTable(t, caption) {
  const rows = BACKWARD_TENSORS.filter((name) => t.reads[name] || t.writes[name]).map(
    (name) =>
      html`<tr><td><span class="tensor t-${name}">${name}</span></td><td>${fmt(t.reads[name])}</td><td>${fmt(t.writes[name])}</td></tr>`,
  );
  return html`<table class="numbers"><caption>${caption}</caption>
    <thead><tr><th scope="col">Tensor</th><th scope="col">Read (bytes)</th><th scope="col">Written (bytes)</th></tr></thead>
    <tbody>${rows}</tbody>
    <tfoot><tr><th scope="row">Total</th><td colspan="2">${fmt(t.total_bytes)} bytes (${size(t.total_bytes)})</td></tr></tfoot></table>`;
}

/** Draw a backward count reply (emulator/api.py _backward_count). */
export function renderBackwardCount(r) {
  const s = r.selected;
  const causal = s.causal ? ", causal" : "";
  const passes = Object.entries(s.per_pass || {}).map(([name, bytes]) => html`<li>${name}: ${fmt(bytes)} bytes</li>`);
  const used = BACKWARD_TENSORS.filter((t) =>
    [r.plain, r.fused, r.forward].some((x) => (x.reads[t] || 0) + (x.writes[t] || 0) > 0),
  );
  setHtml(
    $("count-body"),
    html`
    <p>${r.label}, N = ${fmt(s.n)}, d = ${s.d}${causal}, M = ${fmt(s.workgroup_bytes)} B:
       tiles of B_r = ${s.block_rows} query rows and B_c = ${s.block_cols} key rows
       (${fmt(s.query_tiles)} query tiles, ${fmt(s.key_tiles)} key tiles).</p>
    <p class="big-number" id="count-total">${fmt(s.total_bytes)} bytes</p>
    <p>${size(s.total_bytes)} to and from global memory for the backward pass, one head, float32.</p>
    <p>Backward ÷ forward traffic: <strong id="count-bwd-ratio">${r.backward_to_forward_ratio.toFixed(2)}</strong>
       (its forward, ${r.forward.kernel}, moves <span id="count-forward">${fmt(r.forward.total_bytes)}</span> bytes).</p>
    ${trafficTable(s, "Bytes per tensor, " + r.label)}
    <p>Bytes per pass:</p><ul>${passes}</ul>
    <p>Plain backward moves <strong id="count-plain">${fmt(r.plain.total_bytes)}</strong> bytes, fused backward
       <strong id="count-fused">${fmt(r.fused.total_bytes)}</strong>: the plain one moves
       <strong id="count-ratio">${r.ratio.toFixed(1)}</strong> times as much.</p>
    <div id="count-chart"></div>
    <ul class="legend-inline" aria-hidden="true">${used.map((t) => html`<li><span class="swatch sw-${t}"></span>${t}</li>`)}</ul>`,
  );
  const rows = [
    { label: "Forward", traffic: r.forward },
    { label: "Plain backward", traffic: r.plain },
    { label: "Fused backward", traffic: r.fused },
  ];
  $("count-chart").appendChild(
    barChart(rows, {
      tensors: BACKWARD_TENSORS,
      title:
        `Bytes moved at N = ${fmt(s.n)}, d = ${s.d}: forward ${size(r.forward.total_bytes)}, ` +
        `plain backward ${size(r.plain.total_bytes)}, fused backward ${size(r.fused.total_bytes)}`,
    }),
  );
  $("count-result").hidden = false;
  $("count-result").classList.remove("stale");
}

export async function doBackwardCount() {
  clearErrors();
  const p = readForm();
  const quick = backwardQuickErrors(p, "count");
  if (quick.length) {
    showErrors(quick);
    return null;
  }
  setBusy(true, "count");
  status.textContent = client.ready ? "Counting…" : "Starting Python, then counting…";
  const result = resultOf(await client.request("count", p), showErrors);
  setBusy(false);
  if (!result) return null;
  const sel = result.selected;
  writeHash({ ...p, n: String(sel.n), d: String(sel.d), workgroup_bytes: String(sel.workgroup_bytes) });
  markShown("count-result", p);
  renderBackwardCount(result);
  status.textContent =
    `Counted: ${result.label}, ${fmt(sel.total_bytes)} bytes, ` +
    `${result.backward_to_forward_ratio.toFixed(2)} times its forward's.`;
  return result;
}

/** Rows of per-tensor errors: dQ, dK, dV against their bounds (shared with Time's check). */
export function gradientRows(tensors, prefix = "check") {
  return ["dQ", "dK", "dV"].map((t) => {
    const x = tensors[t];
    return html`<tr><th scope="row"><span class="tensor t-${t}">${t}</span></th>
      <td id="${prefix}-${t}-error">${sci(x.max_abs_error)}</td><td>${sci(x.worst_bound)}</td>
      <td>${x.passed ? "within" : "exceeded"}</td></tr>`;
  });
}

export function gradientTable(tensors, caption, prefix = "check") {
  return html`<table class="numbers compact"><caption>${caption}</caption>
    <thead><tr><th scope="col">Gradient</th><th scope="col">Largest error</th><th scope="col">Bound</th><th scope="col">Verdict</th></tr></thead>
    <tbody>${gradientRows(tensors, prefix)}</tbody></table>`;
}

export function renderBackwardCheck(r) {
  const verdict = r.passed
    ? html`<span class="verdict-pass">Passed</span>`
    : html`<span class="verdict-fail">Failed</span>`;
  const failed = ["dQ", "dK", "dV"].filter((t) => !r.tensors[t].passed);
  setHtml(
    $("check-body"),
    html`
    <p class="big-number" id="check-verdict">${verdict}</p>
    <p>${r.label}, N = ${fmt(r.n)}, d = ${r.d}${r.causal ? ", causal" : ""}, on random inputs and a random dO, seed ${r.seed}:
      float32 gradients against the exact gradients of the float64 forward.</p>
    ${gradientTable(r.tensors, "Errors per gradient")}
    <p class="note">Each entry has its own first-order float32 bound; the table shows the largest error and the bound of the entry closest to (or furthest past) its bound.</p>
    ${failed.length ? html`<p id="check-failed">Out of bounds: <strong>${failed.join(", ")}</strong>.</p>` : ""}
    ${failed.length ? html`<ul>${failed.map((t) => html`<li>${t}: worst entry at row ${r.tensors[t].worst_row}, column ${r.tensors[t].worst_col}${r.tensors[t].nan_entries ? `; ${fmt(r.tensors[t].nan_entries)} entries NaN or infinite` : ""}.</li>`)}</ul>` : ""}
    <p>The identity D = rowsum(dO∘O) = rowsum(dP∘P), in float64: largest residual over the rows
      <strong id="check-identity">${sci(r.identity_residual)}</strong>.</p>
    <p>O and L come from the float32 fused forward, as a real backward gets them. Took ${r.seconds.toFixed(2)} s in Python.</p>`,
  );
  $("check-result").hidden = false;
}

export async function doBackwardCheck() {
  clearErrors();
  const p = readForm();
  const quick = backwardQuickErrors(p, "check");
  if (quick.length) {
    showErrors(quick);
    return null;
  }
  setBusy(true, "check");
  status.textContent = client.ready ? "Checking the backward pass…" : "Starting Python, then checking…";
  // One plain request: the chunked check runner is the forward's; Cancel drops this worker.
  const result = resultOf(await client.request("check", p), showErrors);
  setBusy(false);
  if (!result) return null;
  writeHash(p);
  renderBackwardCheck(result);
  markShown("check-result", p);
  status.textContent = `Backward check ${result.passed ? "passed" : "failed"}: identity residual ${sci(result.identity_residual)}.`;
  return result;
}

/** Cancel a backward check: the worker is dropped; the next request starts a fresh one. */
export function cancelBackwardCheck() {
  client.cancel();
  setBusy(false);
  status.textContent = "Check cancelled. Earlier results are kept.";
  buttons.check.focus();
}
