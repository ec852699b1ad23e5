// Progress in this browser only: localStorage under a versioned key, in the
// shape progress-schema.js declares (the one schema every reader checks):
//   {version: 2, name?, steps: {"SLUG/STEP": {code, passed, passedCode, passedAt,
//     checks, fails, hints, offered, answer, sentence, selfAssessed, answerShown,
//     revealed, firstAnswer, afterReveal}}}
// Step ids are content ids (not file hashes), so progress survives a rebuild
// of the site. Older shapes are migrated on load and on import; a newer one
// (from a later site) is read as far as it goes.
//
// What is stored is checked on every load. A step record that does not follow
// the schema is set aside (moved, as it was, under ASIDE_KEY), so that step
// starts again and every other step still loads; stored text that is not a
// progress file at all is set aside whole. setAsideNotices() says what was.
import { _ } from "../i18n.js";
import { NAME_MAX, VERSION, parse, validate } from "./progress-schema.js";
import { exportFileName, mergeStates } from "./progress-files.js";

export { VERSION };
// The storage slot (named by its first version); the record in it carries its own version,
// migrated on every load (progress-schema.js), so a version 1 record here still loads.
export const KEY = "cannery.progress.v1";
/** What an import replaced or merged into, kept so that it can be restored: the record as it was. */
export const BEFORE_IMPORT_KEY = `${KEY}.before-import`;
/** Where records that failed the schema are kept: a JSON list of {from, step, reason, at, data}. */
export const ASIDE_KEY = `${KEY}.set-aside`;
// Keys earlier builds used, oldest first, each migrated into the current shape.
const OLD_KEYS = ["cannery.progress"];

const notices = []; // [{step, reason}] set aside during this visit (step null: the whole file)
// Storage full or refused (a private window): the progress of this visit, kept here
// instead, newer than anything stored; null while storage takes every write.
let memory = null;
// What the last import replaced, when storage refused to keep it: this visit only.
let memoryBefore = null;

export function empty() {
  return { version: VERSION, steps: {} };
}

function keepAside(from, entries) {
  try {
    let kept = [];
    try {
      kept = JSON.parse(localStorage.getItem(ASIDE_KEY) || "[]");
    } catch {
      kept = [];
    }
    if (!Array.isArray(kept)) kept = [];
    const at = new Date().toISOString();
    for (const e of entries) kept.push({ from, step: e.step, reason: e.reason, at, data: e.data });
    localStorage.setItem(ASIDE_KEY, JSON.stringify(kept));
    return true;
  } catch {
    return false; // full or refused: the record stays where it was
  }
}

function tell(entries) {
  notices.push(...entries.map(({ step, reason }) => ({ step, reason })));
  window.dispatchEvent(new CustomEvent("cannery:progress-set-aside", { detail: notices }));
}

// The stored text under `from`, checked: the good part of it, with the rest set aside.
function fromStored(text, from) {
  let result;
  try {
    result = validate(JSON.parse(text), { strict: false });
  } catch (err) {
    const entry = { step: null, reason: err instanceof SyntaxError ? _("it is not JSON") : err.message };
    if (keepAside(from, [{ ...entry, data: text }])) localStorage.removeItem(from);
    tell([entry]);
    return empty();
  }
  const bad = Object.entries(result.setAside).map(([step, { record, reason }]) => ({ step, reason, data: record }));
  if (bad.length) {
    if (keepAside(from, bad)) write(result.state);
    tell(bad);
  }
  return result.state;
}

/** What load() set aside during this visit: [{step (null: all of it), reason}]. */
export function setAsideNotices() {
  return [...notices];
}

export function load() {
  if (memory) return JSON.parse(JSON.stringify(memory));
  let raw = null;
  try {
    raw = localStorage.getItem(KEY);
  } catch (_) {
    return empty();
  }
  if (raw) return fromStored(raw, KEY);
  for (const old of OLD_KEYS) {
    const text = localStorage.getItem(old);
    if (!text) continue;
    const data = fromStored(text, old);
    save(data);
    localStorage.removeItem(old);
    return data;
  }
  return empty();
}

function write(state) {
  try {
    localStorage.setItem(KEY, JSON.stringify(state));
    memory = null;
  } catch (_) {
    // private mode or full: progress lasts this visit only, kept in memory (load() reads
    // it from now on), and the page says so once (panel.js offers the export)
    const first = memory === null;
    memory = JSON.parse(JSON.stringify(state));
    if (first) window.dispatchEvent(new CustomEvent("cannery:progress-unsaved"));
  }
}

/** Whether this visit's progress is kept in memory only, as storage refused the last write. */
export function unsaved() {
  return memory !== null;
}

export function save(state) {
  write(state);
  window.dispatchEvent(new CustomEvent("cannery:progress", { detail: state }));
}

export function step(state, key) {
  if (!state.steps[key]) state.steps[key] = {};
  return state.steps[key];
}

/** Change one step's record and save. */
export function update(key, change) {
  const state = load();
  change(step(state, key));
  save(state);
  return state;
}

/** Count one Check of a step: passed records its code and time, a fail adds to its fails.
 *  extra: more fields for the record (a form's answer). */
// countFail: false for a Check that cannot pass yet and must not bring the solution closer
// (Break it's Predict before every bug has a prediction).
export function recordCheck(key, passed, code, extra = {}, countFail = true) {
  return update(key, (s) => {
    Object.assign(s, extra);
    s.checks = (s.checks || 0) + 1;
    if (passed) {
      s.passed = true;
      s.passedCode = code;
      s.passedAt = new Date().toISOString();
    } else if (countFail) {
      s.fails = (s.fails || 0) + 1;
    }
  });
}

/**
 * Count one Check of a Predict step, graded by the first whole prediction: a Check of a
 * whole prediction (`committed`) shows what it got wrong, so the first is kept as
 * firstAnswer, and a pass after it (or after "Show the answers", `revealed`) is recorded
 * as passed after the reveal (afterReveal). A pass by the first prediction stays one.
 */
export function recordPrediction(key, ok, code, answer, committed) {
  return update(key, (s) => {
    s.answer = answer;
    s.checks = (s.checks || 0) + 1;
    if (!committed) return;
    const first = !s.revealed && s.firstAnswer === undefined;
    const clean = s.passed === true && !s.afterReveal;
    if (first) s.firstAnswer = answer;
    if (ok) {
      s.passed = true;
      s.passedCode = code;
      s.passedAt = new Date().toISOString();
      s.afterReveal = !(first || clean);
    } else {
      s.fails = (s.fails || 0) + 1;
    }
  });
}

export function passedKeys(state, keys) {
  return keys.filter((k) => state.steps[k] && state.steps[k].passed);
}

/** The learner's name as stored (written into exported files), or "". */
export function name() {
  return load().name || "";
}

/** Store the learner's name (at most NAME_MAX characters; "" removes it). */
export function setName(text) {
  const state = load();
  const value = String(text).trim().slice(0, NAME_MAX);
  if (value) state.name = value;
  else delete state.name;
  save(state);
}

export function exportText() {
  return JSON.stringify({ ...load(), exported: new Date().toISOString() }, null, 1);
}

/** The file name an export is saved under, from the stored name (progress-files.js). */
export function exportName() {
  return exportFileName(name());
}

/** Read an exported file's text (throws SchemaError naming the bad field); nothing is stored. */
export function readFile(text) {
  const state = parse(text);
  delete state.exported;
  return state;
}

/** Import a file read by readFile: how "merge" (steps kept, the further record wins) or
 * "replace". What was there before is kept under BEFORE_IMPORT_KEY for restoreBeforeImport. */
export function importState(state, how) {
  const before = load();
  try {
    localStorage.setItem(BEFORE_IMPORT_KEY, JSON.stringify(before));
  } catch (_) {
    memoryBefore = before; // storage refused: kept for this visit
  }
  const next = how === "merge" ? mergeStates(before, state) : state;
  save(next);
  return next;
}

/** The record an import replaced, or null. */
export function beforeImport() {
  if (memoryBefore) return memoryBefore;
  try {
    const text = localStorage.getItem(BEFORE_IMPORT_KEY);
    return text ? validate(JSON.parse(text), { strict: false }).state : null;
  } catch (_) {
    return null;
  }
}

/** Put back what the last import replaced; returns it, or null when there is none. */
export function restoreBeforeImport() {
  const before = beforeImport();
  if (!before) return null;
  memoryBefore = null;
  try {
    localStorage.removeItem(BEFORE_IMPORT_KEY);
  } catch (_) {
    /* nothing stored */
  }
  save(before);
  return before;
}

/** Replace progress with an exported file's contents; throws with a reason
 * that names the bad field, before anything stored is touched. */
export function importText(text) {
  return importState(readFile(text), "replace");
}

export function reset() {
  memory = null;
  memoryBefore = null;
  try {
    localStorage.removeItem(KEY);
    localStorage.removeItem(ASIDE_KEY);
    localStorage.removeItem(BEFORE_IMPORT_KEY);
    for (const old of OLD_KEYS) localStorage.removeItem(old);
  } catch (_) {
    /* nothing stored */
  }
  save(empty());
}
