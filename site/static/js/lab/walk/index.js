// The tiles, as they walk: the lab's picture of the schedule Count counts.
// main.js imports this module only when the learner opens the picture or presses
// Count, so nothing of it (nor its stylesheet, walk.css) loads with the page. Its
// numbers are the worker's op "walk" (emulator/walk.py, the emulator's own walk of
// the manifest); it follows the form: kernel, N, d, M, causal and direction.
//
//   model.js   the op's runs replayed step by step: squares, strips, tally
//   draw.js    the SVG: strips of query and key tiles, the grid, the moving frames
//   panel.js   the bench's tiles and the tally (table and bars)
//   words.js   the text alternative: each step in words, with its numbers
//   player.js  Back, Step, Play/Pause, To end, and the keys
import { _ } from "../../i18n.js";
import { backwardQuickErrors } from "../backward.js";
import { client } from "../client.js";
import { kernelLabel } from "../direction.js";
import { $, form, readForm, rules } from "../form.js";
import { resultOf } from "../reply.js";
import { quickErrors } from "../rules.js";
import { Drawing } from "./draw.js";
import { Walk } from "./model.js";
import { renderBench, renderTally } from "./panel.js";
import { Player } from "./player.js";
import { groupText, nowText, setupText } from "./words.js";

const details = $("walk");
const view = $("walk-view");
const message = $("walk-message");
let shownKey = null; // the settings the picture shows
let asked = null; // the settings of the request in flight
let player = null;

const settingsKey = (p) => JSON.stringify([p.direction, p.kernel, p.n, p.d, p.causal, p.workgroup_bytes]);

/** The stylesheet, once, before the first drawing (no flash of an unstyled grid). */
const styled = new Promise((resolve) => {
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = new URL("../../../css/walk.css", import.meta.url).href;
  link.addEventListener("load", resolve);
  link.addEventListener("error", resolve); // the picture still works, plainer
  document.head.appendChild(link);
});

function say(text, stale = false) {
  message.textContent = text;
  view.classList.toggle("stale", stale);
}

/** Draw a walk reply and reset the controls to its first step. */
function render(result) {
  const walk = new Walk(result);
  const order = walk.tensors.map((t) => t.name);
  const drawing = new Drawing(walk);
  $("walk-setup").textContent = setupText(walk, kernelLabel(result.kernel, result.label));
  $("walk-group").textContent = groupText(walk);
  const caption = document.createElement("p");
  caption.className = "walk-caption";
  caption.textContent = drawing.caption;
  $("walk-drawing").replaceChildren(drawing.svg, caption);
  const now = $("walk-now");
  if (player) player.stop();
  player = new Player(view, walk.steps, (done, playing) => {
    const step = done > 0 ? walk.step(done - 1) : null;
    const tally = walk.tally(done);
    drawing.update(done);
    renderBench($("walk-bench"), walk, step);
    const moving = new Set(step ? [...Object.keys(step.reads), ...Object.keys(step.writes)] : []);
    renderTally($("walk-tally"), walk, tally, order, moving);
    now.setAttribute("aria-live", playing ? "off" : "polite");
    now.textContent = nowText(walk, done, tally, order);
    view.dataset.done = String(done);
  });
  view.hidden = false;
  view.dataset.steps = String(walk.steps);
  view.dataset.shows = `${result.kernel} ${result.n}`; // for tests: which walk is drawn
}

/**
 * Walk the form's settings (when the picture is open, or `always`: Count was pressed).
 * A bad value keeps the picture already shown, marked as out of date, with the message.
 */
export async function follow({ always = false } = {}) {
  if (!always && !details.open) return;
  const p = readForm();
  const key = settingsKey(p);
  if (key === shownKey || key === asked) return;
  const quick = p.direction === "backward" ? backwardQuickErrors(p, "count") : quickErrors(p, "count", rules);
  if (quick.length) {
    say(quick.map((e) => e.message).join(" "), shownKey !== null);
    return;
  }
  asked = key;
  say(client.ready ? _("Walking the schedule…") : _("Starting Python, then walking the schedule…"), shownKey !== null);
  const reply = await client.request("walk", p);
  await styled;
  if (asked !== key) return; // newer settings were asked for meanwhile
  asked = null;
  const result = resultOf(reply, (errors) => say(errors.map((e) => e.message).join(" "), shownKey !== null));
  if (!result) return;
  shownKey = key;
  say("");
  render(result);
}

// The picture follows the form while it is open (main.js calls follow when it opens).
form.addEventListener("change", () => follow());
