// The class table (module/class/): a teacher chooses the progress files learners
// exported, and each is read here, in the browser, with the one schema every
// progress reader uses (progress-schema.js). One row per file, each selection adding
// to the table: the learner (the file's name field, else the file's name), steps
// passed of the module's steps, each step's state per exercise (passed, passed after
// the reveal, not yet), and the last pass (the latest instant). The same learner loaded
// twice is flagged on both rows. A file that fails the schema, or is too large to be a
// progress file (refused before it is read), is listed with the reason and leaves the
// other rows alone. The table exports as CSV. Nothing is sent or kept.
import { _, lang, ngettext } from "../i18n.js";
import { FILE_MAX_BYTES, instant, parse, stepState } from "./progress-schema.js";
import { csvText, latest, learnerKey, plainText } from "./progress-files.js";

const section = document.getElementById("class");
const input = document.getElementById("class-files");
const status = document.getElementById("class-status");
const problems = document.getElementById("class-problems");
const body = document.querySelector("#class-table tbody");
const keys = (text) => (text || "").split(" ").filter(Boolean);
const allSteps = keys(section.dataset.steps);
// per exercise: {title, steps: [{key, title}]}
const columns = [...document.querySelectorAll("#class-table thead th[data-steps]")].map((th) => {
  const titles = JSON.parse(th.dataset.titles || "[]");
  return { title: th.textContent, steps: keys(th.dataset.steps).map((key, i) => ({ key, title: titles[i] || key })) };
});
const dates = new Intl.DateTimeFormat(lang, { dateStyle: "medium", timeStyle: "short" });
const MIB = 1024 * 1024;
const rows = []; // {id, file, learner, named, state, text}, in the order chosen
const refused = []; // {file, reason}
let nextId = 0;

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

// A name the page did not write, isolated from the words around it (Unicode UAX 9) and
// without its bidirectional controls.
const isolated = (text, className) => el("bdi", plainText(text), className);

// A translated message with nodes in place of its {name}s: nodes({file: <bdi>}, "{file}: {reason}", ...).
function nodes(message, parts) {
  const out = [];
  let rest = message;
  for (;;) {
    const m = /\{(\w+)\}/.exec(rest);
    if (!m) break;
    out.push(rest.slice(0, m.index), parts[m[1]] ?? m[0]);
    rest = rest.slice(m.index + m[0].length);
  }
  out.push(rest);
  return out.filter((x) => x !== "");
}

const STATE_WORDS = () => ({
  passed: _("passed"),
  revealed: _("passed after the reveal"),
  todo: _("not yet"),
});
const MARK = { passed: "✓", revealed: "◐", todo: "·" };

const stateOf = (state, key) => stepState(state.steps[key]);
const passed = (state, list) => list.filter((k) => stateOf(state, k) !== "todo");
const late = (state, list) => list.filter((k) => stateOf(state, k) === "revealed");
const lastPass = (state) => latest(passed(state, allSteps).map((k) => state.steps[k].passedAt));

// learner key -> rows with it: a key that two rows share is the same learner loaded twice
// (the name in the file, or, for a file with no name, the same text).
function twins() {
  const groups = new Map();
  for (const row of rows) {
    const key = row.named ? `name:${learnerKey(row.learner)}` : `text:${row.text}`;
    groups.set(key, [...(groups.get(key) || []), row]);
  }
  const out = new Map();
  for (const group of groups.values()) {
    if (group.length > 1)
      for (const row of group)
        out.set(
          row.id,
          group.filter((r) => r !== row),
        );
  }
  return out;
}

const sorted = () =>
  [...rows].sort(
    (a, b) => a.learner.localeCompare(b.learner, lang) || a.file.localeCompare(b.file, lang) || a.id - b.id,
  );

function countText(state) {
  const k = passed(state, allSteps).length;
  const r = late(state, allSteps).length;
  const text = _("{k} of {n}", { k, n: allSteps.length });
  return r ? text + " " + _("({r} after the reveal)", { r }) : text;
}

function mark(now) {
  const span = el("span", MARK[now], "class-mark");
  span.setAttribute("aria-hidden", "true");
  return span;
}

function stepList(state, list) {
  const words = STATE_WORDS();
  const ul = el("ul", undefined, "class-steps");
  for (const { key, title } of list) {
    const now = stateOf(state, key);
    const li = el("li");
    li.dataset.state = now;
    li.append(mark(now), " ", title, el("span", `: ${words[now]}`, "visually-hidden"));
    li.title = `${title}: ${words[now]}`;
    ul.append(li);
  }
  return ul;
}

function render() {
  body.replaceChildren();
  const doubles = twins();
  for (const row of sorted()) {
    const { state } = row;
    const tr = el("tr");
    const th = el("th", undefined, "class-learner");
    th.scope = "row";
    const name = isolated(row.learner, "class-name");
    name.title = plainText(row.learner);
    th.append(name);
    const also = doubles.get(row.id);
    if (also) {
      tr.classList.add("class-twice");
      const flag = el("span", undefined, "class-flag");
      const files = also.map((r) => plainText(r.file)).join(", ");
      flag.append(...nodes(_("loaded twice: also in {files}"), { files: isolated(files) }));
      th.append(" ", flag);
    }
    const last = lastPass(state);
    const time = el("td");
    if (last) time.append(Object.assign(el("time", dates.format(new Date(instant(last)))), { dateTime: last }));
    else time.textContent = _("none yet");
    tr.append(th, el("td", countText(state), "class-k"));
    for (const { steps } of columns) {
      const list = steps.map((s) => s.key);
      const cell = el("td", undefined, "wide-only class-exercise");
      cell.append(
        el("span", _("{k} / {n}", { k: passed(state, list).length, n: list.length })),
        stepList(state, steps),
      );
      tr.append(cell);
    }
    const file = el("td", undefined, "wide-only class-file");
    file.append(isolated(row.file));
    tr.append(time, file);
    body.append(tr);
  }
  problems.replaceChildren(
    ...refused.map(({ file, reason }) => {
      const li = el("li");
      li.append(...nodes(_("{file}: {reason}"), { file: isolated(file), reason }));
      return li;
    }),
  );
  problems.hidden = refused.length === 0;
  const n = rows.length;
  status.textContent = n ? ngettext("{n} learner in the table.", "{n} learners in the table.", n) : _("No files yet.");
  if (doubles.size)
    status.textContent +=
      " " + ngettext("{n} row is a learner loaded twice.", "{n} rows are a learner loaded twice.", doubles.size);
  if (refused.length)
    status.textContent += " " + ngettext("{n} file could not be read:", "{n} files could not be read:", refused.length);
}

async function read(file) {
  if (file.size > FILE_MAX_BYTES) {
    // refused before it is read: a file this large is no progress file, and parsing it would stall the page
    const reason = _("it is {size} MiB, and a progress file is at most {max} MiB", {
      size: (file.size / MIB).toFixed(1),
      max: FILE_MAX_BYTES / MIB,
    });
    refused.push({ file: file.name, reason });
    return;
  }
  try {
    const text = await file.text();
    const state = parse(text);
    const named = (state.name || "").trim();
    const learner = named || file.name.replace(/\.json$/i, "");
    rows.push({ id: nextId++, file: file.name, learner, named: Boolean(named), state, text });
  } catch (err) {
    refused.push({ file: file.name, reason: err.message });
  }
}

input.addEventListener("change", async () => {
  const files = [...(input.files || [])];
  input.value = "";
  for (const file of files) await read(file);
  render();
});

document.getElementById("class-clear").addEventListener("click", () => {
  rows.length = 0;
  refused.length = 0;
  render();
});

/** The table as CSV rows: a header, then a row per learner (in the table's order). */
function tableRows() {
  const words = STATE_WORDS();
  const doubles = twins();
  const head = [_("Learner"), _("File"), _("Steps passed"), _("Passed after the reveal"), _("Last pass (UTC)")];
  for (const { title, steps } of columns) for (const s of steps) head.push(`${title}: ${s.title}`);
  head.push(_("Loaded twice"));
  const out = [head];
  for (const row of sorted()) {
    const { state } = row;
    const last = lastPass(state);
    const line = [
      row.learner,
      row.file,
      passed(state, allSteps).length,
      late(state, allSteps).length,
      last ? new Date(instant(last)).toISOString() : "",
    ];
    for (const { steps } of columns) for (const s of steps) line.push(words[stateOf(state, s.key)]);
    line.push(doubles.has(row.id) ? _("yes") : "");
    out.push(line.map(String));
  }
  return out;
}

document.getElementById("class-csv").addEventListener("click", () => {
  if (!rows.length) {
    status.textContent = _("Choose progress files first: the table is empty.");
    return;
  }
  const name = "cannery-class-table.csv";
  // a byte order mark, so that a spreadsheet reads the text as UTF-8
  const url = URL.createObjectURL(new Blob(["\ufeff" + csvText(tableRows())], { type: "text/csv;charset=utf-8" }));
  const a = Object.assign(document.createElement("a"), { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
  status.textContent = ngettext("Exported {n} learner to {file}.", "Exported {n} learners to {file}.", rows.length, {
    file: name,
  });
});

window.cannery = Object.assign(window.cannery || {}, { classTable: { ready: true } });
