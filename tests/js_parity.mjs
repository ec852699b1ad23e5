// Runs the page's pure ES modules under node for tests/test_js_parity.py.
// stdin: {"manifest": {...}, "calls": [{"fn": name, "args": [...]}, ...]}
// stdout: [{"ok": true, "value": ...} | {"ok": false, "error": {kind, message}}, ...]
// The page's language: CANNERY_LANG and CANNERY_CATALOG (tests/js_lang.mjs, imported first).
import "./js_lang.mjs";
import { softwareAdapter } from "../site/static/js/gpu/device.js";
import { kernelNeeds, lessonTiling, passVariant, planDevice } from "../site/static/js/gpu/plan.js";
import { quickErrors, readBoolean } from "../site/static/js/lab/rules.js";
import { parseNumber } from "../site/static/js/parse-number.js";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { manifest, calls } = JSON.parse(Buffer.concat(chunks).toString("utf-8"));
// As the template writes the form's data-rules: lesson_kernels are the entries with "lesson": true.
const rules = {
  head_dims: manifest.head_dims,
  lesson: manifest.lesson,
  lesson_kernels: Object.keys(manifest.kernels).filter((name) => manifest.kernels[name].lesson),
};

const FNS = {
  quickErrors: (params, purpose) => quickErrors(params, purpose, rules),
  readBoolean: (raw) => readBoolean(raw, rules),
  parseNumber: (raw, options) => parseNumber(raw, options),
  softwareAdapter: (info, isFallback) => softwareAdapter(info, isFallback),
  planDevice: (job, offer) => planDevice(manifest, job, offer),
  kernelNeeds: (kernel, n, d, heads, instrumented, m) => kernelNeeds(manifest, kernel, n, d, heads, instrumented, m),
  lessonTiling: (kernel, d, m) => lessonTiling(manifest, kernel, d, m),
  passVariant: (kernel, passIndex, d, m, subgroupMin) => {
    const tiling = lessonTiling(manifest, kernel, d, m);
    return passVariant(manifest.kernels[kernel].wgsl[passIndex], d, tiling, subgroupMin);
  },
};

const out = calls.map(({ fn, args }) => {
  try {
    return { ok: true, value: FNS[fn](...args) };
  } catch (err) {
    return { ok: false, error: { kind: err.kind || err.name, message: err.message } };
  }
});
process.stdout.write(JSON.stringify(out));
