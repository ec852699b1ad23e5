// The one schema of a progress file: what localStorage holds, what "Export
// progress" writes, what "Import progress" and the class table read. Every
// reader goes through validate(); nothing else decides what a good file is.
//
// A file (version 2):
//   {version: 2, steps: {"SLUG/STEP": record, ...}, name?: text, exported?: time}
// A step record holds only the fields of STEP_FIELDS, each of its type (a record
// may leave any of them out); fields this schema does not name are kept as
// they are, so a file from a later site still reads as far as it goes.
// Version 0 (before versions): {passed: ["SLUG/STEP", ...], code: {"SLUG/STEP": text}},
// migrated here. Version 1 had no afterReveal: a Predict step passed once its answers had
// been shown (revealed) migrates as passed after the reveal, the one reading that a
// version 1 record cannot contradict. A message names the field that is wrong, e.g.
// steps["online-softmax/scratch"].code should be text, not a number (5).
import { _ } from "../i18n.js";

export const VERSION = 2;

/** What each field of a step record holds. */
export const STEP_FIELDS = {
  code: "text", // the editor's content
  passed: "flag", // the step's tests passed (or, run elsewhere, the learner ticked it)
  passedCode: "text", // the code that last passed
  passedAt: "time", // when it last passed (ISO 8601)
  checks: "count", // Check presses
  fails: "count", // failed checks
  hints: "count", // hints shown
  offered: "flag", // the solution was offered
  answer: "answer", // a form step's fields: {name: text} or {bug: [test names]}
  sentence: "text", // the Probe step's sentence
  selfAssessed: "flag", // the learner judged it themselves
  answerShown: "flag", // "Show our answer" was pressed
  revealed: "flag", // a Predict step: its answers were shown ("Show the answers", or a Check of a whole prediction)
  firstAnswer: "answer", // a Predict step: the first whole prediction Checked, the one that grades it
  afterReveal: "flag", // a Predict step: passed, but only after its answers were shown (not by the first prediction)
};

/** What a step record says of the step: "passed", "revealed" (passed after the reveal) or "todo". */
export function stepState(record) {
  if (!record || !record.passed) return "todo";
  return record.afterReveal ? "revealed" : "passed";
}

/** The largest progress file any reader opens, in bytes: a larger one is refused before it is read. */
export const FILE_MAX_BYTES = 4 * 1024 * 1024;

/** A learner's name in a file: at most this many characters. */
export const NAME_MAX = 200;

// A step id as the pages write it: "online-softmax/scratch" (content ids, never "__proto__").
const STEP_ID = /^[a-z0-9][a-z0-9-]*\/[a-z0-9][a-z0-9-]*$/;
// An instant in ISO 8601 (RFC 3339 section 5.6), with its offset: 2025-03-01T14:05:00Z, …+09:00.
const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|([+-])(\d{2}):(\d{2}))$/;

/** The instant an ISO 8601 time names, in ms since 1970 (UTC), or NaN when it names no real
 * time: not the form, a day past its month's end (2025-02-30), an hour past 23, an offset past 23:59. */
export function instant(text) {
  const m = typeof text === "string" ? ISO_TIME.exec(text) : null;
  if (!m) return NaN;
  const [year, month, day, hour, minute, second, , offH, offM] = m.slice(1).map((x) => (x === undefined ? 0 : +x));
  const days = new Date(Date.UTC(year, month, 0)).getUTCDate(); // day 0 of the next month: this month's last
  const real = month >= 1 && month <= 12 && day >= 1 && day <= days && hour <= 23 && minute <= 59 && second <= 59;
  if (!real || offH > 23 || offM > 59) return NaN;
  return Date.parse(text);
}

/** Raised for a file that does not follow the schema; its message names the field. */
export class SchemaError extends Error {
  constructor(field, message) {
    super(message);
    this.name = "SchemaError";
    this.field = field;
  }
}

function found(value) {
  const shown = (text) => (text.length > 24 ? text.slice(0, 23) + "…" : text);
  if (value === null) return _("null");
  if (Array.isArray(value)) return _("a list");
  if (typeof value === "object") return _("a table");
  if (typeof value === "string") return _("text ({value})", { value: shown(JSON.stringify(value)) });
  if (typeof value === "number") return _("a number ({value})", { value: shown(String(value)) });
  return String(value); // true or false
}

const isTable = (x) => x !== null && typeof x === "object" && !Array.isArray(x);

function fail(field, rule, value) {
  const p = { field, found: found(value), max: NAME_MAX, example: "2025-03-01T14:05:00Z" };
  const messages = {
    text: _("{field} should be text, not {found}", p),
    flag: _("{field} should be true or false, not {found}", p),
    count: _("{field} should be a whole number, 0 or more, not {found}", p),
    time: _("{field} should be a date and time such as {example}, not {found}", p),
    answer: _("{field} should be a table of answers (text, or lists of text), not {found}", p),
    table: _("{field} should be a table, not {found}", p),
    steps: _("{field} should be a table of step records keyed by step id, not {found}", p),
    list: _("{field} should be a list of step ids, not {found}", p),
    id: _("{field} is not a step id (SLUG/STEP, in small letters, digits and hyphens)", p),
    long: _("{field} is longer than {max} characters", p),
    missing: _("{field} is missing", p),
  };
  return new SchemaError(field, messages[rule]);
}

function checkValue(field, rule, value) {
  const ok = {
    text: typeof value === "string",
    flag: typeof value === "boolean",
    count: Number.isInteger(value) && value >= 0,
    time: !Number.isNaN(instant(value)),
    answer:
      isTable(value) &&
      Object.values(value).every(
        // null: a bug of Break it's Predict with no prediction yet
        (v) => v === null || typeof v === "string" || (Array.isArray(v) && v.every((x) => typeof x === "string")),
      ),
  }[rule];
  if (!ok) throw fail(field, rule, value);
}

const stepField = (key) => `steps[${JSON.stringify(key)}]`;

/** Check one step record; returns it unchanged or throws SchemaError. */
export function checkRecord(key, record) {
  const where = stepField(key);
  if (!STEP_ID.test(key)) throw fail(where, "id", key);
  if (!isTable(record)) throw fail(where, "table", record);
  for (const [name, rule] of Object.entries(STEP_FIELDS)) {
    if (Object.hasOwn(record, name)) checkValue(`${where}.${name}`, rule, record[name]);
  }
  return record;
}

// v0 (unversioned) → v1, after checking the v0 fields.
function fromVersion0(old) {
  const steps = Object.create(null);
  if (Object.hasOwn(old, "passed")) {
    if (!Array.isArray(old.passed) || !old.passed.every((k) => typeof k === "string"))
      throw fail("passed", "list", old.passed);
    for (const [i, key] of old.passed.entries()) {
      if (!STEP_ID.test(key)) throw fail(`passed[${i}]`, "id", key);
      steps[key] = { passed: true };
    }
  }
  if (Object.hasOwn(old, "code")) {
    if (!isTable(old.code)) throw fail("code", "table", old.code);
    for (const [key, code] of Object.entries(old.code)) {
      if (!STEP_ID.test(key)) throw fail(`code[${JSON.stringify(key)}]`, "id", key);
      if (typeof code !== "string") throw fail(`code[${JSON.stringify(key)}]`, "text", code);
      steps[key] = { ...(steps[key] || {}), code };
    }
  }
  return { version: 1, steps };
}

// v1 → v2: a passed record whose answers had been shown passed after the reveal.
function fromVersion1(old) {
  const steps = Object.create(null); // a key such as "__proto__" stays a key, to be refused as no step id
  for (const [key, record] of Object.entries(old.steps)) {
    const after = isTable(record) && record.passed === true && record.revealed === true && !("afterReveal" in record);
    steps[key] = after ? { ...record, afterReveal: true } : record;
  }
  return { ...old, version: 2, steps };
}

/**
 * Check a parsed progress file and bring it to the current version.
 *
 * strict (an imported file, the class table): the first bad field throws
 * SchemaError. Not strict (what this browser stored): a bad step record is
 * left out of `state` and returned in `setAside` ({key: {record, reason}}),
 * so the other steps still load; a bad top level still throws.
 * Returns {state: {version, steps, name?, exported?}, setAside}.
 */
export function validate(data, { strict = true } = {}) {
  if (!isTable(data))
    throw new SchemaError("", _("the file holds {found}, not a progress table", { found: found(data) }));
  let source = data;
  if (!Object.hasOwn(data, "version")) {
    if (Object.hasOwn(data, "steps")) throw fail("version", "missing");
    if (!Object.hasOwn(data, "passed") && !Object.hasOwn(data, "code")) throw fail("steps", "missing");
    source = fromVersion0(data);
  } else if (!Number.isInteger(data.version) || data.version < 0) {
    throw fail("version", "count", data.version);
  } else if (data.version === 0) {
    source = fromVersion0(data);
  }
  if (!Object.hasOwn(source, "steps")) throw fail("steps", "missing");
  if (!isTable(source.steps)) throw fail("steps", "steps", source.steps);
  if (source.version === 1) source = fromVersion1(source);
  const state = { ...source, version: Math.max(source.version, VERSION), steps: Object.create(null) };
  if (Object.hasOwn(state, "name")) {
    checkValue("name", "text", state.name);
    if (state.name.length > NAME_MAX) throw fail("name", "long", state.name);
  }
  if (Object.hasOwn(state, "exported")) checkValue("exported", "time", state.exported);
  const setAside = {};
  for (const [key, record] of Object.entries(source.steps)) {
    try {
      state.steps[key] = checkRecord(key, record);
    } catch (err) {
      if (strict || !(err instanceof SchemaError)) throw err;
      setAside[key] = { record, reason: err.message };
    }
  }
  state.steps = Object.assign({}, state.steps); // a plain object again, for JSON and for the pages
  return { state, setAside };
}

/** Parse a file's text and validate it (strict); throws SchemaError naming the problem. */
export function parse(text) {
  let data;
  try {
    data = JSON.parse(text);
  } catch {
    throw new SchemaError("", _("the file is not JSON"));
  }
  return validate(data).state;
}
