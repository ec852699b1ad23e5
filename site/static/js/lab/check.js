// Check: a kernel's float32 answer against exact float64 (emulator/check.py).
import { CheckRunner } from "./check-runner.js";
import { EmulatorClient } from "../emulator-client.js";
import { _ } from "../i18n.js";
import { client } from "./client.js";
import { kernelLabel } from "./direction.js";
import { busyWith, checkCancelled, readChecked } from "./action.js";
import { $, markShown, rules, setBusy, showErrors, status, writeHash } from "./form.js";
import { fixed, fmt, rate, sci } from "./format.js";
import { fillHtml, html, setHtml } from "./html.js";
import { resultOf } from "./reply.js";
import { quickErrors } from "./rules.js";

// Check runs in chunks of rows, shared with extra workers on a big check.
const checks = new CheckRunner({ client, makeClient: () => new EmulatorClient() });

/** "within" or "exceeded", as a Result cell says it. */
export const withinWord = (ok) => (ok ? _("within") : _("exceeded"));

function inputSentence(r, label) {
  const values = {
    kernel: label,
    n: fmt(r.n),
    d: String(r.d),
    head: String(r.head),
    tokens: fmt(r.tokens),
    seed: String(r.seed),
  };
  if (r.input === "model") {
    return r.causal
      ? _(
          "{kernel}, N = {n}, d = {d}, causal, on the model's sentence, head {head} ({tokens} tokens): float32 kernel against exact float64.",
          values,
        )
      : _(
          "{kernel}, N = {n}, d = {d}, on the model's sentence, head {head} ({tokens} tokens): float32 kernel against exact float64.",
          values,
        );
  }
  return r.causal
    ? _(
        "{kernel}, N = {n}, d = {d}, causal, on random inputs, seed {seed}: float32 kernel against exact float64.",
        values,
      )
    : _("{kernel}, N = {n}, d = {d}, on random inputs, seed {seed}: float32 kernel against exact float64.", values);
}

export function renderCheck(r) {
  // Words outside the html`` literals, where Babel's extractor finds them.
  const w = {
    passed: r.complete === false ? _("Passed so far") : _("Passed"),
    failed: _("Failed"),
    value: _("Value"),
    result: _("Result"),
    share: _("Share"),
    measure: _("Measure"),
    errors: _("Errors"),
    largest: _("Largest error of this kernel, any output entry"),
    bound: _("First-order float32 bound for that row"),
    faLimit: _(
      "Limit from FlashAttention's rule: this kernel's largest error must stay within 2 × the plain kernel's largest error + a margin of 8u·max|V|",
    ),
    faTwice: _("… of which 2 × the plain kernel's error (plain: {plain})", { plain: sci(r.plain_max_abs_error) }),
    faMargin: _("… and the margin 8u·max|V| (u = 2⁻²⁴, float32's unit roundoff)"),
    firstFailing: _("First failing row: {row}, in query tile {tile} (error {error} against a bound of {bound})."),
    rowsChecked: _("Rows checked: {rows}. {took}"),
    safe: _("The float32 bound is first-order and deliberately safe, so it grows with N and d."),
  };
  // A cancelled check (complete: false) passes only "so far": its rows are a part of the plan.
  const verdict = r.passed
    ? html`<span class="verdict-pass">${w.passed}</span>`
    : html`<span class="verdict-fail">${w.failed}</span>`;
  const label = kernelLabel(r.kernel, r.label || r.kernel);
  const failing =
    r.first_failing_row !== null && r.first_failing_row !== undefined
      ? html`<p>${fillHtml(w.firstFailing, {
          row: html`<strong id="check-first-row">${fmt(r.first_failing_row)}</strong>`,
          tile: fmt(r.first_failing_tile),
          error: sci(r.first_failing_error),
          bound: sci(r.first_failing_bound),
        })}</p>`
      : "";
  // Each error on a human scale too: float32 ulps at the output's largest magnitude,
  // and a share of the output's range (both from emulator/check.py).
  const humanWords = (e) =>
    _("{ulps} float32 ulps; {share} of the output's range", {
      ulps: rate(e / r.output_ulp),
      share: sci(e / r.output_range),
    });
  const human = (e) =>
    r.output_ulp > 0 && r.output_range > 0 && Number.isFinite(e)
      ? html`<br><span class="note">${humanWords(e)}</span>`
      : "";
  const fused = r.fa_rule_limit !== null && r.fa_rule_limit !== undefined;
  const share = (x) => _("{percent}% of the limit", { percent: fmt(Math.round((100 * x) / r.fa_rule_limit)) });
  const marginRules = fused && r.fa_rule_margin > r.fa_rule_limit / 2;
  const fa = fused
    ? html`<tr><th scope="row">${w.faLimit}</th>
        <td data-label="${w.value}" id="check-fa-limit">${sci(r.fa_rule_limit)}${human(r.fa_rule_limit)}</td><td data-label="${w.result}" id="check-fa-verdict">${withinWord(r.fa_rule_passed)}</td></tr>
      <tr class="part"><th scope="row">${w.faTwice}</th>
        <td data-label="${w.value}" id="check-fa-twice-plain">${sci(r.fa_rule_twice_plain)}</td><td data-label="${w.share}">${share(r.fa_rule_twice_plain)}</td></tr>
      <tr class="part"><th scope="row">${w.faMargin}</th>
        <td data-label="${w.value}" id="check-fa-margin">${sci(r.fa_rule_margin)}</td><td data-label="${w.share}">${share(r.fa_rule_margin)}</td></tr>`
    : "";
  let faText = "";
  if (fused && marginRules) {
    faText = _(
      "Here the margin is {share}, so FlashAttention's rule says little more than “the error is tiny”: at this size it is not a sharper test than the bound.",
      { share: share(r.fa_rule_margin) },
    );
  } else if (fused) {
    faText = _(
      "Here twice the plain kernel's error is {share}: the rule asks this kernel to be about as accurate as the plain one, a sharper test than the bound.",
      { share: share(r.fa_rule_twice_plain) },
    );
  }
  const faNote = fused ? html`<p class="note" id="check-fa-note">${faText}</p>` : "";
  const scaleText =
    r.output_range > 0
      ? _(
          "The exact output spans {range} (largest minus smallest entry over the rows checked); one float32 ulp at its largest magnitude is {ulp}.",
          { range: sci(r.output_range), ulp: sci(r.output_ulp) },
        )
      : "";
  const scale = scaleText ? html`<p class="note">${scaleText}</p>` : "";
  const took =
    r.workers > 1
      ? _("Took {seconds} s in Python, in {workers} workers.", {
          seconds: fixed(r.seconds, 2),
          workers: String(r.workers),
        })
      : _("Took {seconds} s in Python.", { seconds: fixed(r.seconds, 2) });
  setHtml(
    $("check-body"),
    html`
    <p class="big-number" id="check-verdict">${verdict}</p>
    <p>${inputSentence(r, label)}</p>
    <table class="numbers check-table stack"><caption>${w.errors}</caption>
      <thead><tr><th scope="col">${w.measure}</th><th scope="col">${w.value}</th><th scope="col">${w.result}</th></tr></thead>
      <tbody>
      <tr><th scope="row">${w.largest}</th><td data-label="${w.value}" id="check-error">${sci(r.max_abs_error)}${human(r.max_abs_error)}</td><td data-label="${w.result}">–</td></tr>
      <tr><th scope="row">${w.bound}</th><td data-label="${w.value}" id="check-bound">${sci(r.bound)}${human(r.bound)}</td><td data-label="${w.result}">${withinWord(r.bound_passed)}</td></tr>
      ${fa}
      </tbody></table>
    ${faNote}
    ${failing}
    ${scale}
    <p>${fillHtml(w.rowsChecked, { rows: html`<span id="check-rows">${r.rows_description}</span>`, took })}</p>
    <p class="note">${w.safe}</p>`,
  );
  $("check-result").hidden = false;
}

export async function doCheck() {
  const p = readChecked((q) => quickErrors(q, "check", rules));
  if (!p) return null;
  busyWith("check", _("Checking…"), _("Starting Python, then checking…"));
  const reply = await checks.run(p, {
    onProgress: ({ done, total, workers }) => {
      const values = { done: fmt(done), left: fmt(total - done), workers: String(workers) };
      status.textContent =
        workers > 1
          ? _("Checking: {done} rows done, {left} to go ({workers} workers).", values)
          : _("Checking: {done} rows done, {left} to go.", values);
    },
  });
  setBusy(false);
  if (reply.cancelled && reply.partial) {
    reply.partial.seconds = reply.partial.seconds || 0;
    renderCheck(reply.partial);
    markShown("check-result", p);
    status.textContent = _("Check cancelled after {done} of {planned} rows: the result shown covers only those rows.", {
      done: fmt(reply.partial.rows_checked),
      planned: fmt(reply.partial.rows_planned),
    });
    return null;
  }
  const result = resultOf(reply, showErrors);
  if (!result) return null;
  return showCheck(p, result, renderCheck, (r) => {
    const values = { error: sci(r.max_abs_error), bound: sci(r.bound) };
    return r.passed
      ? _("Check passed: largest error {error}, bound {bound}.", values)
      : _("Check failed: largest error {error}, bound {bound}.", values);
  });
}

/** Show a check's result (forward or backward): its settings in the address, its card
 *  drawn by render(result), and verdict(result) in the status line. Returns the result. */
export function showCheck(p, result, render, verdict) {
  writeHash(p);
  render(result);
  markShown("check-result", p);
  status.textContent = verdict(result);
  return result;
}

/** Stop Python mid-check (the worker is dropped; the next request starts a fresh one). */
export function cancelCheck() {
  checkCancelled(() => checks.cancel());
}
