// The exercise worker: Pyodide (Python 3.14 in WebAssembly) in a module Web
// Worker, running the learner's code and the step's tests through the same
// exercises/ package the offline path runs in CPython. It loads two bundles
// written by build.py: py/bundle.json (the emulator, the tests' oracle) and
// py/exercises.json (the checker and each step's tests.py).
// In:  {id, request: {op: "run" | "check", slug, step, source}}
// Out: {type: "progress", stage} while booting; {type: "started", id} when a
//      request begins (the page starts its time limit then);
//      {id, reply: {ok, result | message}} when it ends.
import { loadPyodide } from "../../../vendor/pyodide/pyodide.mjs";
import { usePageLanguage } from "../py-locale.js";
import { _ } from "../i18n.js";

const base = new URL("../../../", import.meta.url);
let handle = null;

self.addEventListener("securitypolicyviolation", (e) => {
  postMessage({
    type: "csp-violation",
    directive: e.effectiveDirective,
    blocked: e.blockedURI,
    where: "exercise-worker",
  });
});

function writeFile(py, path, text) {
  const parts = path.split("/");
  let dir = "/cannery";
  for (const part of parts.slice(0, -1)) {
    dir += "/" + part;
    try {
      py.FS.mkdirTree(dir);
    } catch (_) {
      /* exists */
    }
  }
  py.FS.writeFile("/cannery/" + path, text);
}

async function fetchBundle(rel) {
  const response = await fetch(new URL(rel, base));
  if (!response.ok)
    throw new Error(_("could not load {file} ({status})", { file: rel, status: String(response.status) }));
  return await response.json();
}

async function boot() {
  postMessage({ type: "progress", stage: "python" });
  const py = await loadPyodide({ indexURL: new URL("vendor/pyodide/", base).href });
  const [emulator, exercises] = await Promise.all([fetchBundle("py/bundle.json"), fetchBundle("py/exercises.json")]);
  py.FS.mkdirTree("/cannery");
  for (const [path, text] of Object.entries({ ...emulator.files, ...exercises.files })) writeFile(py, path, text);
  py.runPython("import sys\nsys.path.insert(0, '/cannery')");
  usePageLanguage(py, emulator);
  py.runPython(
    [
      "import json",
      "from exercises import runner",
      "def _handle(text):",
      "    return json.dumps(runner.handle(json.loads(text)))",
    ].join("\n"),
  );
  handle = py.globals.get("_handle");
  postMessage({ type: "progress", stage: "ready" });
}

const booting = boot();
booting.catch(() => {});

self.onmessage = async (event) => {
  const { id, request } = event.data;
  try {
    await booting;
  } catch (err) {
    const message = String(err && err.message ? err.message : err)
      .split("\n")
      .slice(-2)
      .join(" ");
    postMessage({ id, reply: { ok: false, boot: true, message } });
    return;
  }
  postMessage({ type: "started", id });
  try {
    postMessage({ id, reply: JSON.parse(handle(JSON.stringify(request))) });
  } catch (err) {
    const message = String(err && err.message ? err.message : err)
      .split("\n")
      .slice(-3)
      .join(" ");
    postMessage({ id, reply: { ok: false, message } });
  }
};
