// The lab's Direction (Forward / Backward): which kernels the Kernel menu offers,
// read from the manifest through the page's <template id="kernels-forward|backward">
// (the template lists every kernel whose "direction" is "backward"), and the
// direction's value in the link (dir=forward|backward).
// (No import of form.js: form.js imports this module.)
import { _, num } from "../i18n.js";

const $ = (id) => document.getElementById(id);

export const DIRECTIONS = ["forward", "backward"];

/** "forward" or "backward", as the radio group says. */
export function direction() {
  return $("dir-backward").checked ? "backward" : "forward";
}

/** The largest N the backward check takes (emulator.backward.CHECK_MAX_N, from the template). */
export const backwardCheckMaxN = Number($("lab-form").dataset.backwardCheckMaxN);

// Which kernel each direction had chosen, so switching back restores it.
const chosen = { forward: null, backward: null };
let shownDirection = "forward";

/** Fill the Kernel menu with the direction's kernels, keeping the choice where it exists. */
export function showKernels(dir, wanted) {
  const select = $("kernel");
  chosen[shownDirection] = select.value;
  const options = $(`kernels-${dir}`).content.cloneNode(true);
  select.replaceChildren(options);
  const keep = wanted ?? chosen[dir];
  const names = [...select.options].map((o) => o.value);
  // Each direction's first choice is the option the template marks data-default: the
  // lab's default kernel, and the backward kernel that answers to its name (lab_name).
  const marked = [...select.options].find((o) => "default" in o.dataset);
  const fallback = marked ? marked.value : names[0];
  select.value = names.includes(keep) ? keep : fallback;
  shownDirection = dir;
}

/**
 * A kernel's name as the Kernel menu shows it (in the page's language: the
 * template writes the options), or `fallback` (the manifest's English label).
 */
export function kernelLabel(name, fallback) {
  for (const dir of DIRECTIONS) {
    const option = [...$(`kernels-${dir}`).content.querySelectorAll("option")].find((o) => o.value === name);
    if (option) return option.textContent.trim();
  }
  return fallback || name;
}

/** Set the radio group and the Kernel menu to a direction. */
export function setDirection(dir, kernel) {
  $(dir === "backward" ? "dir-backward" : "dir-forward").checked = true;
  showKernels(dir, kernel);
}

/**
 * Read dir= from a link's parameters. Returns {ok: true, value} for a known
 * direction (or none given: forward), else {ok: false, message} in words that
 * name the control.
 */
export function readDirection(raw) {
  if (raw === null || raw === undefined) return { ok: true, value: null };
  const text = String(raw).trim().toLowerCase();
  if (DIRECTIONS.includes(text)) return { ok: true, value: text };
  const shown = String(raw).length > 20 ? String(raw).slice(0, 19) + "…" : String(raw);
  return {
    ok: false,
    message:
      direction() === "backward"
        ? _("Your link's dir={value}: Direction takes forward or backward. It stays backward.", { value: shown })
        : _("Your link's dir={value}: Direction takes forward or backward. It stays forward.", { value: shown }),
  };
}

/**
 * With Backward chosen and an N past the backward Check's limit (backwardCheckMaxN,
 * emulator.backward.CHECK_MAX_N as the build writes it), offer that limit beside N:
 * one press of "Use N = …" sets it. Otherwise the offer is hidden.
 */
export function offerBackwardN() {
  const offer = $("n-offer");
  const n = Number(String($("n").value).replace(/[,_\s]/g, ""));
  const over = direction() === "backward" && Number.isInteger(n) && n > backwardCheckMaxN;
  offer.hidden = !over;
  if (!over) return;
  const limit = num(backwardCheckMaxN);
  $("n-offer-text").textContent = _("The backward Check takes N up to {limit}; Count and Time take N = {n} too.", {
    limit,
    n: num(n),
  });
  $("n-offer-use").textContent = _("Use N = {limit}", { limit });
}

$("n-offer-use").addEventListener("click", () => {
  $("n").value = String(backwardCheckMaxN);
  $("n").dispatchEvent(new Event("input", { bubbles: true }));
  $("n-offer").hidden = true;
  $("n").focus();
});
$("n").addEventListener("input", () => {
  if (!$("n-offer").hidden) offerBackwardN();
});

for (const id of ["dir-forward", "dir-backward"]) {
  $(id).addEventListener("change", () => {
    showKernels(direction());
    $("direction-error").textContent = "";
    offerBackwardN();
  });
}
