// The site's one Python worker: Pyodide (Python 3.14 compiled to WebAssembly)
// in a module Web Worker, so the page never freezes while Python works. It runs
// the very same files the tests run in CPython, shipped by build.py as bundles.
//
// What it serves is named in its URL (?serve=lab or ?serve=exercises; the page
// sets ?lang= too): the bundles it writes into Python's file system and the
// Python module whose handle_json(text) -> text answers each request (SERVES).
// ./worker-client.js is the page's side.
//
// In:  {type: "port", port}               first, on the worker itself: the channel below
//      {id, request}                       on the port; request: the JSON the module's handle_json reads
//                                          (a non-finite number in it, such as a GPU's inf or
//                                          NaN in O, reaches Python as the string "inf",
//                                          "-inf" or "nan": JSON has none, and
//                                          JSON.stringify would write null)
// Out (on the port):
//      {type: "progress", step, stage, percent}   while Python starts: step "python",
//                                                 "files", "ready", or "failed" (stage then
//                                                 holds the error); stage: words for the learner
//      {type: "started", id}               Python begins the request (a time limit starts here)
//      {type: "reply", id, reply}          the module's reply, as it gave it
//      {type: "reply", id, error: {boot, fatal, stack, message}}   Python could not start
//                                          (boot: true), or the request failed outside the
//                                          module's own replies; fatal: Python can no longer
//                                          be used (stack: it ran out of stack)
//      {type: "csp-violation", directive, blocked, where: "worker"}
// Python starts at once, and once per worker: a worker whose Python failed to
// start answers every request with that error, and the page starts a fresh one.
//
// The page's language (i18n.js, py-locale.js) is imported inside boot(), not
// at the top: i18n.js fetches its catalog with a top-level await, and a module
// worker whose imports are still awaiting gets its first messages before
// self.onmessage exists, and Chrome drops them (the first request would wait for ever).
//
// The page's channel: the page's first message hands this worker a MessagePort
// ({type: "port", port}); every request comes, and every message above goes, through
// that port only. Learner code runs in this worker's Python, whose `js` module is
// this worker's global scope: it can call postMessage, replace onmessage or patch
// prototypes, but it cannot reach the port, held in this module's closure, nor the
// functions captured below before any Python runs. So a verdict the page reads
// comes from the checker, never from code that called js.postMessage.
//
// Files: before every request of a worker serving exercises, Python's file system
// under /cannery is put back to exactly the bundles this worker was shipped (files
// a Run rewrote or added are replaced or removed), so a Check runs the site's tests
// and the site's checker, whatever an earlier Run wrote there.
import { loadPyodide } from "../../vendor/pyodide/pyodide.mjs";

// Captured before any Python runs (see above).
const apply = Reflect.apply;
const portPost = MessagePort.prototype.postMessage;
const parseJson = JSON.parse;
const stringifyJson = JSON.stringify;
let port = null; // the page's MessagePort, once its first message has come
const early = []; // what was posted before the port came
function post(message) {
  if (port) apply(portPost, port, [message]);
  else early.push(message);
}

const base = new URL("../../", import.meta.url);

let i18n = null; // the page's i18n.js, once boot() has imported it
let fatal = null; // the message of the error that left Python unusable, once one has

/** _() of i18n.js once loaded; before that, the English message with its {placeholders} filled. */
function _(msgid, params = {}) {
  if (i18n) return i18n._(msgid, params);
  return msgid.replace(/\{(\w+)\}/g, (whole, name) => (name in params ? String(params[name]) : whole));
}

// The lab's "model's sentence" input reads facts/probe_qkv.json, fetched the first time a check needs it.
let modelLoaded = false;
async function labPrepare(py, request) {
  if (modelLoaded || !request.params || request.params.input !== "model") return;
  if (!/^check(_plan|_part|_merge)?$/.test(request.op)) return;
  const response = await fetch(new URL("py/facts/probe_qkv.json", base));
  if (!response.ok) throw new Error(`could not load the model's sentence (${response.status})`);
  writeFile(py, "facts/probe_qkv.json", await response.text());
  modelLoaded = true;
}

// What a worker serves: the bundles build.py writes ({files: {path: text}}; the
// first also holds the page languages' catalogs), the module answering requests,
// and what a request may need loaded before it runs.
const SERVES = {
  lab: { bundles: ["py/bundle.json"], module: "lab_api", prepare: labPrepare },
  exercises: {
    bundles: ["py/bundle.json", "py/exercises.json"],
    module: "exercises.runner",
    prepare: null,
    restore: true,
  },
};
const serve = new URL(self.location.href).searchParams.get("serve");
const serves = Object.hasOwn(SERVES, serve) ? SERVES[serve] : null;

// The worker runs under the CSP its own response carries (build.py's server
// sends it); tell the page about any violation, which it would not otherwise see.
self.addEventListener("securitypolicyviolation", (e) => {
  post({ type: "csp-violation", directive: e.effectiveDirective, blocked: e.blockedURI, where: "worker" });
});

function progress(step, stage, percent) {
  post({ type: "progress", step, stage, percent });
}

function messageOf(err) {
  return String(err && err.message ? err.message : err);
}

const shipped = new Map(); // "/cannery/" + path -> text: every file the bundles (and labPrepare) wrote

/** Put /cannery back to exactly the shipped files: remove what is not one of them
 *  (a file a Run added, a link, a folder in a file's place), write each of them again. */
function restoreFiles(py) {
  const FS = py.FS;
  const folders = new Set(["/cannery"]);
  for (const path of shipped.keys()) {
    for (let i = path.indexOf("/", 1); i > 0; i = path.indexOf("/", i + 1)) folders.add(path.slice(0, i));
  }
  const sweep = (dir) => {
    for (const name of FS.readdir(dir)) {
      if (name === "." || name === "..") continue;
      const path = dir + "/" + name;
      const stat = FS.lstat(path);
      if (FS.isDir(stat.mode) && folders.has(path)) sweep(path);
      else if (FS.isDir(stat.mode)) FS.rmdir(removeAll(py, path));
      else if (!FS.isFile(stat.mode) || !shipped.has(path)) FS.unlink(path);
    }
  };
  try {
    if (!FS.isDir(FS.lstat("/cannery").mode)) FS.unlink("/cannery");
  } catch (_) {
    /* gone: written again below */
  }
  try {
    sweep("/cannery");
  } catch (_) {
    /* written again below */
  }
  for (const [path, text] of shipped) writeFile(py, path.slice("/cannery/".length), text);
}

/** Empty folder ``path`` (recursively); returns it, for FS.rmdir. */
function removeAll(py, path) {
  const FS = py.FS;
  for (const name of FS.readdir(path)) {
    if (name === "." || name === "..") continue;
    const inner = path + "/" + name;
    if (FS.isDir(FS.lstat(inner).mode)) FS.rmdir(removeAll(py, inner));
    else FS.unlink(inner);
  }
  return path;
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
  const full = "/cannery/" + path;
  try {
    if (!py.FS.isFile(py.FS.lstat(full).mode)) {
      if (py.FS.isDir(py.FS.lstat(full).mode)) py.FS.rmdir(removeAll(py, full));
      else py.FS.unlink(full);
    }
  } catch (_) {
    /* not there yet */
  }
  py.FS.writeFile(full, text);
  shipped.set(full, text);
}

// Pyodide 314 swallows a failed download of its WebAssembly (it logs
// console.warn("wasm instantiation failed!") and never settles), which would
// leave the page waiting for ever on a patchy connection. Turn that into an error.
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

async function fetchBundle(rel) {
  const response = await fetch(new URL(rel, base));
  if (!response.ok)
    throw new Error(_("could not load {file} ({status})", { file: rel, status: String(response.status) }));
  return await response.json();
}

/** Start Python and load what this worker serves; resolves to {py, handle}. */
async function boot() {
  i18n = await import("./i18n.js");
  const { usePageLanguage } = await import("./py-locale.js");
  if (!serves) throw new Error(`worker.js serves "lab" or "exercises", not ${JSON.stringify(serve)}`);
  progress("python", _("Starting Python (Pyodide) in this page…"), 10);
  const watch = wasmFailureWatch();
  let py;
  try {
    py = await Promise.race([loadPyodide({ indexURL: new URL("vendor/pyodide/", base).href }), watch.failed]);
  } finally {
    watch.stop();
  }
  progress("files", _("Loading the emulator…"), 80);
  const bundles = await Promise.all(serves.bundles.map(fetchBundle));
  py.FS.mkdirTree("/cannery");
  for (const bundle of bundles) for (const [path, text] of Object.entries(bundle.files)) writeFile(py, path, text);
  py.runPython("import sys\nsys.path.insert(0, '/cannery')");
  usePageLanguage(py, bundles[0]);
  const handle = py.pyimport(serves.module).handle_json;
  progress("ready", _("Python is ready."), 100);
  return { py, handle };
}

/** JSON.stringify's replacer: inf, -inf and NaN as the strings Python's float() reads back. */
function nonFinite(key, value) {
  if (typeof value !== "number" || Number.isFinite(value)) return value;
  if (Number.isNaN(value)) return "nan";
  return value > 0 ? "inf" : "-inf";
}

// Boot at once: the page starts this worker only when the learner reaches for
// the lab or opens an exercise, so Python is usually ready by the first press.
const booting = boot();
booting.catch((err) => progress("failed", messageOf(err), 0));

// The page's first message: its port. Later messages on the worker itself (learner
// code may post some to its own worker) are ignored.
function onFirstMessage(event) {
  if (port || !event.data || event.data.type !== "port" || !(event.data.port instanceof MessagePort)) return;
  port = event.data.port;
  port.onmessage = onRequest;
  for (const message of early.splice(0)) apply(portPost, port, [message]);
}
self.addEventListener("message", onFirstMessage);

async function onRequest(event) {
  const { id, request } = event.data;
  let python;
  try {
    python = await booting;
  } catch (err) {
    post({ type: "reply", id, error: { boot: true, message: messageOf(err) } });
    return;
  }
  post({ type: "started", id });
  if (fatal) {
    post({ type: "reply", id, error: { boot: false, fatal: true, stack: false, message: fatal } });
    return;
  }
  try {
    if (serves.restore) restoreFiles(python.py);
    if (serves.prepare) await serves.prepare(python.py, request);
    const text = python.handle(apply(stringifyJson, JSON, [request, nonFinite]));
    if (typeof text !== "string") throw new Error(`Python answered ${typeof text}, not JSON text`);
    post({ type: "reply", id, reply: apply(parseJson, JSON, [text]) });
  } catch (err) {
    // Pyodide's C stack lives inside the browser's: code nested too deeply for it (repr or
    // json.dumps of a list in a list 5,000 times over) ends in "Maximum call stack size
    // exceeded", and Python is dead from then on ("Pyodide already fatally failed"). Say so,
    // so that the page starts a fresh worker (worker-client.js) instead of asking this one again.
    const stack = err instanceof RangeError || /Maximum call stack size exceeded/.test(messageOf(err));
    if (stack || (err && err.pyodide_fatal_error) || /fatally failed/.test(messageOf(err))) fatal = messageOf(err);
    post({ type: "reply", id, error: { boot: false, fatal: Boolean(fatal), stack, message: messageOf(err) } });
  }
}
