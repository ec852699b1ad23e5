// The progress line ("Progress: k of n steps") and the export / import / reset
// panel, shared by the module page and the exercise pages. Its messages go
// through _() (../i18n.js), in the page's language.
import * as progress from "./progress.js";
import { FILE_MAX_BYTES } from "./progress-schema.js";
import { plainText } from "./progress-files.js";
import { _, ngettext } from "../i18n.js";

const MIB = 1024 * 1024;

/** Why a chosen file is refused before it is read (too large), or null. */
export function tooLarge(file) {
  if (file.size <= FILE_MAX_BYTES) return null;
  return _("it is {size} MiB, and a progress file is at most {max} MiB", {
    size: (file.size / MIB).toFixed(1),
    max: FILE_MAX_BYTES / MIB,
  });
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
    download(progress.exportName(), progress.exportText(), "application/json");
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
    const file = progress.exportName();
    download(file, progress.exportText(), "application/json");
    say(_("Exported to {file}.", { file }));
  });
  const input = document.getElementById("progress-import");
  const importDialog = document.getElementById("import-dialog");
  const restore = document.getElementById("progress-restore");
  const passedIn = (state) => Object.values(state.steps).filter((s) => s.passed).length;
  const showRestore = () => {
    restore.hidden = !progress.beforeImport();
  };
  let pending = null; // {file name, state} waiting for merge or replace
  const finish = (how) => {
    const { file, state } = pending;
    pending = null;
    const now = progress.importState(state, how);
    const n = passedIn(now);
    if (how === "merge")
      say(ngettext("Merged {file}: {n} step passed now.", "Merged {file}: {n} steps passed now.", n, { file }));
    else
      say(ngettext("Replaced with {file}: {n} step passed.", "Replaced with {file}: {n} steps passed.", n, { file }));
    showRestore();
    changed();
  };
  input.addEventListener("change", async () => {
    const file = input.files && input.files[0];
    if (!file) return;
    const shown = plainText(file.name);
    let state;
    try {
      const large = tooLarge(file);
      if (large) throw new Error(large);
      state = progress.readFile(await file.text());
    } catch (err) {
      say(_("Could not import {file}: {reason}. Your progress is unchanged.", { file: shown, reason: err.message }));
      return;
    } finally {
      input.value = "";
    }
    if (!Object.keys(progress.load().steps).length) {
      // nothing here to lose: the file is the progress
      progress.importState(state, "replace");
      say(ngettext("Imported: {n} step passed.", "Imported: {n} steps passed.", passedIn(state)));
      showRestore();
      changed();
      return;
    }
    pending = { file: shown, state };
    document.getElementById("import-what").textContent = _(
      "{file} holds {k} passed steps; this browser holds {n}. Either way, what is here now is kept, and “Undo the import” brings it back.",
      { file: shown, k: passedIn(state), n: passedIn(progress.load()) },
    );
    importDialog.showModal();
  });
  document.getElementById("import-merge").addEventListener("click", () => {
    importDialog.close();
    finish("merge");
  });
  document.getElementById("import-replace").addEventListener("click", () => {
    importDialog.close();
    finish("replace");
  });
  importDialog.addEventListener("close", () => {
    if (pending) say(_("Nothing imported. Your progress is unchanged."));
    pending = null;
  });
  document.getElementById("import-cancel").addEventListener("click", () => importDialog.close());
  restore.addEventListener("click", () => {
    const before = progress.restoreBeforeImport();
    if (!before) return;
    say(
      ngettext(
        "Restored: {n} step passed, as before the import.",
        "Restored: {n} steps passed, as before the import.",
        passedIn(before),
      ),
    );
    showRestore();
    changed();
  });
  showRestore();
  document.getElementById("progress-reset").addEventListener("click", () => dialog.showModal());
  document.getElementById("reset-cancel").addEventListener("click", () => dialog.close());
  document.getElementById("reset-confirm").addEventListener("click", () => {
    progress.reset();
    dialog.close();
    showRestore();
    say(_("Progress reset."));
    changed();
  });
  window.addEventListener("storage", (e) => {
    if (e.key === progress.KEY) changed();
  });
}
