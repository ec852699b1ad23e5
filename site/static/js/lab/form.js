// The lab's form: its values, the link (URL fragment) that carries them, the
// messages next to each control, the busy state, and which results are out of date.
import { _ } from "../i18n.js";
import { readBoolean } from "./rules.js";
import { direction, readDirection, setDirection } from "./direction.js";

export const $ = (id) => document.getElementById(id);

const FIELDS = ["direction", "kernel", "n", "d", "workgroup_bytes", "causal", "seed", "input"];

export const form = $("lab-form");
export const status = $("lab-status");
export const alertBox = $("lab-alert");
export const buttons = {
  count: $("count-button"),
  check: $("check-button"),
  time: $("time-button"),
  cancel: $("cancel-button"),
};

/** {head_dims, lesson} from the manifest and {tiling} from the planner, written into the form's data-rules by the build. */
export const rules = JSON.parse(form.dataset.rules);

/** The form's raw values (strings, as typed; Python and rules.js read them). */
export function readForm() {
  return {
    direction: direction(),
    kernel: $("kernel").value,
    n: $("n").value,
    d: $("d").value,
    causal: $("causal").checked,
    workgroup_bytes: $("workgroup_bytes").value,
    seed: $("seed").value,
    input: form.querySelector("input[name=input]:checked").value,
    head: $("head").value,
  };
}

// ---- form state <-> URL fragment (a teacher can share a link) -------------
/** The form's values as the page was built (readHash gives them to what a link leaves out). */
const DEFAULTS = {
  kernel: $("kernel").value,
  n: $("n").defaultValue,
  d: $("d").defaultValue,
  workgroup_bytes: $("workgroup_bytes").defaultValue,
  seed: $("seed").defaultValue,
  causal: $("causal").defaultChecked,
  head: $("head").value,
};

export function writeHash(p) {
  const q = new URLSearchParams({
    dir: p.direction || "forward",
    kernel: p.kernel,
    n: p.n,
    d: p.d,
    causal: p.causal ? "1" : "0",
    M: p.workgroup_bytes,
  });
  if (p.input === "model") {
    q.set("input", "model");
    q.set("head", p.head);
  } else {
    q.set("seed", p.seed);
  }
  history.replaceState(null, "", "#" + q.toString());
}

/**
 * Fill the form from the link; returns false when the fragment holds no settings.
 * A setting the link leaves out takes the form's default. A causal value outside the
 * shared vocabulary leaves the box at its default (off) and says so next to it, and an
 * unknown kernel (or direction) says which one is shown instead.
 */
export function readHash() {
  const fragment = location.hash.replace(/^#/, "");
  if (!fragment.includes("=")) return false;
  const q = new URLSearchParams(fragment);
  if ([...q.keys()].every((k) => k === "t")) return false; // #t=3:31 is a moment of the film
  const hasOption = (select, value) => [...select.options].some((o) => o.value === value);
  clearErrors();
  const errors = [];
  // A link says all there is: what it leaves out takes the form's default, not
  // whatever an earlier link or the learner set (causal stayed on, say).
  const dir = readDirection(q.get("dir"));
  if (dir.ok) setDirection(dir.value || "forward", q.get("kernel"));
  else errors.push({ field: "direction", message: dir.message });
  const kernel = q.get("kernel");
  if (kernel !== null && hasOption($("kernel"), kernel)) $("kernel").value = kernel;
  else {
    if (hasOption($("kernel"), DEFAULTS.kernel)) $("kernel").value = DEFAULTS.kernel;
    if (kernel !== null) {
      const shown = kernel.length > 30 ? kernel.slice(0, 29) + "…" : kernel;
      const label = $("kernel").selectedOptions[0] ? $("kernel").selectedOptions[0].textContent.trim() : "";
      errors.push({
        field: "kernel",
        message: _("Your link's kernel={value} is not a kernel of this lab; it shows “{kernel}” instead.", {
          value: shown,
          kernel: label,
        }),
      });
    }
  }
  $("n").value = q.has("n") ? q.get("n") : DEFAULTS.n;
  $("d").value = q.has("d") ? q.get("d") : DEFAULTS.d;
  $("workgroup_bytes").value = q.has("M") ? q.get("M") : DEFAULTS.workgroup_bytes;
  $("seed").value = q.has("seed") ? q.get("seed") : DEFAULTS.seed;
  $("causal").checked = DEFAULTS.causal;
  $("head").value = DEFAULTS.head;
  $("input-random").checked = true;
  if (q.has("causal")) {
    const causal = readBoolean(q.get("causal"), rules);
    if (causal.ok) $("causal").checked = causal.value;
    else
      errors.push({
        field: "causal",
        message: _("Your link's causal={value}: {problem}", { value: q.get("causal"), problem: causal.message }),
      });
  }
  if (q.get("input") === "model") {
    $("input-model").checked = true;
    if (q.has("head") && hasOption($("head"), q.get("head"))) $("head").value = q.get("head");
  }
  if (errors.length) showErrors(errors);
  return true;
}

// ---- messages ---------------------------------------------------------------
function control(field) {
  if (field === "direction") return $("dir-backward").checked ? $("dir-backward") : $("dir-forward");
  return $(field === "input" ? "input-model" : field);
}

export function clearErrors() {
  for (const f of FIELDS) {
    const box = $(`${f}-error`);
    if (box) box.textContent = "";
    const input = control(f);
    if (input) input.removeAttribute("aria-invalid");
  }
  alertBox.textContent = "";
  delete alertBox.dataset.kind;
}

/** Each message next to its control (linked by aria-describedby), or in the alert. */
export function showErrors(errors) {
  const spoken = [];
  for (const e of errors) {
    const box = $(`${e.field}-error`);
    if (box) {
      box.textContent = e.message;
      const input = control(e.field);
      if (input) input.setAttribute("aria-invalid", "true");
      spoken.push(e.message);
    } else {
      alertBox.textContent = e.message; // role=alert reads it; the status does not repeat it
    }
  }
  status.textContent = spoken.join(" ");
  // Focus stays where the learner is; the summary above is read out.
}

// ---- busy --------------------------------------------------------------------
// While Python or the GPU works, the action buttons say so with aria-disabled
// rather than the disabled attribute: a disabled button drops keyboard focus to
// <body>, and a keyboard user would lose their place.
let busy = false;
let lastAction = "check";
let onIdle = () => {};

/** Called with no arguments whenever the lab goes idle (main.js hides the boot bar). */
export function whenIdle(fn) {
  onIdle = fn;
}

/** `what`: "count", "check" or "time"; Check and Time show Cancel while they run. */
export function setBusy(on, what) {
  busy = on;
  for (const key of ["count", "check", "time"]) {
    if (on) buttons[key].setAttribute("aria-disabled", "true");
    else buttons[key].removeAttribute("aria-disabled");
  }
  form.setAttribute("aria-busy", on ? "true" : "false");
  const cancelHadFocus = document.activeElement === buttons.cancel;
  buttons.cancel.hidden = !on || (what !== "check" && what !== "time");
  buttons.cancel.dataset.for = on ? what : "";
  if (!on) onIdle();
  if (cancelHadFocus && buttons.cancel.hidden) (buttons[lastAction] || buttons.check).focus();
  if (on) lastAction = what;
}

/** Run one action unless another is running (Enter held down, double clicks). */
export function guarded(action) {
  return (event) => {
    if (event) event.preventDefault();
    if (busy) return;
    action();
  };
}

// ---- results stay, but say when they are out of date ----------------------------
const shown = {}; // card id -> the settings its result was computed for
function settingsKey(card, p) {
  const base = [p.direction, p.kernel, p.n, p.d, p.causal, p.workgroup_bytes];
  if (card === "check-result") base.push(p.input, p.input === "model" ? p.head : p.seed);
  return JSON.stringify(base);
}

export function markShown(card, p) {
  shown[card] = settingsKey(card, p);
  markStale();
}

export function markStale() {
  const p = readForm();
  for (const [card, key] of Object.entries(shown)) {
    const el = $(card);
    const stale = settingsKey(card, p) !== key;
    el.classList.toggle("stale", stale);
    let note = el.querySelector(".stale-note");
    if (!note) {
      note = document.createElement("p");
      note.className = "stale-note";
      el.querySelector("h3").after(note);
    }
    note.hidden = !stale;
    note.textContent = stale ? _("These results are for earlier settings; press the button again to update them.") : "";
  }
}
