// Runs gpu/files.js joinSource (the page's include step) under node for
// tests/test_wgsl_include.py.
// stdin: {"root": folder, "files": {path: text} | null, "jobs": [{"file", "instrumented"}]}
//   files: the texts to read (a test's tree), or null to read root/<path> from disk
// stdout: [{"ok": true, "text": joined} | {"ok": false, "kind", "message"}, ...]
import "./js_lang.mjs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { instrumentSource, joinSource } from "../site/static/js/gpu/files.js";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const { root, files, jobs } = JSON.parse(Buffer.concat(chunks).toString("utf-8"));

async function read(path) {
  if (files === null) return readFile(join(root, path), "utf-8");
  if (!(path in files)) throw new Error(`no such file: ${path}`);
  return files[path];
}

const out = [];
for (const { file, instrumented } of jobs) {
  try {
    const text = await joinSource(file, read);
    out.push({ ok: true, text: instrumented ? instrumentSource(text) : text });
  } catch (err) {
    out.push({ ok: false, kind: err.kind || err.name, message: err.message });
  }
}
process.stdout.write(JSON.stringify(out));
