// Runs site/static/js/exercise/progress-files.js (and the schema's instant and stepState)
// under node for tests/test_progress_files.py.
// stdin: [{"fn": name, "args": [...]}, ...]; stdout: [{"ok": true, "value": ...} | {"ok": false, "error": ...}, ...]
import "./js_lang.mjs";
import * as files from "../site/static/js/exercise/progress-files.js";
import { instant, stepState, validate } from "../site/static/js/exercise/progress-schema.js";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const calls = JSON.parse(Buffer.concat(chunks).toString("utf-8"));
const FNS = { ...files, instant, stepState, validate: (data) => validate(data).state };
const out = calls.map(({ fn, args }) => {
  try {
    const value = FNS[fn](...args);
    return { ok: true, value: Number.isNaN(value) ? "NaN" : value };
  } catch (err) {
    return { ok: false, error: { kind: err.name, message: err.message, field: err.field } };
  }
});
process.stdout.write(JSON.stringify(out));
