// Check: a kernel's float32 answer against exact float64 (emulator/check.py).
import { CheckRunner } from "./check-runner.js";
import { EmulatorClient } from "../emulator-client.js";
import { client } from "./client.js";
import { $, buttons, clearErrors, markShown, readForm, rules, setBusy, showErrors, status, writeHash } from "./form.js";
import { fmt, sci } from "./format.js";
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
  const fa =
    r.fa_rule_limit === null || r.fa_rule_limit === undefined
      ? ""
      : html`<tr><th scope="row">Twice the plain kernel's error (FlashAttention's rule)</th><td>${sci(r.fa_rule_limit)}</td><td>${r.fa_rule_passed ? "within" : "exceeded"}</td></tr>`;
  setHtml(
    $("check-body"),
    html`
    <p class="big-number" id="check-verdict">${verdict}</p>
    <p>${r.label || r.kernel}, N = ${fmt(r.n)}, d = ${r.d}${r.causal ? ", causal" : ""}, on ${input}: float32 kernel against exact float64.</p>
    <table class="numbers"><caption>Errors</caption>
      <thead><tr><th scope="col">Measure</th><th scope="col">Value</th><th scope="col"></th></tr></thead>
      <tbody>
      <tr><th scope="row">Largest error, any output entry</th><td id="check-error">${sci(r.max_abs_error)}</td><td></td></tr>
      <tr><th scope="row">First-order float32 bound for that row</th><td id="check-bound">${sci(r.bound)}</td><td>${r.bound_passed ? "within" : "exceeded"}</td></tr>
      ${fa}
      </tbody></table>
    ${failing}
    <p>Rows checked: <span id="check-rows">${r.rows_description}</span>. Took ${r.seconds.toFixed(2)} s in Python${r.workers > 1 ? `, in ${r.workers} workers` : ""}.</p>
    <p class="note">The float32 bound is first-order and deliberately safe, so it grows with N and d; twice the plain
      kernel's error is the sharper of the two tests.</p>`,
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
