// The emulator's home in the page: Pyodide (Python 3.14 compiled to WebAssembly)
// in a module Web Worker, so the page never freezes while Python works.
// It runs the very same emulator/*.py files the tests run in CPython, shipped by
// build.py in py/bundle.json. Messages in:  {id, request: {op, params, ...}}
// Messages out: {type: "progress", stage, percent} while booting,
//               {id, reply: {ok, op, result | errors}} for each request.
//
// The page's language (i18n.js, py-locale.js) is imported inside boot(), not
// at the top: i18n.js fetches its catalog with a top-level await, and a module
// worker whose imports are still awaiting gets its first messages before
// self.onmessage exists, and Chrome drops them (the first Count would wait for ever).
import { loadPyodide } from "../../vendor/pyodide/pyodide.mjs";

let i18n = null; // the page's i18n.js, once boot() has imported it

/** _() of i18n.js once loaded; before that, the English message with its {placeholders} filled. */
function _(msgid, params = {}) {
  if (i18n) return i18n._(msgid, params);
  return msgid.replace(/\{(\w+)\}/g, (whole, name) => (name in params ? String(params[name]) : whole));
}

const base = new URL("../../", import.meta.url);
let handleJson = null;
let booting = null;
let modelLoaded = false;

// The worker runs under the CSP its own response carries (build.py's server
// sends it); tell the page about any violation, which it would not otherwise see.
self.addEventListener("securitypolicyviolation", (e) => {
  postMessage({ type: "csp-violation", directive: e.effectiveDirective, blocked: e.blockedURI, where: "worker" });
});

function progress(stage, percent) {
  postMessage({ type: "progress", stage, percent });
}

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

// Pyodide 314 swallows a failed download of its WebAssembly (it logs
// console.warn("wasm instantiation failed!") and never settles), which would
// leave the lab waiting for ever on a patchy connection. Turn that into an error.
function wasmFailureWatch() {
  let reject;
  const failed = new Promise((_, r) => {
    reject = r;
  });
  const { warn, error } = console;
  console.warn = (...args) => {
    if (typeof args[0] === "string" && args[0].includes("wasm instantiation failed")) {
      reject(new Error("could not download Python's WebAssembly (vendor/pyodide/pyodide.asm.wasm)"));
    }
    warn.apply(console, args);
  };
  console.error = (...args) => {
    // likewise a failed download of the standard library, which ends in exit(1)
    if (typeof args[0] === "string" && args[0].includes("installing the standard library")) {
      reject(new Error("could not download Python's standard library (vendor/pyodide/python_stdlib.zip)"));
    }
    error.apply(console, args);
  };
  return {
    failed,
    stop: () => {
      console.warn = warn;
      console.error = error;
    },
  };
}

async function boot() {
  i18n = await import("./i18n.js");
  const { usePageLanguage } = await import("./py-locale.js");
  progress(_("Starting Python (Pyodide) in this page…"), 10);
  const watch = wasmFailureWatch();
  let py;
  try {
    py = await Promise.race([loadPyodide({ indexURL: new URL("vendor/pyodide/", base).href }), watch.failed]);
  } finally {
    watch.stop();
  }
  progress(_("Loading the emulator…"), 80);
  const response = await fetch(new URL("py/bundle.json", base));
  if (!response.ok) throw new Error(`could not load the emulator (${response.status})`);
  const bundle = await response.json();
  py.FS.mkdirTree("/cannery");
  for (const [path, text] of Object.entries(bundle.files)) writeFile(py, path, text);
  py.runPython("import sys\nsys.path.insert(0, '/cannery')");
  usePageLanguage(py, bundle);
  py.runPython("from emulator import api");
  handleJson = py.globals.get("api").handle_json;
  progress(_("Python is ready."), 100);
  return py;
}

async function ensureModel(py) {
  if (modelLoaded) return;
  const response = await fetch(new URL("py/facts/probe_qkv.json", base));
  if (!response.ok) throw new Error(`could not load the model's sentence (${response.status})`);
  writeFile(py, "facts/probe_qkv.json", await response.text());
  modelLoaded = true;
}

self.onmessage = async (event) => {
  const { id, request } = event.data;
  try {
    booting = booting || boot();
    let py;
    try {
      py = await booting;
    } catch (err) {
      // Python did not start (a dropped connection, say): say so, and ask the
      // page for a fresh worker, so the next press starts clean.
      booting = null;
      const message = String(err && err.message ? err.message : err)
        .split("\n")
        .slice(-3)
        .join(" ");
      postMessage({
        id,
        restart: true,
        reply: {
          ok: false,
          op: request && request.op,
          errors: [
            {
              field: "op",
              message: _(
                "Python could not start in this page: {error}. Check the connection, then press the button again.",
                {
                  error: message,
                },
              ),
            },
          ],
        },
      });
      return;
    }
    if (request.params && request.params.input === "model" && /^check(_plan|_part|_merge)?$/.test(request.op))
      await ensureModel(py);
    const reply = JSON.parse(handleJson(JSON.stringify(request)));
    postMessage({ id, reply });
  } catch (err) {
    const message = String(err && err.message ? err.message : err)
      .split("\n")
      .slice(-3)
      .join(" ");
    postMessage({
      id,
      reply: {
        ok: false,
        op: request && request.op,
        errors: [{ field: "op", message: _("The emulator stopped: {error}", { error: message }) }],
      },
    });
  }
};

// Boot at once: the page starts this worker only when the learner reaches for
// the lab, so Python is usually ready by the time they press Count.
booting = boot();
booting.catch(() => {
  booting = null;
});
