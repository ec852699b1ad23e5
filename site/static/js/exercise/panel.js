// The progress line ("Progress: k of n steps") and the export / import / reset
// panel, shared by the module page and the exercise pages. Every string shown
// comes from the page's markup (data-* attributes), so templates can translate it.
import * as progress from "./progress.js";

export function fill(template, values) {
  return template.replace(/\{(\w+)\}/g, (_, k) => (k in values ? String(values[k]) : `{${k}}`));
}

export function download(name, text, type) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function updateProgressLine() {
  const line = document.getElementById("progress-line");
  if (!line) return;
  const keys = line.dataset.steps.split(" ").filter(Boolean);
  line.querySelector(".progress-k").textContent = String(progress.passedKeys(progress.load(), keys).length);
}

export function setupPanel(onChange) {
  const msg = document.getElementById("progress").dataset;
  const status = document.getElementById("progress-status");
  const dialog = document.getElementById("reset-dialog");
  const say = (text) => {
    status.textContent = text;
  };
  document.getElementById("progress-export").addEventListener("click", () => {
    download("cannery-progress.json", progress.exportText(), "application/json");
    say(msg.msgExported);
  });
  const input = document.getElementById("progress-import");
  input.addEventListener("change", async () => {
    const file = input.files && input.files[0];
    if (!file) return;
    try {
      const state = progress.importText(await file.text());
      say(fill(msg.msgImported, { k: Object.values(state.steps).filter((s) => s.passed).length }));
      onChange();
    } catch (err) {
      say(fill(msg.msgImportFailed, { file: file.name, reason: err.message }));
    }
    input.value = "";
  });
  document.getElementById("progress-reset").addEventListener("click", () => dialog.showModal());
  document.getElementById("reset-cancel").addEventListener("click", () => dialog.close());
  document.getElementById("reset-confirm").addEventListener("click", () => {
    progress.reset();
    dialog.close();
    say(msg.msgReset);
    onChange();
  });
  window.addEventListener("storage", (e) => {
    if (e.key === progress.KEY) onChange();
  });
}
