// Check: a kernel's float32 answer against exact float64 (emulator/accuracy.py).
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
const PROGRESS_AFTER_MS = 1000; // progress shows once a check runs past 1 s, not for a quick one

// Reaching for Check (a pointer over it, or focus on it) starts the extra workers'
// Python once the lab's own has started, so a long check shares its rows at once.
for (const type of ["pointerenter", "focus"]) {
  $("check-button").addEventListener(type, () => (client.ready ? checks.prewarm() : client.start()));
}

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

/** How many times one figure is under (or over) another, as a sentence says it:
 * two significant figures, grouped (2,000; 1.5; pt-BR 2.000; 1,5). */
export function timesText(x) {
  if (!Number.isFinite(x)) return "–";
  return x >= 10 ? fmt(Number(x.toPrecision(2))) : fixed(x, 1);
}

// The card's first line: the verdict and the largest error against the bound, in one sentence.
function headline(r, verdict) {
  const err = r.max_abs_error;
  const values = { verdict, error: sci(err), times: timesText(err > 0 ? r.bound / err : 0) };
  if (!Number.isFinite(err)) return fillHtml(_("{verdict}: some entries of the output are NaN or infinite."), values);
  if (err === 0) return fillHtml(_("{verdict}: no error at all; every entry checked equals the exact answer."), values);
  if (err > r.bound) {
    values.times = timesText(err / r.bound);
    return fillHtml(_("{verdict}: largest error {error}, {times} times over the bound."), values);
  }
  const fused = r.fa_rule_limit !== null && r.fa_rule_limit !== undefined;
  if (fused && !r.fa_rule_passed)
    return fillHtml(
      _("{verdict}: largest error {error}, {times} times under the bound but over FlashAttention's limit."),
      values,
    );
  return fillHtml(_("{verdict}: largest error {error}, {times} times under the bound."), values);
}

// What the two rules check, said honestly for this result (both come from emulator/accuracy.py).
function rulesNote(r, share) {
  const text = [
    _(
      "The two rules check different things. The first-order bound asks whether rounding alone could explain the error; it is generous on purpose and grows with N and d, so it catches real mistakes, such as the rescale left out, but not a kernel that is merely less careful. FlashAttention's rule compares this kernel with the plain kernel on the same inputs: it may be at most twice as far off, plus the margin.",
    ),
  ];
  if (r.bound >= r.fa_rule_limit) {
    text.push(
      _("Here that limit is {times} times under the bound, so the rule is the tighter test.", {
        times: timesText(r.bound / r.fa_rule_limit),
      }),
    );
  } else {
    text.push(_("Here that limit is above the bound, so the bound is the tighter test."));
  }
  if (r.fa_rule_margin > r.fa_rule_limit / 2) {
    text.push(
      _(
        "The plain kernel's error is so small here that the margin is {share}: the rule then asks for an error within a few roundings of max|V|.",
        { share: share(r.fa_rule_margin) },
      ),
    );
  }
  return text.join(" ");
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
    boundTerm: _(
      "The most that float32 rounding could move this row's entries if every operation rounded the worst way, derived for this lesson. First-order: terms in u², a product of two roundings, are left out.",
    ),
    faLimit: _(
      "Limit from FlashAttention's rule: this kernel's largest error must stay within 2 × the plain kernel's largest error + a margin of 8u·max|V|",
    ),
    faTerm: _(
      "u = 2⁻²⁴ is float32's unit roundoff, the largest relative error of one rounding, and max|V| the largest entry of V in size: 8u·max|V| is eight roundings of that entry. The margin keeps the limit above 0 when the plain kernel happens to be exact.",
    ),
    faTwice: _("… of which 2 × the plain kernel's error (plain: {plain})", { plain: sci(r.plain_max_abs_error) }),
    faMargin: _("… and the margin 8u·max|V| (u = 2⁻²⁴, float32's unit roundoff)"),
    firstFailing: _("First failing row: {row}, in query tile {tile} (error {error} against a bound of {bound})."),
    rowsChecked: _("Rows checked: {rows}. {took}"),
  };
  // A cancelled check (complete: false) passes only "so far": its rows are a part of the plan.
  const verdict = r.passed
    ? html`<span class="verdict-pass" id="check-verdict">${w.passed}</span>`
    : html`<span class="verdict-fail" id="check-verdict">${w.failed}</span>`;
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
  // and a share of the output's range (both from emulator/accuracy.py).
  const humanWords = (e) =>
    _("{ulps} float32 ulps; {share} of the output's range", {
      ulps: rate(e / r.output_ulp), // grouped from 100 up (136,405), two figures below
      share: sci(e / r.output_range),
    });
  const human = (e) =>
    r.output_ulp > 0 && r.output_range > 0 && Number.isFinite(e)
      ? html`<br><span class="note">${humanWords(e)}</span>`
      : "";
  const fused = r.fa_rule_limit !== null && r.fa_rule_limit !== undefined;
  const share = (x) => _("{percent}% of the limit", { percent: fmt(Math.round((100 * x) / r.fa_rule_limit)) });
  const fa = fused
    ? html`<tr><th scope="row">${w.faLimit}<br><span class="note term">${w.faTerm}</span></th>
        <td data-label="${w.value}" id="check-fa-limit">${sci(r.fa_rule_limit)}${human(r.fa_rule_limit)}</td><td data-label="${w.result}" id="check-fa-verdict">${withinWord(r.fa_rule_passed)}</td></tr>
      <tr class="part"><th scope="row">${w.faTwice}</th>
        <td data-label="${w.value}" id="check-fa-twice-plain">${sci(r.fa_rule_twice_plain)}</td><td data-label="${w.share}">${share(r.fa_rule_twice_plain)}</td></tr>
      <tr class="part"><th scope="row">${w.faMargin}</th>
        <td data-label="${w.value}" id="check-fa-margin">${sci(r.fa_rule_margin)}</td><td data-label="${w.share}">${share(r.fa_rule_margin)}</td></tr>`
    : "";
  const faNote = fused ? html`<p class="note" id="check-fa-note">${rulesNote(r, share)}</p>` : "";
  const scaleText =
    r.output_range > 0
      ? _(
          "The exact output spans {range} (largest minus smallest entry over the rows checked). An ulp, a unit in the last place, is the gap between two neighbouring float32 numbers: at the output's largest magnitude it is {ulp}.",
          { range: sci(r.output_range), ulp: sci(r.output_ulp) },
        )
      : "";
  const scale = scaleText ? html`<p class="note" id="check-scale">${scaleText}</p>` : "";
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
    <p class="check-headline" id="check-headline">${headline(r, verdict)}</p>
    <p>${inputSentence(r, label)}</p>
    <table class="numbers check-table stack"><caption>${w.errors}</caption>
      <thead><tr><th scope="col">${w.measure}</th><th scope="col">${w.value}</th><th scope="col">${w.result}</th></tr></thead>
      <tbody>
      <tr><th scope="row">${w.largest}</th><td data-label="${w.value}" id="check-error">${sci(r.max_abs_error)}${human(r.max_abs_error)}</td><td data-label="${w.result}">–</td></tr>
      <tr><th scope="row">${w.bound}<br><span class="note term">${w.boundTerm}</span></th><td data-label="${w.value}" id="check-bound">${sci(r.bound)}${human(r.bound)}</td><td data-label="${w.result}">${withinWord(r.bound_passed)}</td></tr>
      ${fa}
      </tbody></table>
    ${scale}
    ${faNote}
    ${failing}
    <p>${fillHtml(w.rowsChecked, { rows: html`<span id="check-rows">${r.rows_description}</span>`, took })}</p>`,
  );
  $("check-result").hidden = false;
}

export async function doCheck() {
  const p = readChecked((q) => quickErrors(q, "check", rules));
  if (!p) return null;
  busyWith("check", _("Checking…"), _("Starting Python, then checking…"));
  // A check that runs past PROGRESS_AFTER_MS shows a bar of the rows done, beside the status line.
  const bar = $("check-progress");
  bar.value = 0;
  const showBar = setTimeout(() => {
    $("check-progress-box").hidden = false;
  }, PROGRESS_AFTER_MS);
  let reply;
  try {
    reply = await checks.run(p, {
      onProgress: ({ done, total, workers }) => {
        const values = { done: fmt(done), left: fmt(total - done), workers: String(workers) };
        bar.value = total ? (100 * done) / total : 0;
        status.textContent =
          workers > 1
            ? _("Checking: {done} rows done, {left} to go ({workers} workers).", values)
            : _("Checking: {done} rows done, {left} to go.", values);
      },
    });
  } finally {
    clearTimeout(showBar);
    $("check-progress-box").hidden = true;
  }
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
