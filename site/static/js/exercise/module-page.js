// The module page: the progress line, objectives ticked from progress, each
// exercise's status, "what you will have written" (a download of the code
// that passed, with a header saying where each part came from), and the
// export / import / reset panel. Its words go through _() (../i18n.js), in
// the page's language; titles and names come from the page's markup.
import * as progress from "./progress.js";
import { download, setupPanel, showSetAside, updateProgressLine } from "./panel.js";
import { _ } from "../i18n.js";

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
    li.querySelector(".objective-state").textContent = done ? _("(Done)") : _("(Not yet)");
  }
  const table = document.getElementById("exercises-table");
  for (const cell of table.querySelectorAll(".ex-status")) {
    const keys = keysOf(cell);
    const k = progress.passedKeys(state, keys).length;
    cell.textContent =
      k === keys.length ? _("Done") : k ? _("{k} / {n} steps passed", { k, n: keys.length }) : _("Not started");
  }
  for (const span of document.querySelectorAll(".written-state")) {
    const s = state.steps[span.dataset.step];
    span.textContent = s && s.passed ? _("(passed)") : _("(not passed yet)");
  }
}

function assemble() {
  const state = progress.load();
  const parts = [];
  for (const span of document.querySelectorAll(".written-state")) {
    const s = state.steps[span.dataset.step];
    if (!s || !s.passed || !s.passedCode) continue;
    const unknownDate = _("an unknown date");
    const head = _(
      "{title}\nPassed its tests on {date}; check it again with\n  python -m exercises check {slug} THIS_FILE --step {step}",
      {
        title: span.dataset.title,
        date: s.passedAt || unknownDate,
        slug: span.dataset.slug,
        step: span.dataset.step.split("/")[1],
      },
    );
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
  const header = _(
    "Your code from Cannery's FlashAttention module, assembled {date}.\nEach part below is the code you last passed a step's tests with, in this browser.\nCheck it again offline: python -m exercises check SLUG this_file.py",
    { date: new Date().toISOString().slice(0, 10) },
  )
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
    status.textContent = _("Pass a step first: the file holds only code that passed its tests.");
    return;
  }
  download(button.dataset.filename, file.text, "text/x-python");
  status.textContent = _("Downloaded {file} with {k} passing steps.", { file: button.dataset.filename, k: file.count });
});

window.addEventListener("cannery:progress", refresh);
setupPanel(refresh);
refresh();
showSetAside();
window.cannery = Object.assign(window.cannery || {}, { module: { ready: true } });
