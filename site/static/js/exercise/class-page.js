// The class table (module/class/): a teacher chooses the progress files learners
// exported, and each is read here, in the browser, with the one schema every
// progress reader uses (progress-schema.js). One row per file: the learner (the
// file's name field, else the file's name), steps passed of the module's steps,
// per exercise, and the last pass. A file that fails the schema is listed with
// the field at fault and leaves the other rows alone. Nothing is sent or kept.
import { _, lang, ngettext } from "../i18n.js";
import { parse } from "./progress-schema.js";

const section = document.getElementById("class");
const input = document.getElementById("class-files");
const status = document.getElementById("class-status");
const problems = document.getElementById("class-problems");
const body = document.querySelector("#class-table tbody");
const keys = (text) => (text || "").split(" ").filter(Boolean);
const allSteps = keys(section.dataset.steps);
const columns = [...document.querySelectorAll("#class-table thead th[data-steps]")].map((th) => keys(th.dataset.steps));
const dates = new Intl.DateTimeFormat(lang, { dateStyle: "medium", timeStyle: "short" });
const rows = new Map(); // file name -> {learner, state}
const refused = new Map(); // file name -> reason

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

const passed = (state, list) => list.filter((k) => state.steps[k] && state.steps[k].passed);

function lastPass(state) {
  const times = passed(state, allSteps)
    .map((k) => state.steps[k].passedAt)
    .filter(Boolean)
    .sort();
  return times.length ? times[times.length - 1] : null;
}

function render() {
  body.replaceChildren();
  const sorted = [...rows.entries()].sort(
    ([fa, a], [fb, b]) => a.learner.localeCompare(b.learner, lang) || fa.localeCompare(fb, lang),
  );
  for (const [file, { learner, state }] of sorted) {
    const tr = el("tr");
    const th = el("th", learner);
    th.scope = "row";
    const last = lastPass(state);
    const time = el("td");
    if (last) time.append(Object.assign(el("time", dates.format(new Date(last))), { dateTime: last }));
    else time.textContent = _("none yet");
    tr.append(th, el("td", _("{k} of {n}", { k: passed(state, allSteps).length, n: allSteps.length }), "class-k"));
    for (const list of columns) {
      tr.append(el("td", _("{k} / {n}", { k: passed(state, list).length, n: list.length }), "wide-only"));
    }
    tr.append(time, el("td", file, "wide-only class-file"));
    body.append(tr);
  }
  problems.replaceChildren(
    ...[...refused.entries()].map(([file, reason]) => el("li", _("{file}: {reason}", { file, reason }))),
  );
  problems.hidden = refused.size === 0;
  const n = rows.size;
  status.textContent = n ? ngettext("{n} learner in the table.", "{n} learners in the table.", n) : _("No files yet.");
  if (refused.size)
    status.textContent += " " + ngettext("{n} file could not be read:", "{n} files could not be read:", refused.size);
}

input.addEventListener("change", async () => {
  for (const file of input.files || []) {
    try {
      const state = parse(await file.text());
      const learner = (state.name || "").trim() || file.name.replace(/\.json$/i, "");
      rows.set(file.name, { learner, state });
      refused.delete(file.name);
    } catch (err) {
      refused.set(file.name, err.message);
      rows.delete(file.name);
    }
  }
  input.value = "";
  render();
});

document.getElementById("class-clear").addEventListener("click", () => {
  rows.clear();
  refused.clear();
  render();
});

window.cannery = Object.assign(window.cannery || {}, { classTable: { ready: true } });
