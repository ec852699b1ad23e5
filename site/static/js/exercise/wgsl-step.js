// Exercise 4's steps (kind "wgsl"): the learner's WGSL in the page's editor, the static
// checks and the judging in Python (exercises/wgsl_judge.py, through the page's Python worker), the
// run on the learner's GPU through WebGPU (gpu/source-run.js). Without WebGPU, only the
// emulator's CPU mirror runs. Its words go through _() (../i18n.js).
//
// Each function below takes the step `w`: {section, key, step, status, select, editor,
// flush, gpu, send, ctx} (made by setupWgslStep).
import { createStepEditor } from "./editor.js";
import * as progress from "./progress.js";
import { _, num } from "../i18n.js";
import { compileSource, runSource } from "../gpu/source-run.js";
import { probeGpu, subgroupMinOf } from "../gpu/device.js";
import { loadSource } from "../gpu/files.js";
import { timeKernels } from "../gpu/runs.js";

const OFFER_AFTER_FAILS = 3;
const TIME_N = 1024;
const TIME_D = 64;
const TIME_RUNS = 9;
const CHECKING = () => _("The emulator is checking O against float64…");

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function hasWebGpu() {
  return typeof navigator !== "undefined" && Boolean(navigator.gpu);
}

/** A button that moves the editor's cursor to a message's line (and column) and focuses it. */
function jumpButton(editor, m) {
  const where = m.column
    ? _("Line {line}, column {column}", { line: m.line, column: m.column })
    : _("Line {line}", { line: m.line });
  const jump = el("button", "jump-to-line", where);
  jump.type = "button";
  jump.addEventListener("click", () => {
    const doc = editor.view.state.doc;
    const line = doc.line(Math.min(Math.max(1, m.line), doc.lines));
    const pos = Math.min(line.from + Math.max(0, (m.column || 1) - 1), line.to);
    editor.view.dispatch({ selection: { anchor: pos }, scrollIntoView: true });
    editor.focus();
  });
  return jump;
}

/** The source checks' and the compiler's messages [{type, line, column, message}], each at its line. */
function showMessages({ section, editor }, items) {
  const list = section.querySelector(".wgsl-message-list");
  list.replaceChildren();
  for (const m of items) {
    const li = el("li", `wgsl-message ${m.type}`);
    if (m.line) li.append(jumpButton(editor, m), ` ${m.type}: ${m.message}`);
    else li.append(`${m.type}: ${m.message}`);
    list.append(li);
  }
  section.querySelector(".wgsl-messages").hidden = items.length === 0;
}

/** One result per case: pass or fail, its message, and the bytes counted beside the emulator's. */
function showResults({ section }, rows) {
  const box = section.querySelector(".step-results");
  const list = box.querySelector(".results-list");
  list.replaceChildren();
  for (const r of rows) {
    const li = el("li", `test-result ${r.passed ? "pass" : "fail"}`);
    const title = el("p", "result-title");
    title.append(el("span", "result-mark", r.passed ? _("pass") : _("fail")), " ", r.message);
    li.append(title);
    if (r.counted_bytes !== undefined && r.counted_bytes !== null) {
      const bytes = { counted: num(r.counted_bytes), expected: num(r.expected_bytes) };
      li.append(el("p", "result-message", _("Bytes counted {counted}, emulator {expected}.", bytes)));
    }
    list.append(li);
  }
  box.hidden = false;
}

// Static checks (Python) and the compiler's messages: {clean, compiled} (compiled: no compile error).
async function precheck(w) {
  const { section, step, status, editor } = w;
  const reference = await loadSource("parts/header.wgsl"); // the shared header the shader must keep
  const request = { op: "wgsl-static", step, source: editor.value, reference };
  const st = await w.send(section, request, _("Compiling your shader on this GPU…"));
  if (!st) return { clean: false, compiled: false };
  const lineOf = (p) => Number((p.match(/^line (\d+)/) || [])[1]) || 0;
  const items = st.problems.map((p) => ({
    type: "error",
    line: lineOf(p),
    column: 0,
    message: p.replace(/^line \d+: /, ""),
  }));
  let compiled = { messages: [] };
  if (w.gpu) {
    // Python plans the run (the exercise worker's wgsl-plan: planner/__init__.py), the device included.
    const asked = { op: "wgsl-plan", step, workgroup_bytes: Number(w.select.value) };
    const plans = await w.send(section, asked, _("Compiling your shader on this GPU…"));
    if (!plans) return { clean: false, compiled: false };
    status.textContent = _("Compiling your shader on this GPU…");
    compiled = await compileSource(editor.value, { plan: plans.compile });
  }
  items.push(...compiled.messages);
  showMessages(w, items);
  const compileErrors = compiled.messages.filter((m) => m.type === "error").length;
  if (compileErrors) status.textContent = _("Your shader did not compile: see the messages, at their lines.");
  else if (st.problems.length)
    status.textContent = _("The source checks found {count} problem(s): see the messages.", {
      count: st.problems.length,
    });
  return { clean: compileErrors === 0 && st.problems.length === 0, compiled: compileErrors === 0 };
}

// The step's cases (all, or the first `limit`): each run on this GPU, then judged by the emulator.
async function runCases(w, limit) {
  const { section, step, status } = w;
  const m = Number(w.select.value);
  const got = await w.send(section, { op: "wgsl-cases", step, workgroup_bytes: m }, CHECKING());
  if (!got) return null;
  const cases = got.cases.slice(0, limit || got.cases.length);
  const rows = [];
  for (const [index, c] of cases.entries()) {
    status.textContent = _("Running case {k} of {n} on this GPU…", { k: index + 1, n: cases.length });
    const out = await runSource({
      code: w.editor.value,
      plan: c.plan,
      constants: c.constants,
      q: new Float32Array(c.q),
      k: new Float32Array(c.k),
      v: new Float32Array(c.v),
    });
    const judged = { op: "wgsl-judge", step, index, workgroup_bytes: m, o: Array.from(out.o), counts: out.counts };
    const verdict = await w.send(section, judged, CHECKING());
    if (!verdict) return null;
    rows.push(verdict);
  }
  return rows;
}

// Save the code, keep the step busy while fn runs, and turn a failed GPU run into a message.
async function guarded(w, fn) {
  w.flush();
  w.ctx.setBusy(w.section, true);
  try {
    await fn();
  } catch (err) {
    w.status.textContent = _("The GPU run failed: {message}", {
      message: err && err.message ? err.message : String(err),
    });
  } finally {
    w.ctx.setBusy(w.section, false);
  }
}

// Run: compile, then the first case on this GPU.
async function runFirstCase(w) {
  w.section.querySelector(".step-results").hidden = true;
  const { compiled } = await precheck(w);
  if (!compiled) return;
  const rows = await runCases(w, 1);
  if (!rows) return;
  showResults(w, rows);
  w.status.textContent = _("Case 1 ran: {message}", { message: rows[0].message });
}

// Check: the source checks, then every case; the step passes when all pass.
async function checkAllCases(w) {
  const { section, status } = w;
  section.querySelector(".step-results").hidden = true;
  const { clean } = await precheck(w);
  let rows = [];
  if (clean) {
    rows = await runCases(w, 0);
    if (!rows) return;
    showResults(w, rows);
  }
  const passed = clean && rows.every((r) => r.passed);
  const total = rows.length;
  if (clean) {
    status.textContent = passed
      ? _("All {total} cases pass, with the bytes the emulator counts. Step passed.", { total })
      : _("{passed} of {total} cases pass.", { passed: rows.filter((r) => r.passed).length, total });
  }
  progress.recordCheck(w.key, passed, w.editor.value);
  section.querySelector(".time-button").hidden = !passed;
  w.ctx.refresh();
}

// The emulator's CPU mirror on the step's cases (no GPU needed).
async function runMirror(w) {
  const got = await w.ctx.send(w.section, { op: "wgsl-mirror", step: w.step }, CHECKING());
  if (!got) return;
  showResults(w, got.results);
  w.status.textContent = _("The CPU mirror (emulator, float32, the same tile walk) on this step's {total} cases:", {
    total: got.results.length,
  });
}

// Time: the learner's kernel and the project's fused kernel at N = TIME_N, d = TIME_D on this GPU.
// Python plans both runs (wgsl-plan with "time": tiles, dispatch, the fused kernel's shader for
// this device's subgroups), as the lab's Time does.
async function timeYours(w) {
  const m = Number(w.select.value);
  const timing = _("Timing on this GPU at N = {n}, d = {d}…", { n: String(TIME_N), d: TIME_D });
  const probe = await probeGpu();
  const request = { op: "wgsl-plan", step: w.step, workgroup_bytes: m, time: [TIME_N, TIME_D] };
  const plans = await w.send(
    w.section,
    { ...request, limits: probe.limits, subgroup_min_size: subgroupMinOf(probe) },
    timing,
  );
  if (!plans) return;
  w.status.textContent = timing;
  const size = TIME_N * TIME_D;
  const rand = () => Float32Array.from({ length: size }, () => Math.random() * 2 - 1);
  const yours = await runSource({
    code: w.editor.value,
    plan: plans.time.yours,
    constants: plans.time.constants,
    q: rand(),
    k: rand(),
    v: rand(),
    timeRuns: TIME_RUNS,
  });
  const fused = await timeKernels({ plan: plans.time.fused });
  const f = fused.kernels.fused;
  const method = fused.method === "timestamp" ? _("GPU timestamps") : _("wall clock");
  w.status.textContent = _(
    "At N = {n}, d = {d}: your kernel {yours} ms (median of {runs}, wall clock), the project's fused kernel {fused} ms ({method}).",
    {
      n: String(TIME_N),
      d: TIME_D,
      yours: num(yours.medianMs, 2),
      runs: TIME_RUNS,
      fused: num(f.medianMs, 2),
      method,
    },
  );
}

/**
 * Wire one wgsl step. ctx: {send(section, request, statusText) -> result | null,
 * setBusy(section, busy), refresh()} from exercise-page.js.
 */
export function setupWgslStep(section, ctx) {
  const { editor, flush } = createStepEditor(section, { language: "wgsl" });
  const host = section.querySelector(".editor-host");
  // A shader is longer than the editor's height: its scroller must be reachable from the
  // keyboard too (WCAG 2.1.1; axe's scrollable-region-focusable does not count the
  // contenteditable inside it).
  editor.view.scrollDOM.tabIndex = 0;
  editor.view.scrollDOM.setAttribute("aria-label", _("{label} Scroll area.", { label: host.dataset.label }));
  const w = {
    section,
    key: section.dataset.key,
    step: section.dataset.step,
    status: section.querySelector(".step-status"),
    select: section.querySelector(".wgsl-m"),
    editor,
    flush,
    gpu: hasWebGpu(),
    ctx,
    // exercise-page.js's send() frees the buttons after each request; a GPU check makes
    // several requests, so the step stays busy until guarded() ends.
    send: async (...args) => {
      const reply = await ctx.send(...args);
      ctx.setBusy(section, true);
      return reply;
    },
  };
  const noGpu = document.querySelector(".wgsl-no-gpu");
  if (!w.gpu) {
    if (noGpu) noGpu.hidden = false;
    section.querySelector(".run-button").hidden = true;
    section.querySelector(".check-button").hidden = true;
  }
  const button = (name) => section.querySelector(`.${name}-button`);
  button("run").addEventListener("click", () => guarded(w, () => runFirstCase(w)));
  button("check").addEventListener("click", () => guarded(w, () => checkAllCases(w)));
  button("mirror").addEventListener("click", () => runMirror(w));
  button("time").hidden = !(w.gpu && (progress.load().steps[w.key] || {}).passed);
  button("time").addEventListener("click", () => guarded(w, () => timeYours(w)));
  return { editor, offerAfter: OFFER_AFTER_FAILS };
}
