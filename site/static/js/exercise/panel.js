// The progress line ("Progress: k of n steps") and the export / import / reset
// panel, shared by the module page and the exercise pages. Its messages go
// through _() (../i18n.js), in the page's language.
import * as progress from "./progress.js";
import { _, ngettext } from "../i18n.js";

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
  const status = document.getElementById("progress-status");
  const dialog = document.getElementById("reset-dialog");
  const say = (text) => {
    status.textContent = text;
  };
  document.getElementById("progress-export").addEventListener("click", () => {
    download("cannery-progress.json", progress.exportText(), "application/json");
    say(_("Exported to cannery-progress.json."));
  });
  const input = document.getElementById("progress-import");
  input.addEventListener("change", async () => {
    const file = input.files && input.files[0];
    if (!file) return;
    try {
      const state = progress.importText(await file.text());
      const k = Object.values(state.steps).filter((s) => s.passed).length;
      say(ngettext("Imported: {n} step passed.", "Imported: {n} steps passed.", k));
      onChange();
    } catch (err) {
      say(
        _("Could not import {file}: {reason}. Your progress is unchanged.", { file: file.name, reason: err.message }),
      );
    }
    input.value = "";
  });
  document.getElementById("progress-reset").addEventListener("click", () => dialog.showModal());
  document.getElementById("reset-cancel").addEventListener("click", () => dialog.close());
  document.getElementById("reset-confirm").addEventListener("click", () => {
    progress.reset();
    dialog.close();
    say(_("Progress reset."));
    onChange();
  });
  window.addEventListener("storage", (e) => {
    if (e.key === progress.KEY) onChange();
  });
}
