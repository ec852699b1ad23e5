// An exercise page: one section per step (Predict, Scratch, ...), each with an
// editor or a small form, Run / Check / Cancel, results, hints one at a time,
// and the solution offered after a pass or three failed checks. Prompts and code
// come from the page's markup; the words this script writes go through _()
// (../i18n.js), in the page's language.
import { ExerciseRunner } from "./runner.js";
import { createStepEditor } from "./editor.js";
import * as progress from "./progress.js";
import { setupPanel, showSetAside, updateProgressLine } from "./panel.js";
import { _ } from "../i18n.js";
import { setupWgslStep } from "./wgsl-step.js";
import { stepState } from "./progress-schema.js";

const steps = document.getElementById("steps");
const slug = steps.dataset.slug;
const seconds = Number(steps.dataset.timeLimit);
const OFFER_AFTER_FAILS = 3;
const sections = [...steps.querySelectorAll("section.step:not([data-kind='offline'])")];
const offline = steps.querySelector("section[data-kind='offline']");
let activeSection = null;
let restoring = false; // set while progress is loaded into the editors (not a learner's edit)

const runner = new ExerciseRunner({
  seconds,
  onBoot: (stage) => {
    if (activeSection && runner.busy && stage === "python")
      activeSection.querySelector(".step-status").textContent = _(
        "Starting Python in this page (the first time takes a few seconds)…",
      );
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
    for (const b of s.querySelectorAll(".run-button, .check-button, .try-button, .reveal-button")) b.disabled = busy;
  }
  section.querySelector(".cancel-button").hidden = !busy;
  steps.setAttribute("aria-busy", busy ? "true" : "false");
}

function showState(section) {
  const key = section.dataset.key;
  const record = progress.load().steps[key] || {};
  const state = section.querySelector(".step-state");
  const now = stepState(record);
  state.textContent = { passed: _("passed"), revealed: _("passed after the reveal"), todo: _("not passed yet") }[now];
  state.dataset.state = now === "todo" ? "todo" : "passed";
  const ladder = document.querySelector(`.ladder-state[data-step="${key}"]`);
  if (ladder) ladder.textContent = record.passed ? _("(passed)") : "";
  if (record.passed || record.revealed || (record.fails || 0) >= OFFER_AFTER_FAILS)
    section.querySelector(".solution").hidden = false;
  section.querySelector(".next-step").hidden = !record.passed;
  showHints(section, record.hints || 0);
}

function showHints(section, count) {
  const hints = [...section.querySelectorAll(".hint-item")];
  hints.forEach((h, i) => {
    h.hidden = i >= count;
  });
  const button = section.querySelector(".hint-button");
  const shown = Math.min(count, hints.length);
  button.disabled = shown >= hints.length;
  button.textContent =
    shown >= hints.length ? _("No more hints") : _("Show a hint ({k} of {n})", { k: shown + 1, n: hints.length });
}

function renderPrinted(section, text, error) {
  const box = section.querySelector(".step-output");
  const pre = box.querySelector(".printed");
  pre.textContent = "";
  if (text) pre.append(text);
  if (error) pre.append(el("span", "error-text", (text ? "\n" : "") + error));
  if (!text && !error) pre.textContent = _("(nothing printed)");
  box.hidden = false;
}

function renderReport(section, report) {
  const box = section.querySelector(".step-results");
  const list = box.querySelector(".results-list");
  list.replaceChildren();
  if (report.error) {
    const li = el("li", "test-result fail");
    li.append(el("p", "result-title", _("Your code did not load:")), el("pre", "traceback", report.error));
    list.append(li);
  }
  for (const r of report.results) {
    const li = el("li", `test-result ${r.ok ? "pass" : "fail"}`);
    const title = el("p", "result-title");
    title.append(el("span", "result-mark", r.ok ? _("pass") : _("fail")), " ", r.title);
    li.append(title);
    if (!r.ok) {
      li.append(el("p", "result-message", r.message));
      if (r.expected || r.got) {
        const dl = el("dl", "result-values");
        for (const [label, value] of [
          [_("Input"), r.input],
          [_("Expected"), r.expected],
          [_("Got"), r.got],
        ]) {
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
  status.textContent = runner.ready
    ? statusText
    : _("Starting Python in this page (the first time takes a few seconds)…");
  const reply = await runner.request(request);
  setBusy(section, false);
  if (reply.timeout)
    status.textContent = _(
      "Stopped after {seconds} s: is there a loop that never ends? Python was restarted; your code is still here.",
      { seconds },
    );
  else if (reply.unanswered)
    status.textContent = _(
      "Python stopped answering (code that calls js.close() ends it). Python was restarted; your code is still here: press again.",
    );
  else if (reply.cancelled) status.textContent = _("Cancelled. Python was restarted; your code is still here.");
  else if (reply.boot)
    status.textContent = _("Python could not start in this page: {message}. Reload the page to try again.", {
      message: reply.message,
    });
  else if (!reply.ok) status.textContent = reply.message;
  if (!reply.ok) clearVerdict(section);
  return reply.ok ? reply.result : null;
}

/** Hide the last verdict and what the last run printed: a request that stopped, or whose
 *  Python died, has neither, and the previous run's would read as this one's. */
function clearVerdict(section) {
  const results = section.querySelector(".step-results");
  if (results) {
    results.hidden = true;
    const list = results.querySelector(".results-list");
    if (list) list.replaceChildren();
  }
  const output = section.querySelector(".step-output");
  if (output) {
    output.hidden = true;
    const pre = output.querySelector(".printed");
    if (pre) pre.textContent = "";
  }
}

// extra: fields saved with the step's record; countFail: false for a Check that cannot
// pass yet and must not bring the solution closer (Break it's Predict before every bug has
// a prediction). prediction: for a Predict step, {answer, committed (a whole prediction)}:
// its grade is the first whole prediction, and a later pass is one after the reveal.
async function check(section, source, extra = {}, countFail = true, prediction = null) {
  const key = section.dataset.key;
  const report = await send(section, { op: "check", slug, step: section.dataset.step, source }, _("Checking…"));
  if (!report) return null;
  renderReport(section, report);
  const state = prediction
    ? progress.recordPrediction(key, report.ok, source, prediction.answer, prediction.committed)
    : progress.recordCheck(key, report.ok, source, extra, countFail);
  const late = report.ok && stepState(state.steps[key]) === "revealed";
  section.querySelector(".step-status").textContent = late
    ? _(
        "All {total} tests pass. Step passed after the reveal: the grade is your first whole prediction, and that one missed.",
        { total: report.total },
      )
    : report.ok
      ? _("All {total} tests pass. Step passed.", { total: report.total })
      : _("{passed} of {total} tests pass.", { passed: report.passed, total: report.total });
  refresh();
  return report;
}

/** Ask the exercise's judge module (exercise.toml `judge`, e.g. exercises.breakit) one question. */
function judge(section, request, statusText) {
  return send(section, { op: "judge", slug, request }, statusText);
}

// A Python literal for a dict of JSON values: JSON strings, numbers and lists are Python
// literals too, and null is written None.
function pyDict(name, values) {
  const items = Object.entries(values).map(([k, v]) => `    ${k}: ${v === null ? "None" : JSON.stringify(v)},`);
  return `${name} = {\n${items.join("\n")}\n}\n`;
}

// Break it, Predict: a checkbox per weak test under each bug's diff, and "none of them". A bug
// with nothing ticked has no prediction yet (null). Check runs the step's tests (for progress)
// and asks the judge: it shows the truth only once every bug has a prediction, or when the
// learner asks for the answers ("Show the answers"); before that, which predictions are saved.
function setupPredictTestsStep(section) {
  const key = section.dataset.key;
  const form = section.querySelector(".predict-tests-form");
  const bugs = [...form.querySelectorAll("fieldset.bug")];
  const values = () => {
    const out = {};
    for (const fs of bugs) {
      const ticked = [...fs.querySelectorAll("input[type=checkbox]:not([data-none]):checked")].map((b) => b.name);
      out[fs.dataset.bug] = ticked.length ? ticked : fs.querySelector("input[data-none]").checked ? [] : null;
    }
    return out;
  };
  const restore = () => {
    const answer = (progress.load().steps[key] || {}).answer || {};
    for (const box of form.querySelectorAll(".truth")) box.hidden = true;
    for (const fs of bugs) {
      const chosen = answer[fs.dataset.bug];
      for (const box of fs.querySelectorAll("input[type=checkbox]:not([data-none])")) {
        box.checked = Array.isArray(chosen) && chosen.includes(box.name);
      }
      fs.querySelector("input[data-none]").checked = Array.isArray(chosen) && chosen.length === 0;
    }
  };
  restore();
  section.restore = restore;
  for (const fs of bugs) {
    // "none of them" and a weak test exclude each other
    fs.addEventListener("change", (event) => {
      if (!event.target.checked) return;
      const none = fs.querySelector("input[data-none]");
      if (event.target === none) {
        for (const box of fs.querySelectorAll("input[type=checkbox]:not([data-none])")) box.checked = false;
      } else none.checked = false;
    });
  }
  const show = (reply) => {
    for (const r of reply.results) {
      const fs = form.querySelector(`fieldset.bug[data-bug="${r.bug}"]`);
      const box = fs.querySelector(".truth");
      box.replaceChildren();
      const head = el("p", "truth-head");
      if (!reply.revealed) {
        box.className = "truth pending";
        head.append(el("strong", "", r.predicted ? _("Saved:") : _("No prediction yet:")), " ", r.detail);
        box.append(head);
        box.hidden = false;
        continue;
      }
      box.className = `truth ${r.ok ? "right" : "wrong"}`;
      const tests = r.actual.length ? r.actual.join(", ") : _("none");
      head.append(
        el("strong", "", r.ok ? _("Right.") : _("Not quite.")),
        " ",
        _("Weak tests that fail on this bug: {tests}.", { tests }),
      );
      box.append(head);
      // the judge's message starts "not quite: ", which the head already says: show its detail
      if (!r.ok) box.append(el("p", "truth-detail", r.detail));
      box.hidden = false;
    }
  };
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const chosen = values();
    const complete = Object.values(chosen).every((v) => v !== null);
    const report = await check(section, pyDict("catches", chosen), {}, complete, {
      answer: chosen,
      committed: complete,
    });
    if (!report || report.error) return;
    const said = section.querySelector(".step-status").textContent;
    const reply = await judge(section, { op: "predict", predictions: chosen }, _("Checking…"));
    if (!reply) return;
    section.querySelector(".step-status").textContent = report.ok
      ? said
      : reply.revealed
        ? _("{passed} of {total} tests pass.", { passed: report.passed, total: report.total })
        : _("{count} of {total} bugs predicted: the answers show once every bug has a prediction.", {
            count: reply.predicted,
            total: reply.total,
          });
    show(reply);
  });
  form.querySelector(".reveal-button").addEventListener("click", async () => {
    const chosen = values();
    const reply = await judge(section, { op: "predict", predictions: chosen, reveal: true }, _("Checking…"));
    if (!reply) return;
    progress.update(key, (s) => {
      s.answer = chosen;
      s.revealed = true;
    });
    show(reply);
    section.querySelector(".step-status").textContent = _("The answers are shown under each bug.");
    refresh();
  });
}

// broad: the input exposes every bug at once, so it is not aimed at this one (exercises/breakit.py)
function verdict(node, ok, text, broad = false) {
  node.textContent = "";
  node.dataset.state = ok ? "exposed" : broad ? "broad" : "survived";
  node.append(el("strong", "", ok ? _("Exposed.") : broad ? _("Too broad.") : _("Not exposed.")), " ", text);
}

// Break it: one input per bug, each judged by running both kernels; Check runs the step's tests
// and then shows the weak suite with the five inputs added, on all six kernels.
function setupBreakStep(section) {
  const key = section.dataset.key;
  const form = section.querySelector(".break-form");
  const areas = [...form.querySelectorAll("textarea")];
  let timer = null;
  const values = () => Object.fromEntries(areas.map((a) => [a.name, a.value]));
  const save = () => {
    clearTimeout(timer);
    progress.update(key, (s) => {
      s.answer = values();
    });
  };
  const restore = () => {
    const answer = (progress.load().steps[key] || {}).answer || {};
    for (const a of areas) a.value = answer[a.name] || "";
    for (const v of form.querySelectorAll(".verdict")) {
      v.textContent = "";
      v.dataset.state = "";
    }
    section.querySelector(".suite-table").hidden = true;
  };
  restore();
  section.restore = restore;
  for (const a of areas)
    a.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(save, 300);
    });
  for (const button of form.querySelectorAll(".try-button")) {
    button.addEventListener("click", async () => {
      save();
      const bug = button.dataset.bug;
      const out = form.querySelector(`fieldset.bug[data-bug="${bug}"] .verdict`);
      const text = form.querySelector(`textarea[name="${bug}"]`).value;
      const r = await judge(section, { op: "break", bug: Number(bug), text }, _("Checking…"));
      if (!r) return;
      verdict(out, r.ok, r.message, r.broad);
      section.querySelector(".step-status").textContent = r.ok
        ? _("Your input exposes bug {bug}.", { bug })
        : _("Your input does not expose bug {bug} yet.", { bug });
    });
  }
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    save();
    const texts = values();
    const report = await check(section, pyDict("inputs", texts), { answer: texts });
    if (!report || report.error) return;
    for (const r of report.results) {
      const m = /^test_bug_(\d)$/.exec(r.name);
      if (!m) continue;
      const out = form.querySelector(`fieldset.bug[data-bug="${m[1]}"] .verdict`);
      verdict(
        out,
        r.ok,
        r.ok
          ? _(
              "Bug {bug} leaves the bound on your input while the correct kernel stays within it. Try it for the numbers.",
              { bug: m[1] },
            )
          : r.message,
      );
    }
    const filled = Object.fromEntries(Object.entries(texts).filter(([, v]) => v.trim()));
    const suite = await judge(section, { op: "suite", texts: filled }, _("Checking…"));
    if (!suite) return;
    section.querySelector(".step-status").textContent = report.ok
      ? _("All {total} tests pass. Step passed.", { total: report.total })
      : _("{passed} of {total} tests pass.", { passed: report.passed, total: report.total });
    const body = section.querySelector(".suite-table tbody");
    body.replaceChildren();
    for (const row of suite.kernels) {
      const tr = el("tr", row.caught ? "suite-ok" : "suite-bad");
      const name =
        row.kernel === "correct" ? row.title : _("Bug {bug}: {title}", { bug: row.kernel, title: row.title });
      const th = el("th", "", name);
      th.scope = "row";
      const good = row.kernel === "correct" ? _("passes, as it should") : _("caught");
      const bad = row.kernel === "correct" ? _("fails: an input tests something else") : _("not caught");
      tr.append(
        th,
        el("td", "", row.failed.length ? row.failed.join(", ") : _("none")),
        el("td", "suite-verdict", row.caught ? good : bad),
      );
      body.append(tr);
    }
    section.querySelector(".suite-table").hidden = false;
  });
}

// An exercise run on the learner's own machine: hints, and steps the learner ticks.
function setupOffline(section) {
  const boxes = [...section.querySelectorAll("input.self-step")];
  const show = () => {
    const state = progress.load();
    for (const box of boxes) {
      box.checked = Boolean((state.steps[box.dataset.key] || {}).passed);
      const ladder = document.querySelector(`.ladder-state[data-step="${box.dataset.key}"]`);
      if (ladder) ladder.textContent = box.checked ? _("(passed)") : "";
    }
  };
  for (const box of boxes) {
    box.addEventListener("change", () => {
      progress.update(box.dataset.key, (s) => {
        s.passed = box.checked;
        s.selfAssessed = true;
        if (box.checked) s.passedAt = new Date().toISOString();
      });
      show();
      updateProgressLine();
    });
  }
  section.show = show;
  show();
}

function setupCodeStep(section) {
  const { editor, flush, starter } = createStepEditor(section, { paused: () => restoring });
  section.querySelector(".run-button").addEventListener("click", async () => {
    flush();
    section.querySelector(".step-results").hidden = true;
    const out = await send(section, { op: "run", source: editor.value }, _("Running…"));
    if (!out) return;
    renderPrinted(section, out.output, out.error);
    section.querySelector(".step-status").textContent = out.error
      ? _("Your code did not load:")
      : _("Ran without errors.");
  });
  section.querySelector(".check-button").addEventListener("click", () => {
    flush();
    check(section, editor.value);
  });
  section.querySelector(".restore-button").addEventListener("click", () => {
    editor.value = starter;
    flush();
  });
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
    const source = Object.entries(values)
      .map(([k, v]) => `${k} = ${JSON.stringify(v)}\n`)
      .join("");
    const committed = Object.values(values).every((v) => v.trim() !== "");
    check(section, source, {}, true, { answer: values, committed });
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
  area.addEventListener("input", () =>
    progress.update(key, (s) => {
      s.sentence = area.value;
    }),
  );
  section.querySelector(".show-answer").addEventListener("click", () => {
    box.hidden = false;
    progress.update(key, (s) => {
      s.answerShown = true;
    });
  });
  self.addEventListener("change", () =>
    progress.update(key, (s) => {
      s.selfAssessed = self.checked;
    }),
  );
}

function refresh() {
  sections.forEach(showState);
  if (offline) {
    offline.show();
    showHints(offline, (progress.load().steps[offline.dataset.key] || {}).hints || 0);
  }
  updateProgressLine();
}

const SETUP = {
  predict: setupPredictStep,
  "predict-tests": setupPredictTestsStep,
  "break-inputs": setupBreakStep,
  wgsl: (section) => setupWgslStep(section, { send, setBusy, refresh }),
};

function setupHints(section) {
  section.querySelector(".hint-button").addEventListener("click", () => {
    progress.update(section.dataset.key, (s) => {
      s.hints = (s.hints || 0) + 1;
    });
    refresh();
    const shown = [...section.querySelectorAll(".hint-item")].filter((h) => !h.hidden);
    if (shown.length) {
      const last = shown[shown.length - 1];
      last.tabIndex = -1;
      last.focus();
    }
  });
}

for (const section of sections) {
  (SETUP[section.dataset.kind] || setupCodeStep)(section);
  setupProbeSentence(section);
  section.querySelector(".cancel-button").addEventListener("click", () => runner.cancel());
  setupHints(section);
}
if (offline) {
  setupOffline(offline);
  setupHints(offline);
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
    if (section.restore) section.restore();
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
// A stored record that failed the schema was set aside as the page loaded: say so beside its step.
showSetAside((key, text) => {
  const section = sections.find((s) => s.dataset.key === key);
  if (section) section.querySelector(".step-status").textContent = text;
});
steps.setAttribute("aria-busy", "false");
window.cannery = Object.assign(window.cannery || {}, { exercise: { runner, ready: true } });
// A Run or Check pressed before this module ran (static/js/early-press.js): run it now.
window.canneryReady?.(steps);
// Boot Python early: the learner reads the prompt while it starts (not for an exercise run elsewhere).
if (sections.length) runner.start();
