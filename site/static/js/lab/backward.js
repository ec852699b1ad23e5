// Count and Check when the Direction is Backward: the backward kernels of
// emulator/backward.py, through the same worker ops as the forward
// ("count" and "check" with "direction": "backward"). Time's backward run is
// in time-backward.js. The cards, messages and stale notes are the forward's.
import { _ } from "../i18n.js";
import { client } from "./client.js";
import { busyWith, checkCancelled, readChecked } from "./action.js";
import { countHead, countWith, plainBesideFused, setupValues, showCountChart, trafficTable } from "./count.js";
import { showCheck, withinWord } from "./check.js";
import { $, rules, setBusy, showErrors } from "./form.js";
import { backwardCheckMaxN, kernelLabel, offerBackwardN } from "./direction.js";
import { fixed, fmt, sci, size } from "./format.js";
import { fillHtml, html, setHtml } from "./html.js";
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
      message: _(
        "The backward check forms N×N tables in Python, so it stops at N = {limit}; N = {n} would take too long. Count works at any N.",
        { limit: fmt(backwardCheckMaxN), n: fmt(n) },
      ),
    });
  }
  if (!errors.length && purpose !== "count" && p.input === "model") {
    errors.push({ field: "input", message: _("The backward check runs on random inputs only.") });
  }
  return errors;
}

function setupSentence(s, label) {
  const values = { ...setupValues(s, label), qt: fmt(s.query_tiles), kt: fmt(s.key_tiles) };
  return s.causal
    ? _(
        "{kernel}, N = {n}, d = {d}, causal, M = {m} B: tiles of B_r = {br} query rows and B_c = {bc} key rows ({qt} query tiles, {kt} key tiles).",
        values,
      )
    : _(
        "{kernel}, N = {n}, d = {d}, M = {m} B: tiles of B_r = {br} query rows and B_c = {bc} key rows ({qt} query tiles, {kt} key tiles).",
        values,
      );
}

/** Draw a backward count reply (lab_api/__init__.py _backward_count). */
export function renderBackwardCount(r) {
  const s = r.selected;
  const label = kernelLabel(s.kernel, r.label);
  const passWords = (name, bytes) => _("{pass}: {bytes} bytes", { pass: name, bytes: fmt(bytes) });
  const passes = Object.entries(s.per_pass || {}).map(([name, bytes]) => html`<li>${passWords(name, bytes)}</li>`);
  // Words outside the html`` literals, where Babel's extractor finds them.
  const w = {
    total: _("{bytes} bytes", { bytes: fmt(s.total_bytes) }),
    where: _("{size} to and from global memory for the backward pass, one head, float32.", {
      size: size(s.total_bytes),
    }),
    ratio: _("Backward ÷ forward traffic: {ratio} (its forward, {forward}, moves {bytes} bytes)."),
    caption: _("Bytes per tensor, {kernel}", { kernel: label }),
    perPass: _("Bytes per pass:"),
    compare: _(
      "Plain backward moves {plain} bytes, fused backward {fused}: the plain one moves {ratio} times as much.",
    ),
  };
  const used = BACKWARD_TENSORS.filter((t) =>
    [r.plain, r.fused, r.forward].some((x) => (x.reads[t] || 0) + (x.writes[t] || 0) > 0),
  );
  setHtml(
    $("count-body"),
    html`
    ${countHead(setupSentence(s, label), w)}
    <p>${fillHtml(w.ratio, {
      ratio: html`<strong id="count-bwd-ratio">${fixed(r.backward_to_forward_ratio, 2)}</strong>`,
      forward: r.forward.kernel,
      bytes: html`<span id="count-forward">${fmt(r.forward.total_bytes)}</span>`,
    })}</p>
    ${trafficTable(s, w.caption, BACKWARD_TENSORS)}
    <p>${w.perPass}</p><ul>${passes}</ul>
    ${plainBesideFused(w.compare, r, used)}`,
  );
  const rows = [
    { label: _("Forward"), traffic: r.forward },
    { label: _("Plain backward"), traffic: r.plain },
    { label: _("Fused backward"), traffic: r.fused },
  ];
  showCountChart(rows, {
    tensors: BACKWARD_TENSORS,
    title: _("Bytes moved at N = {n}, d = {d}: forward {forward}, plain backward {plain}, fused backward {fused}", {
      n: fmt(s.n),
      d: String(s.d),
      forward: size(r.forward.total_bytes),
      plain: size(r.plain.total_bytes),
      fused: size(r.fused.total_bytes),
    }),
  });
}

export function doBackwardCount() {
  return countWith(
    (p) => backwardQuickErrors(p, "count"),
    renderBackwardCount,
    (result) =>
      _("Counted: {kernel}, {bytes} bytes, {ratio} times its forward's.", {
        kernel: kernelLabel(result.selected.kernel, result.label),
        bytes: fmt(result.selected.total_bytes),
        ratio: fixed(result.backward_to_forward_ratio, 2),
      }),
  );
}

/** Rows of per-tensor errors: dQ, dK, dV against their bounds (shared with Time's check). */
export function gradientRows(tensors, prefix = "check") {
  return ["dQ", "dK", "dV"].map((t) => {
    const x = tensors[t];
    return html`<tr><th scope="row"><span class="tensor t-${t}">${t}</span></th>
      <td id="${prefix}-${t}-error">${sci(x.max_abs_error)}</td><td>${sci(x.worst_bound)}</td>
      <td>${withinWord(x.passed)}</td></tr>`;
  });
}

export function gradientTable(tensors, caption, prefix = "check") {
  const w = { gradient: _("Gradient"), largest: _("Largest error"), bound: _("Bound"), verdict: _("Verdict") };
  return html`<table class="numbers compact"><caption>${caption}</caption>
    <thead><tr><th scope="col">${w.gradient}</th><th scope="col">${w.largest}</th><th scope="col">${w.bound}</th><th scope="col">${w.verdict}</th></tr></thead>
    <tbody>${gradientRows(tensors, prefix)}</tbody></table>`;
}

function worstEntry(t, x) {
  const values = { tensor: t, row: fmt(x.worst_row), col: fmt(x.worst_col), count: fmt(x.nan_entries) };
  return x.nan_entries
    ? _("{tensor}: worst entry at row {row}, column {col}; {count} entries NaN or infinite.", values)
    : _("{tensor}: worst entry at row {row}, column {col}.", values);
}

export function renderBackwardCheck(r) {
  // Words outside the html`` literals, where Babel's extractor finds them.
  const w = {
    passed: _("Passed"),
    failed: _("Failed"),
    caption: _("Errors per gradient"),
    note: _(
      "Each entry has its own first-order float32 bound; the table shows the largest error and the bound of the entry closest to (or furthest past) its bound.",
    ),
    outOfBounds: _("Out of bounds: {tensors}."),
    identity: _("The identity D = rowsum(dO∘O) = rowsum(dP∘P), in float64: largest residual over the rows {residual}."),
    took: _("O and L come from the float32 fused forward, as a real backward gets them. Took {seconds} s in Python.", {
      seconds: fixed(r.seconds, 2),
    }),
  };
  const verdict = r.passed
    ? html`<span class="verdict-pass">${w.passed}</span>`
    : html`<span class="verdict-fail">${w.failed}</span>`;
  const failed = ["dQ", "dK", "dV"].filter((t) => !r.tensors[t].passed);
  const label = kernelLabel(r.kernel, r.label);
  const values = { kernel: label, n: fmt(r.n), d: String(r.d), seed: String(r.seed) };
  const setup = r.causal
    ? _(
        "{kernel}, N = {n}, d = {d}, causal, on random inputs and a random dO, seed {seed}: float32 gradients against the exact gradients of the float64 forward.",
        values,
      )
    : _(
        "{kernel}, N = {n}, d = {d}, on random inputs and a random dO, seed {seed}: float32 gradients against the exact gradients of the float64 forward.",
        values,
      );
  setHtml(
    $("check-body"),
    html`
    <p class="big-number" id="check-verdict">${verdict}</p>
    <p>${setup}</p>
    ${gradientTable(r.tensors, w.caption)}
    <p class="note">${w.note}</p>
    ${failed.length ? html`<p id="check-failed">${fillHtml(w.outOfBounds, { tensors: html`<strong>${failed.join(", ")}</strong>` })}</p>` : ""}
    ${failed.length ? html`<ul>${failed.map((t) => html`<li>${worstEntry(t, r.tensors[t])}</li>`)}</ul>` : ""}
    <p>${fillHtml(w.identity, {
      residual: html`<strong id="check-identity">${sci(r.identity_residual)}</strong>`,
    })}</p>
    <p>${w.took}</p>`,
  );
  $("check-result").hidden = false;
}

export async function doBackwardCheck() {
  const p = readChecked((q) => backwardQuickErrors(q, "check"));
  offerBackwardN(); // past the check's limit: "Use N = …" beside the message
  if (!p) return null;
  busyWith("check", _("Checking the backward pass…"), _("Starting Python, then checking…"));
  // One plain request: the chunked check runner is the forward's; Cancel drops this worker.
  const result = resultOf(await client.request("check", p), showErrors);
  setBusy(false);
  if (!result) return null;
  return showCheck(p, result, renderBackwardCheck, (r) => {
    const values = { residual: sci(r.identity_residual) };
    return r.passed
      ? _("Backward check passed: identity residual {residual}.", values)
      : _("Backward check failed: identity residual {residual}.", values);
  });
}

/** Cancel a backward check: the worker is dropped; the next request starts a fresh one. */
export function cancelBackwardCheck() {
  checkCancelled(() => client.cancel());
}
