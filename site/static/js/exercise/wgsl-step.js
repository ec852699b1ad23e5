// Exercise 4's steps (kind "wgsl"): the learner's WGSL in the page's editor, the static
// checks and the judging in Python (exercises/wgsl.py, through the page's Python worker), the
// run on the learner's GPU through WebGPU (gpu/source-run.js). Without WebGPU, only the
// emulator's CPU mirror runs. Its words go through _() (../i18n.js).
import { createEditor } from "./editor.js";
import * as progress from "./progress.js";
import { _, num } from "../i18n.js";
import { compileSource, runSource } from "../gpu/source-run.js";
import { loadSource } from "../gpu/files.js";
import { timeKernels } from "../gpu/runs.js";

const OFFER_AFTER_FAILS = 3;
const TIME_N = 1024;
const TIME_D = 64;
const TIME_RUNS = 9;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function hasWebGpu() {
  return typeof navigator !== "undefined" && Boolean(navigator.gpu);
}

/**
 * Wire one wgsl step. ctx: {send(section, request, statusText) -> result | null,
 * setBusy(section, busy), refresh()} from exercise-page.js.
 */
export function setupWgslStep(section, ctx) {
  const key = section.dataset.key;
  const step = section.dataset.step;
  const host = section.querySelector(".editor-host");
  const starter = section.querySelector(".starter-code").textContent;
  const status = section.querySelector(".step-status");
  const select = section.querySelector(".wgsl-m");
  const saved = (progress.load().steps[key] || {}).code;
  let timer = null;
  const editor = createEditor(host, {
    doc: saved !== undefined ? saved : starter,
    label: host.dataset.label,
    language: "wgsl",
    onChange: (text) => {
      clearTimeout(timer);
      timer = setTimeout(
        () =>
          progress.update(key, (s) => {
            s.code = text;
          }),
        300,
      );
    },
  });
  host.editor = editor;
  // A shader is longer than the editor's height: its scroller must be reachable from the
  // keyboard too (WCAG 2.1.1; axe's scrollable-region-focusable does not count the
  // contenteditable inside it).
  editor.view.scrollDOM.tabIndex = 0;
  editor.view.scrollDOM.setAttribute("aria-label", _("{label} Scroll area.", { label: host.dataset.label }));
  // exercise-page.js's send() frees the buttons after each request; a GPU check makes
  // several requests, so the step stays busy until guarded() ends.
  const send = async (...args) => {
    const reply = await ctx.send(...args);
    ctx.setBusy(section, true);
    return reply;
  };
  const flush = () => {
    clearTimeout(timer);
    progress.update(key, (s) => {
      s.code = editor.value;
    });
  };
  const gpu = hasWebGpu();
  const noGpu = document.querySelector(".wgsl-no-gpu");
  if (!gpu) {
    if (noGpu) noGpu.hidden = false;
    section.querySelector(".run-button").hidden = true;
    section.querySelector(".check-button").hidden = true;
  }

  const messagesBox = section.querySelector(".wgsl-messages");
  const messagesList = section.querySelector(".wgsl-message-list");
  function showMessages(items) {
    messagesList.replaceChildren();
    for (const m of items) {
      const li = el("li", `wgsl-message ${m.type}`);
      if (m.line) {
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
        li.append(jump, ` ${m.type}: ${m.message}`);
      } else {
        li.append(`${m.type}: ${m.message}`);
      }
      messagesList.append(li);
    }
    messagesBox.hidden = items.length === 0;
  }

  function showResults(rows) {
    const box = section.querySelector(".step-results");
    const list = box.querySelector(".results-list");
    list.replaceChildren();
    for (const r of rows) {
      const li = el("li", `test-result ${r.passed ? "pass" : "fail"}`);
      const title = el("p", "result-title");
      title.append(el("span", "result-mark", r.passed ? _("pass") : _("fail")), " ", r.message);
      li.append(title);
      if (r.counted_bytes !== undefined && r.counted_bytes !== null) {
        li.append(
          el(
            "p",
            "result-message",
            _("Bytes counted {counted}, emulator {expected}.", {
              counted: num(r.counted_bytes),
              expected: num(r.expected_bytes),
            }),
          ),
        );
      }
      list.append(li);
    }
    box.hidden = false;
  }

  // Static checks (Python) and the compiler's messages: {clean, compiled} (compiled: no compile error).
  async function precheck() {
    const reference = await loadSource("fused.wgsl");
    const st = await send(
      section,
      { op: "wgsl-static", step, source: editor.value, reference },
      _("Compiling your shader on this GPU…"),
    );
    if (!st) return { clean: false, compiled: false };
    const lineOf = (p) => Number((p.match(/^line (\d+)/) || [])[1]) || 0;
    const items = st.problems.map((p) => ({
      type: "error",
      line: lineOf(p),
      column: 0,
      message: p.replace(/^line \d+: /, ""),
    }));
    let compiled = { messages: [] };
    if (gpu) {
      status.textContent = _("Compiling your shader on this GPU…");
      compiled = await compileSource(editor.value, { workgroupBytes: Number(select.value) });
    }
    items.push(...compiled.messages);
    showMessages(items);
    const compileErrors = compiled.messages.filter((m) => m.type === "error").length;
    if (compileErrors) status.textContent = _("Your shader did not compile: see the messages, at their lines.");
    else if (st.problems.length)
      status.textContent = _("The source checks found {count} problem(s): see the messages.", {
        count: st.problems.length,
      });
    return { clean: compileErrors === 0 && st.problems.length === 0, compiled: compileErrors === 0 };
  }

  async function runCases(limit) {
    const m = Number(select.value);
    const got = await send(
      section,
      { op: "wgsl-cases", step, workgroup_bytes: m },
      _("The emulator is checking O against float64…"),
    );
    if (!got) return null;
    const cases = got.cases.slice(0, limit || got.cases.length);
    const rows = [];
    for (const [index, c] of cases.entries()) {
      status.textContent = _("Running case {k} of {n} on this GPU…", { k: index + 1, n: cases.length });
      const out = await runSource({
        code: editor.value,
        n: c.n,
        d: c.d,
        causal: c.causal,
        constants: c.constants,
        workgroupBytes: m,
        q: new Float32Array(c.q),
        k: new Float32Array(c.k),
        v: new Float32Array(c.v),
      });
      const verdict = await send(
        section,
        { op: "wgsl-judge", step, index, workgroup_bytes: m, o: Array.from(out.o), counts: out.counts },
        _("The emulator is checking O against float64…"),
      );
      if (!verdict) return null;
      rows.push(verdict);
    }
    return rows;
  }

  async function guarded(fn) {
    flush();
    ctx.setBusy(section, true);
    try {
      await fn();
    } catch (err) {
      status.textContent = _("The GPU run failed: {message}", {
        message: err && err.message ? err.message : String(err),
      });
    } finally {
      ctx.setBusy(section, false);
    }
  }

  section.querySelector(".run-button").addEventListener("click", () =>
    guarded(async () => {
      section.querySelector(".step-results").hidden = true;
      const { compiled } = await precheck();
      if (!compiled) return;
      const rows = await runCases(1);
      if (!rows) return;
      showResults(rows);
      status.textContent = _("Case 1 ran: {message}", { message: rows[0].message });
    }),
  );

  section.querySelector(".check-button").addEventListener("click", () =>
    guarded(async () => {
      section.querySelector(".step-results").hidden = true;
      const { clean } = await precheck();
      let rows = [];
      if (clean) {
        rows = await runCases(0);
        if (!rows) return;
        showResults(rows);
      }
      const passed = clean && rows.every((r) => r.passed);
      const total = rows.length;
      if (clean) {
        status.textContent = passed
          ? _("All {total} cases pass, with the bytes the emulator counts. Step passed.", { total })
          : _("{passed} of {total} cases pass.", { passed: rows.filter((r) => r.passed).length, total });
      }
      progress.update(key, (s) => {
        s.checks = (s.checks || 0) + 1;
        if (passed) {
          s.passed = true;
          s.passedCode = editor.value;
          s.passedAt = new Date().toISOString();
        } else {
          s.fails = (s.fails || 0) + 1;
        }
      });
      section.querySelector(".time-button").hidden = !passed;
      ctx.refresh();
    }),
  );

  section.querySelector(".mirror-button").addEventListener("click", async () => {
    const got = await ctx.send(section, { op: "wgsl-mirror", step }, _("The emulator is checking O against float64…"));
    if (!got) return;
    showResults(got.results);
    status.textContent = _("The CPU mirror (emulator, float32, the same tile walk) on this step's {total} cases:", {
      total: got.results.length,
    });
  });

  section.querySelector(".time-button").hidden = !(gpu && (progress.load().steps[key] || {}).passed);
  section.querySelector(".time-button").addEventListener("click", () =>
    guarded(async () => {
      const m = Number(select.value);
      status.textContent = _("Timing on this GPU at N = {n}, d = {d}…", { n: String(TIME_N), d: TIME_D });
      const br = m / 2 / (4 * TIME_D);
      const size = TIME_N * TIME_D;
      const rand = () => Float32Array.from({ length: size }, () => Math.random() * 2 - 1);
      const yours = await runSource({
        code: editor.value,
        n: TIME_N,
        d: TIME_D,
        causal: false,
        workgroupBytes: m,
        constants: { D: TIME_D, BR: br, BC: br / 2 },
        q: rand(),
        k: rand(),
        v: rand(),
        timeRuns: TIME_RUNS,
      });
      const fused = await timeKernels({ n: TIME_N, d: TIME_D, kernels: ["fused"], workgroupBytes: m });
      const f = fused.kernels.fused;
      const method = fused.method === "timestamp" ? _("GPU timestamps") : _("wall clock");
      status.textContent = _(
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
    }),
  );

  return { editor, offerAfter: OFFER_AFTER_FAILS };
}
