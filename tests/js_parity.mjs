// Runs the page's pure ES modules under node for tests/test_js_parity.py.
// stdin: {"manifest": {...}, "rules"?: the lab form's data-rules, "calls": [{"fn": name, "args": [...]}, ...]}
// stdout: [{"ok": true, "value": ...} | {"ok": false, "error": {kind, message}}, ...]
// The page's language: CANNERY_LANG and CANNERY_CATALOG (tests/js_lang.mjs, imported first).
import "./js_lang.mjs";
import { softwareAdapter } from "../site/static/js/gpu/device.js";
import { quickErrors, readBoolean } from "../site/static/js/lab/rules.js";
import { parseNumber } from "../site/static/js/parse-number.js";
import { compared, distinctRuns, fastest, spreadOf, timeResult } from "../site/static/js/lab/time-stats.js";
import { whyWords } from "../site/static/js/lab/time-backward-words.js";
import { sizes } from "../site/static/js/bars.js";
import { placeLabels } from "../site/static/js/lab/roofline-labels.js";
import { parse as parseProgress, validate as validateProgress } from "../site/static/js/exercise/progress-schema.js";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString("utf-8"));
const { manifest, calls } = input;
const rules = input.rules || { head_dims: manifest.head_dims, lesson: manifest.lesson };

const FNS = {
  quickErrors: (params, purpose) => quickErrors(params, purpose, rules),
  readBoolean: (raw) => readBoolean(raw, rules),
  parseNumber: (raw, options) => parseNumber(raw, options),
  softwareAdapter: (info, isFallback) => softwareAdapter(info, isFallback),
  validateProgress: (data, strict) => validateProgress(data, { strict }),
  parseProgress: (text) => parseProgress(text),
  spreadOf: (samples) => spreadOf(samples),
  timeResult: (row) => timeResult(row),
  fastest: (rows) => fastest(rows.map(timeResult)),
  compared: (base, other) => compared(timeResult(base), timeResult(other)),
  distinctRuns: (kernels, sameRun) => distinctRuns(kernels, sameRun),
  sizes: (list) => sizes(list),
  placeLabels: (marks, bounds, size) => placeLabels(marks, bounds, size),
  backwardWhy: (plainRow, fusedRow, fewer, software) => {
    const plain = timeResult(plainRow);
    const fused = timeResult(fusedRow);
    return whyWords({ result: plain }, { result: fused, speedup: plain.medianMs / fused.medianMs, fewer }, software);
  },
};

const out = calls.map(({ fn, args }) => {
  try {
    return { ok: true, value: FNS[fn](...args) };
  } catch (err) {
    return { ok: false, error: { kind: err.kind || err.name, message: err.message, field: err.field } };
  }
});
process.stdout.write(JSON.stringify(out));
