// The module page: the progress line, objectives ticked from progress, each
// exercise's status, "what you will have written" (a download of the code
// that passed, with a header saying where each part came from), and the
// export / import / reset panel. Strings come from the page's markup.
import * as progress from "./progress.js";
import { download, fill, setupPanel, updateProgressLine } from "./panel.js";

function keysOf(node) {
  return (node.dataset.steps || "").split(" ").filter(Boolean);
}

function refresh() {
  const state = progress.load();
  updateProgressLine();
  const objectives = document.getElementById("objectives-list");
  for (const li of objectives.querySelectorAll(".objective")) {
    const keys = keysOf(li);
    if (!keys.length) continue; // coming with a later exercise
    const done = progress.passedKeys(state, keys).length === keys.length;
    li.classList.toggle("done", done);
    li.querySelector(".objective-state").textContent = `(${done ? objectives.dataset.done : objectives.dataset.todo})`;
  }
  const table = document.getElementById("exercises-table");
  for (const cell of table.querySelectorAll(".ex-status")) {
    const keys = keysOf(cell);
    const k = progress.passedKeys(state, keys).length;
    cell.textContent =
      k === keys.length
        ? table.dataset.done
        : k
          ? `${k} / ${keys.length} ${table.dataset.started}`
          : table.dataset.none;
  }
  const button = document.getElementById("download-code");
  for (const span of document.querySelectorAll(".written-state")) {
    const s = state.steps[span.dataset.step];
    span.textContent = s && s.passed ? button.dataset.msgPassed : button.dataset.msgTodo;
  }
}

function assemble() {
  const state = progress.load();
  const button = document.getElementById("download-code");
  const parts = [];
  for (const span of document.querySelectorAll(".written-state")) {
    const s = state.steps[span.dataset.step];
    if (!s || !s.passed || !s.passedCode) continue;
    const head = fill(button.dataset.part, {
      title: span.dataset.title,
      date: s.passedAt || button.dataset.unknownDate,
      slug: span.dataset.slug,
      step: span.dataset.step.split("/")[1],
    });
    parts.push(
      [
        "# " + "-".repeat(70),
        ...head.split("\n").map((line) => `# ${line}`),
        "# " + "-".repeat(70),
        s.passedCode.trimEnd(),
        "",
      ].join("\n"),
    );
  }
  if (!parts.length) return null;
  const header = fill(button.dataset.header, { date: new Date().toISOString().slice(0, 10) })
    .split("\n")
    .map((line) => `# ${line}`)
    .join("\n");
  return { text: `${header}\n\n${parts.join("\n\n")}`, count: parts.length };
}

document.getElementById("download-code").addEventListener("click", () => {
  const button = document.getElementById("download-code");
  const status = document.getElementById("download-status");
  const file = assemble();
  if (!file) {
    status.textContent = button.dataset.msgNone;
    return;
  }
  download(button.dataset.filename, file.text, "text/x-python");
  status.textContent = fill(button.dataset.msgDone, { file: button.dataset.filename, k: file.count });
});

window.addEventListener("cannery:progress", refresh);
setupPanel(refresh);
refresh();
window.cannery = Object.assign(window.cannery || {}, { module: { ready: true } });
