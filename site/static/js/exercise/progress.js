// Progress in this browser only: localStorage under a versioned key.
// Shape (version 1):
//   {version: 1, steps: {"SLUG/STEP": {code, passed, passedCode, passedAt,
//     checks, fails, hints, offered, answer, sentence, selfAssessed}}}
// Step ids are content ids (not file hashes), so progress survives a rebuild
// of the site. Older shapes are migrated on load and on import; a newer one
// (from a later site) is kept untouched and read as far as it goes.
import { _ } from "../i18n.js";

export const VERSION = 1;
export const KEY = `cannery.progress.v${VERSION}`;
// Keys earlier builds used, oldest first, each migrated into the current shape.
const OLD_KEYS = ["cannery.progress"];

const MIGRATIONS = {
  // v0 (unversioned): {passed: ["SLUG/STEP", ...], code: {"SLUG/STEP": "..."}}
  0: (old) => {
    const steps = {};
    for (const key of Array.isArray(old.passed) ? old.passed : []) steps[key] = { passed: true };
    for (const [key, code] of Object.entries(old.code || {}))
      steps[key] = { ...(steps[key] || {}), code: String(code) };
    return { version: 1, steps };
  },
};

export function empty() {
  return { version: VERSION, steps: {} };
}

/** Bring any stored or imported object to the current version; throws on garbage. */
export function migrate(data) {
  if (!data || typeof data !== "object" || Array.isArray(data)) throw new Error(_("not a progress object"));
  let version = Number.isInteger(data.version) ? data.version : 0;
  let out = data;
  while (version < VERSION) {
    out = MIGRATIONS[version](out);
    version = out.version;
  }
  if (!out.steps || typeof out.steps !== "object") throw new Error(_("no steps in it"));
  return out;
}

function safeParse(text) {
  try {
    return migrate(JSON.parse(text));
  } catch (_) {
    return null;
  }
}

export function load() {
  let raw = null;
  try {
    raw = localStorage.getItem(KEY);
  } catch (_) {
    return empty();
  }
  if (raw) return safeParse(raw) || empty();
  for (const old of OLD_KEYS) {
    const text = localStorage.getItem(old);
    const data = text && safeParse(text);
    if (data) {
      save(data);
      localStorage.removeItem(old);
      return data;
    }
  }
  return empty();
}

export function save(state) {
  try {
    localStorage.setItem(KEY, JSON.stringify(state));
  } catch (_) {
    /* private mode or full: progress lasts this visit only */
  }
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
export function recordCheck(key, passed, code, extra = {}) {
  return update(key, (s) => {
    Object.assign(s, extra);
    s.checks = (s.checks || 0) + 1;
    if (passed) {
      s.passed = true;
      s.passedCode = code;
      s.passedAt = new Date().toISOString();
    } else {
      s.fails = (s.fails || 0) + 1;
    }
  });
}

export function passedKeys(state, keys) {
  return keys.filter((k) => state.steps[k] && state.steps[k].passed);
}

export function exportText() {
  return JSON.stringify({ ...load(), exported: new Date().toISOString() }, null, 1);
}

/** Replace progress with an exported file's contents; throws with a reason. */
export function importText(text) {
  let data;
  try {
    data = JSON.parse(text);
  } catch (_) {
    throw new Error(_("the file is not JSON"));
  }
  const state = migrate(data);
  delete state.exported;
  state.version = Math.max(state.version, VERSION);
  save(state);
  return state;
}

export function reset() {
  try {
    localStorage.removeItem(KEY);
    for (const old of OLD_KEYS) localStorage.removeItem(old);
  } catch (_) {
    /* nothing stored */
  }
  save(empty());
}
