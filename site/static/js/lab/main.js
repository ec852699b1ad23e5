// The lab: Count, Check and Time. Every rule about inputs lives in the Python
// emulator (emulator/tiling.py); rules.js answers the plainly bad values at once
// with the same words. Results already shown stay until a new one replaces them.
//
//   form.js    form values, the link, messages, busy state, stale results
//   rules.js   pure: the input rules that need no Python (node tests them)
//   html.js    html`` templates that escape by default
//   reply.js   the one worker reply check
//   client.js  the emulator's worker client and the boot progress bar
//   count.js, check.js, time.js   one card each: its run and its render
//   float16.js the float16 card (imported on its first press)
import { _, num } from "../i18n.js";
import { client, hideBootIfStopped } from "./client.js";
import { cancelCheck, doCheck } from "./check.js";
import { doCount } from "./count.js";
import { $, buttons, form, guarded, markStale, readHash, status, whenIdle } from "./form.js";
import { cancelTime, doTime } from "./time.js";
import { cancelBackwardCheck, doBackwardCheck, doBackwardCount } from "./backward.js";
import { direction } from "./direction.js";
import { cancelBackwardTime, doBackwardTime } from "./time-backward.js";

// Each button does the forward's or the backward's action, as the Direction says.
const byDirection = (forward, backward) => () => (direction() === "backward" ? backward() : forward());

whenIdle(hideBootIfStopped);

// A shared link opens at the lab, with its settings filled in.
function openFromLink() {
  if (!readHash()) return;
  $("lab").scrollIntoView();
  if (!status.textContent) {
    status.textContent = _("The settings from your link are filled in below. Press Count, Check or Time.");
  }
}

// The model's sentence brings its own N and d.
function useModelSizes() {
  if (!$("input-model").checked) return;
  const radio = $("input-model");
  $("n").value = radio.dataset.n;
  $("d").value = radio.dataset.d;
  $("causal").checked = false;
  status.textContent = _("The model's sentence has N = {n} tokens and d = {d}; the form now says so.", {
    n: num(Number(radio.dataset.n)),
    d: radio.dataset.d,
  });
}

form.addEventListener("submit", guarded(byDirection(doCount, doBackwardCount)));
buttons.check.addEventListener("click", guarded(byDirection(doCheck, doBackwardCheck)));
buttons.time.addEventListener("click", guarded(byDirection(doTime, doBackwardTime)));
// Cancel stops whichever of Check and Time is running, in either direction.
buttons.cancel.addEventListener("click", () => {
  const time = buttons.cancel.dataset.for === "time";
  if (direction() !== "backward") return time ? cancelTime() : cancelCheck();
  return time ? cancelBackwardTime() : cancelBackwardCheck();
});
$("time-retry").addEventListener("click", guarded(byDirection(doTime, doBackwardTime)));
// The float16 card's code and data load on its first press, not with the page.
$("f16-button").addEventListener("click", async () => {
  try {
    await (await import("./float16.js")).runFloat16Card();
  } catch (err) {
    $("f16-alert").textContent = _("The float16 card stopped: {error}", { error: err.message || String(err) });
  }
});
openFromLink();
// Start Python as soon as the learner shows intent, so the first Count answers at once: the lab's form
// scrolled into view, a pointer over the lab, or focus in it; never at page load,
// so a page whose learner never comes near the lab stays light. Python is then
// ready (a few seconds) before the first press, and Count answers at once.
// The share of the form that must be on screen to count as the lab scrolled into view.
const INTENT_VISIBLE = 0.25;
function startOnIntent() {
  const start = () => {
    observer?.disconnect();
    client.start();
  };
  const observer =
    typeof IntersectionObserver === "function"
      ? new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && start(), {
          threshold: INTENT_VISIBLE,
        })
      : null;
  observer?.observe(form);
  for (const type of ["pointerenter", "focusin"]) {
    $("lab").addEventListener(type, start, { once: true });
  }
}
startOnIntent();
window.addEventListener("hashchange", readHash);
$("input-model").addEventListener("change", () => {
  useModelSizes();
  markStale();
});
form.addEventListener("input", markStale);
form.addEventListener("change", markStale);

// The tiles' walk (walk/index.js) loads only when the learner opens it or presses Count.
const walk = (always) => import("./walk/index.js").then((m) => m.follow({ always }));
$("walk").addEventListener("toggle", () => $("walk").open && walk(false));
form.addEventListener("submit", () => walk(true));

// Count, Check or Time pressed before this module ran (static/js/early-press.js): run it now.
window.canneryReady?.(form);

// For tests and for the curious: the lab's actions, callable from the console.
window.cannery = Object.assign(window.cannery || {}, {
  lab: { doCount, doCheck, doTime, doBackwardCount, doBackwardCheck, doBackwardTime, client },
});
