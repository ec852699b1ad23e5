// Check: a kernel's float32 answer against exact float64 (emulator/check.py).
import { CheckRunner } from "./check-runner.js";
import { EmulatorClient } from "../emulator-client.js";
import { client } from "./client.js";
import { $, buttons, clearErrors, markShown, readForm, rules, setBusy, showErrors, status, writeHash } from "./form.js";
import { fmt, rate, sci } from "./format.js";
import { html, setHtml } from "./html.js";
import { resultOf } from "./reply.js";
import { quickErrors } from "./rules.js";

// Check runs in chunks of rows, shared with extra workers on a big check.
const checks = new CheckRunner({ client, makeClient: () => new EmulatorClient() });

export function renderCheck(r) {
  // A cancelled check (complete: false) passes only "so far": its rows are a part of the plan.
  const verdict = r.passed
    ? html`<span class="verdict-pass">Passed${r.complete === false ? " so far" : ""}</span>`
    : html`<span class="verdict-fail">Failed</span>`;
  const input =
    r.input === "model" ? `the model's sentence, head ${r.head} (${r.tokens} tokens)` : `random inputs, seed ${r.seed}`;
  const failing =
    r.first_failing_row !== null && r.first_failing_row !== undefined
      ? html`<p>First failing row: <strong id="check-first-row">${fmt(r.first_failing_row)}</strong>, in query tile ${fmt(r.first_failing_tile)}
      (error ${sci(r.first_failing_error)} against a bound of ${sci(r.first_failing_bound)}).</p>`
      : "";
  // Each error on a human scale too: float32 ulps at the output's largest magnitude,
  // and a share of the output's range (both from emulator/check.py).
  const human = (e) =>
    r.output_ulp > 0 && r.output_range > 0 && Number.isFinite(e)
      ? html`<br><span class="note">${rate(e / r.output_ulp)} float32 ulps; ${sci(e / r.output_range)} of the output's range</span>`
      : "";
  const fused = r.fa_rule_limit !== null && r.fa_rule_limit !== undefined;
  const share = (x) => `${Math.round((100 * x) / r.fa_rule_limit)}% of the limit`;
  const marginRules = fused && r.fa_rule_margin > r.fa_rule_limit / 2;
  const fa = fused
    ? html`<tr><th scope="row">Limit from FlashAttention's rule: this kernel's largest error must stay within
        2 × the plain kernel's largest error + a margin of 8u·max|V|</th>
        <td data-label="Value" id="check-fa-limit">${sci(r.fa_rule_limit)}${human(r.fa_rule_limit)}</td><td data-label="Result" id="check-fa-verdict">${r.fa_rule_passed ? "within" : "exceeded"}</td></tr>
      <tr class="part"><th scope="row">… of which 2 × the plain kernel's error (plain: ${sci(r.plain_max_abs_error)})</th>
        <td data-label="Value" id="check-fa-twice-plain">${sci(r.fa_rule_twice_plain)}</td><td data-label="Share">${share(r.fa_rule_twice_plain)}</td></tr>
      <tr class="part"><th scope="row">… and the margin 8u·max|V| (u = 2⁻²⁴, float32's unit roundoff)</th>
        <td data-label="Value" id="check-fa-margin">${sci(r.fa_rule_margin)}</td><td data-label="Share">${share(r.fa_rule_margin)}</td></tr>`
    : "";
  const faNote = !fused
    ? ""
    : marginRules
      ? html`<p class="note" id="check-fa-note">Here the margin is ${share(r.fa_rule_margin)}, so FlashAttention's rule
        says little more than “the error is tiny”: at this size it is not a sharper test than the bound.</p>`
      : html`<p class="note" id="check-fa-note">Here twice the plain kernel's error is ${share(r.fa_rule_twice_plain)}:
        the rule asks this kernel to be about as accurate as the plain one, a sharper test than the bound.</p>`;
  const scale =
    r.output_range > 0
      ? html`<p class="note">The exact output spans ${sci(r.output_range)} (largest minus smallest entry over the rows checked);
        one float32 ulp at its largest magnitude is ${sci(r.output_ulp)}.</p>`
      : "";
  setHtml(
    $("check-body"),
    html`
    <p class="big-number" id="check-verdict">${verdict}</p>
    <p>${r.label || r.kernel}, N = ${fmt(r.n)}, d = ${r.d}${r.causal ? ", causal" : ""}, on ${input}: float32 kernel against exact float64.</p>
    <table class="numbers check-table stack"><caption>Errors</caption>
      <thead><tr><th scope="col">Measure</th><th scope="col">Value</th><th scope="col">Result</th></tr></thead>
      <tbody>
      <tr><th scope="row">Largest error of this kernel, any output entry</th><td data-label="Value" id="check-error">${sci(r.max_abs_error)}${human(r.max_abs_error)}</td><td data-label="Result">–</td></tr>
      <tr><th scope="row">First-order float32 bound for that row</th><td data-label="Value" id="check-bound">${sci(r.bound)}${human(r.bound)}</td><td data-label="Result">${r.bound_passed ? "within" : "exceeded"}</td></tr>
      ${fa}
      </tbody></table>
    ${faNote}
    ${failing}
    ${scale}
    <p>Rows checked: <span id="check-rows">${r.rows_description}</span>. Took ${r.seconds.toFixed(2)} s in Python${r.workers > 1 ? `, in ${r.workers} workers` : ""}.</p>
    <p class="note">The float32 bound is first-order and deliberately safe, so it grows with N and d.</p>`,
  );
  $("check-result").hidden = false;
}

export async function doCheck() {
  clearErrors();
  const p = readForm();
  const quick = quickErrors(p, "check", rules);
  if (quick.length) {
    showErrors(quick);
    return null;
  }
  setBusy(true, "check");
  status.textContent = client.ready ? "Checking…" : "Starting Python, then checking…";
  const reply = await checks.run(p, {
    onProgress: ({ done, total, workers }) => {
      status.textContent =
        `Checking: ${fmt(done)} rows done, ${fmt(total - done)} to go` + (workers > 1 ? ` (${workers} workers).` : ".");
    },
  });
  setBusy(false);
  if (reply.cancelled && reply.partial) {
    reply.partial.seconds = reply.partial.seconds || 0;
    renderCheck(reply.partial);
    markShown("check-result", p);
    status.textContent =
      `Check cancelled after ${fmt(reply.partial.rows_checked)} of ${fmt(reply.partial.rows_planned)} rows: ` +
      "the result shown covers only those rows.";
    return null;
  }
  const result = resultOf(reply, showErrors);
  if (!result) return null;
  writeHash(p);
  renderCheck(result);
  markShown("check-result", p);
  status.textContent = `Check ${result.passed ? "passed" : "failed"}: largest error ${sci(result.max_abs_error)}, bound ${sci(result.bound)}.`;
  return result;
}

/** Stop Python mid-check (the worker is dropped; the next request starts a fresh one). */
export function cancelCheck() {
  checks.cancel();
  setBusy(false);
  status.textContent = "Check cancelled. Earlier results are kept.";
  buttons.check.focus();
}
