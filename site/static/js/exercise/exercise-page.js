// An exercise page: one section per step (Predict, Scratch, ...), each with an
// editor or a small form, Run / Check / Cancel, results, hints one at a time,
// and the solution offered after a pass or three failed checks. Everything the
// learner sees comes from the page's markup (data-msg-* strings, prompts, code).
import { ExerciseRunner } from "./runner.js";
import { createEditor } from "./editor.js";
import * as progress from "./progress.js";
import { fill, setupPanel, updateProgressLine } from "./panel.js";
import { setupWgslStep } from "./wgsl-step.js";

const steps = document.getElementById("steps");
const msg = steps.dataset;
const slug = msg.slug;
const seconds = Number(msg.timeLimit);
const OFFER_AFTER_FAILS = 3;
const sections = [...steps.querySelectorAll("section.step")];
let activeSection = null;
let restoring = false; // set while progress is loaded into the editors (not a learner's edit)

const runner = new ExerciseRunner({
  seconds,
  onBoot: (stage) => {
    if (activeSection && runner.busy && stage === "python") activeSection.querySelector(".step-status").textContent = msg.msgBooting;
  },
});

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function setBusy(section, busy) {
  for (const s of sections) {
    for (const b of s.querySelectorAll(".run-button, .check-button")) b.disabled = busy;
  }
  section.querySelector(".cancel-button").hidden = !busy;
  steps.setAttribute("aria-busy", busy ? "true" : "false");
}

function showState(section) {
  const key = section.dataset.key;
  const record = progress.load().steps[key] || {};
  const state = section.querySelector(".step-state");
  state.textContent = record.passed ? msg.msgPassed : msg.msgTodo;
  state.dataset.state = record.passed ? "passed" : "todo";
  const ladder = document.querySelector(`.ladder-state[data-step="${key}"]`);
  if (ladder) ladder.textContent = record.passed ? `(${msg.msgPassed})` : "";
  if (record.passed || (record.fails || 0) >= OFFER_AFTER_FAILS) section.querySelector(".solution").hidden = false;
  section.querySelector(".next-step").hidden = !record.passed;
  const hints = [...section.querySelectorAll(".hint-item")];
  hints.forEach((h, i) => { h.hidden = i >= (record.hints || 0); });
  const button = section.querySelector(".hint-button");
  const shown = Math.min(record.hints || 0, hints.length);
  button.disabled = shown >= hints.length;
  button.textContent = shown >= hints.length ? msg.msgHintDone : fill(msg.msgHintMore, { k: shown + 1, n: hints.length });
}

function renderPrinted(section, text, error) {
  const box = section.querySelector(".step-output");
  const pre = box.querySelector(".printed");
  pre.textContent = "";
  if (text) pre.append(text);
  if (error) pre.append(el("span", "error-text", (text ? "\n" : "") + error));
  if (!text && !error) pre.textContent = msg.msgNoOutput;
  box.hidden = false;
}

function renderReport(section, report) {
  const box = section.querySelector(".step-results");
  const list = box.querySelector(".results-list");
  list.replaceChildren();
  if (report.error) {
    const li = el("li", "test-result fail");
    li.append(el("p", "result-title", msg.msgDidNotLoad), el("pre", "traceback", report.error));
    list.append(li);
  }
  for (const r of report.results) {
    const li = el("li", `test-result ${r.ok ? "pass" : "fail"}`);
    const title = el("p", "result-title");
    title.append(el("span", "result-mark", r.ok ? msg.msgTestPass : msg.msgTestFail), " ", r.title);
    li.append(title);
    if (!r.ok) {
      li.append(el("p", "result-message", r.message));
      if (r.expected || r.got) {
        const dl = el("dl", "result-values");
        for (const [label, value] of [[msg.msgInput, r.input], [msg.msgExpected, r.expected], [msg.msgGot, r.got]]) {
          if (!value) continue;
          dl.append(el("dt", "", label), el("dd", "", value));
        }
        li.append(dl);
      }
      if (r.traceback) li.append(el("pre", "traceback", r.traceback));
    }
    list.append(li);
  }
  box.hidden = false;
  if (report.output) renderPrinted(section, report.output, null);
}

async function send(section, request, statusText) {
  const status = section.querySelector(".step-status");
  activeSection = section;
  setBusy(section, true);
  status.textContent = runner.ready ? statusText : msg.msgBooting;
  const reply = await runner.request(request);
  setBusy(section, false);
  if (reply.timeout) status.textContent = fill(msg.msgTimeout, { seconds });
  else if (reply.cancelled) status.textContent = msg.msgCancelled;
  else if (reply.boot) status.textContent = fill(msg.msgWorkerFailed, { message: reply.message });
  else if (!reply.ok) status.textContent = reply.message;
  return reply.ok ? reply.result : null;
}

async function check(section, source, extra = {}) {
  const key = section.dataset.key;
  const report = await send(section, { op: "check", slug, step: section.dataset.step, source }, msg.msgChecking);
  if (!report) return;
  renderReport(section, report);
  section.querySelector(".step-status").textContent = report.ok
    ? fill(msg.msgPass, { total: report.total })
    : fill(msg.msgFail, { passed: report.passed, total: report.total });
  progress.update(key, (s) => {
    Object.assign(s, extra);
    s.checks = (s.checks || 0) + 1;
    if (report.ok) {
      s.passed = true;
      s.passedCode = source;
      s.passedAt = new Date().toISOString();
    } else {
      s.fails = (s.fails || 0) + 1;
    }
  });
  refresh();
}

function setupCodeStep(section) {
  const key = section.dataset.key;
  const host = section.querySelector(".editor-host");
  const starter = section.querySelector(".starter-code").textContent;
  const saved = (progress.load().steps[key] || {}).code;
  let timer = null;
  const editor = createEditor(host, {
    doc: saved !== undefined ? saved : starter,
    label: host.dataset.label,
    onChange: (text) => {
      if (restoring) return;
      clearTimeout(timer);
      timer = setTimeout(() => progress.update(key, (s) => { s.code = text; }), 300);
    },
  });
  host.editor = editor;
  const flush = () => { clearTimeout(timer); progress.update(key, (s) => { s.code = editor.value; }); };
  section.querySelector(".run-button").addEventListener("click", async () => {
    flush();
    section.querySelector(".step-results").hidden = true;
    const out = await send(section, { op: "run", source: editor.value }, msg.msgRunning);
    if (!out) return;
    renderPrinted(section, out.output, out.error);
    section.querySelector(".step-status").textContent = out.error ? msg.msgDidNotLoad : msg.msgRan;
  });
  section.querySelector(".check-button").addEventListener("click", () => { flush(); check(section, editor.value); });
  section.querySelector(".restore-button").addEventListener("click", () => { editor.value = starter; flush(); });
}

function setupPredictStep(section) {
  const key = section.dataset.key;
  const form = section.querySelector(".predict-form");
  const answer = (progress.load().steps[key] || {}).answer || {};
  for (const input of form.querySelectorAll("input")) {
    if (answer[input.name] !== undefined) input.value = answer[input.name];
  }
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const values = {};
    for (const input of form.querySelectorAll("input")) values[input.name] = input.value;
    // The checker receives a tiny module; JSON strings are valid Python string literals.
    const source = Object.entries(values).map(([k, v]) => `${k} = ${JSON.stringify(v)}\n`).join("");
    check(section, source, { answer: values });
  });
}

function setupProbeSentence(section) {
  const key = section.dataset.key;
  const area = section.querySelector("#probe-sentence");
  if (!area) return;
  const record = progress.load().steps[key] || {};
  area.value = record.sentence || "";
  const box = section.querySelector(".our-answer");
  const self = section.querySelector("#probe-self");
  self.checked = Boolean(record.selfAssessed);
  box.hidden = !record.answerShown;
  area.addEventListener("input", () => progress.update(key, (s) => { s.sentence = area.value; }));
  section.querySelector(".show-answer").addEventListener("click", () => {
    box.hidden = false;
    progress.update(key, (s) => { s.answerShown = true; });
  });
  self.addEventListener("change", () => progress.update(key, (s) => { s.selfAssessed = self.checked; }));
}

function refresh() {
  sections.forEach(showState);
  updateProgressLine();
}

for (const section of sections) {
  if (section.dataset.kind === "predict") setupPredictStep(section);
  else if (section.dataset.kind === "wgsl") setupWgslStep(section, { send, setBusy, refresh });
  else setupCodeStep(section);
  setupProbeSentence(section);
  section.querySelector(".cancel-button").addEventListener("click", () => runner.cancel());
  section.querySelector(".hint-button").addEventListener("click", () => {
    progress.update(section.dataset.key, (s) => { s.hints = (s.hints || 0) + 1; });
    refresh();
    const shown = [...section.querySelectorAll(".hint-item")].filter((h) => !h.hidden);
    if (shown.length) {
      const last = shown[shown.length - 1];
      last.tabIndex = -1;
      last.focus();
    }
  });
}

setupPanel(() => {
  // progress replaced (import or reset): reload the editors' code from it
  const state = progress.load();
  restoring = true;
  for (const section of sections) {
    const host = section.querySelector(".editor-host");
    if (host && host.editor) {
      const saved = (state.steps[section.dataset.key] || {}).code;
      host.editor.value = saved !== undefined ? saved : section.querySelector(".starter-code").textContent;
    }
  }
  restoring = false;
  for (const section of sections) {
    const record = state.steps[section.dataset.key] || {};
    const form = section.querySelector(".predict-form");
    if (form) for (const input of form.querySelectorAll("input")) input.value = (record.answer || {})[input.name] || "";
    const area = section.querySelector("#probe-sentence");
    if (area) {
      area.value = record.sentence || "";
      section.querySelector("#probe-self").checked = Boolean(record.selfAssessed);
      section.querySelector(".our-answer").hidden = !record.answerShown;
    }
    if (!record.passed && !(record.fails >= OFFER_AFTER_FAILS)) section.querySelector(".solution").hidden = true;
  }
  refresh();
});
refresh();
steps.setAttribute("aria-busy", "false");
window.cannery = Object.assign(window.cannery || {}, { exercise: { runner, ready: true } });
// Boot Python early: the learner reads the prompt while it starts.
runner.start();
