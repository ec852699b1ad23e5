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

function noticeText(n) {
  return n.step
    ? _(
        "Your saved work for step {step} could not be read ({reason}). That step starts again from its starter code; the old record is kept in this browser under {key}.",
        { step: n.step, reason: n.reason, key: progress.ASIDE_KEY },
      )
    : _(
        "Your saved progress could not be read ({reason}), so this page starts with none; the old data is kept in this browser under {key}.",
        { reason: n.reason, key: progress.ASIDE_KEY },
      );
}

// Storage refused a write (full, or a private window): what passed still counts on this
// page, but will be gone after a reload unless exported.
function unsavedNotice() {
  const p = document.createElement("p");
  p.className = "progress-unsaved";
  p.textContent = _(
    "This browser does not let the page save your progress (its storage is full or turned off, as in a private window). Your work counts while this page stays open; export it to keep it.",
  );
  const button = document.createElement("button");
  button.type = "button";
  button.className = "progress-unsaved-export";
  button.textContent = _("Export progress (JSON)");
  button.addEventListener("click", () => {
    download("cannery-progress.json", progress.exportText(), "application/json");
  });
  p.append(" ", button);
  return p;
}

/** Tell the learner what was set aside from storage (progress.setAsideNotices), and
 * that progress cannot be saved (progress.unsaved), in #progress-notice; onStep(step, text) lets a page say it beside that step too. */
export function showSetAside(onStep = () => {}) {
  const box = document.getElementById("progress-notice");
  const render = () => {
    const list = progress.setAsideNotices();
    if (!box || (!list.length && !progress.unsaved())) return;
    box.replaceChildren(
      ...list.map((n) => {
        const p = document.createElement("p");
        p.textContent = noticeText(n);
        return p;
      }),
    );
    if (progress.unsaved()) box.append(unsavedNotice());
    box.hidden = false;
    for (const n of list) if (n.step) onStep(n.step, noticeText(n));
  };
  window.addEventListener("cannery:progress-set-aside", render);
  window.addEventListener("cannery:progress-unsaved", render);
  render();
}

function setupName() {
  const field = document.getElementById("progress-name");
  if (!field) return () => {};
  const show = () => {
    if (document.activeElement !== field) field.value = progress.name();
  };
  field.addEventListener("change", () => {
    progress.setName(field.value);
    show();
  });
  show();
  return show;
}

export function setupPanel(onChange) {
  const showName = setupName();
  const changed = () => {
    showName();
    onChange();
  };
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
    let state;
    try {
      state = progress.importText(await file.text());
    } catch (err) {
      say(
        _("Could not import {file}: {reason}. Your progress is unchanged.", { file: file.name, reason: err.message }),
      );
      return;
    } finally {
      input.value = "";
    }
    const k = Object.values(state.steps).filter((s) => s.passed).length;
    say(ngettext("Imported: {n} step passed.", "Imported: {n} steps passed.", k));
    changed();
  });
  document.getElementById("progress-reset").addEventListener("click", () => dialog.showModal());
  document.getElementById("reset-cancel").addEventListener("click", () => dialog.close());
  document.getElementById("reset-confirm").addEventListener("click", () => {
    progress.reset();
    dialog.close();
    say(_("Progress reset."));
    changed();
  });
  window.addEventListener("storage", (e) => {
    if (e.key === progress.KEY) changed();
  });
}
