// The film's scenes, drawn in SVG from media/film.json (figures computed at
// build time by film/film_figures.py from the emulator and facts.json).
//
// createFilm() builds every scene once, in the order of SCENES below, and one
// paused GSAP timeline. Each scene is one function in ./scenes/, drawing on its
// own group with the shared helpers of ./draw.js and the stage made here (the
// timeline, the cue times, fades). render(t) seeks that timeline to t and
// refreshes the number labels from their tweened values, so a frame depends
// only on t: seeking and playing agree.
// Each motion shows a cause: a tile moves because bytes cross the door; l
// shrinks because a bigger score arrived.

import { _ } from "../i18n.js";
import { el } from "./draw.js";
import { count } from "./scenes/count.js";
import { forget } from "./scenes/forget.js";
import { goodnight } from "./scenes/goodnight.js";
import { largest } from "./scenes/largest.js";
import { leaves } from "./scenes/leaves.js";
import { online } from "./scenes/online.js";
import { plain } from "./scenes/plain.js";
import { question } from "./scenes/question.js";
import { table } from "./scenes/table.js";
import { trip } from "./scenes/trip.js";

/** The film, scene by scene: each id is a chapter of film.toml, whose times
 *  show and hide the scene's group; draw(g, stage) fills it and may return
 *  hooks for the player ({setGuess}). */
export const SCENES = [
  { id: "table", draw: table }, // 1. the table of scores
  { id: "plain", draw: plain }, // 2. the plain way
  { id: "online", draw: online }, // 3. shares without the whole row
  { id: "trip", draw: trip }, // 4. one trip
  { id: "count", draw: count }, // 5. the count
  { id: "question", draw: question }, // 6. the question
  { id: "forget", draw: forget }, // 7. the forgotten step
  { id: "largest", draw: largest }, // 8. why keep the largest
  { id: "leaves", draw: leaves }, // 9. what the count leaves out
  { id: "goodnight", draw: goodnight }, // 10. goodnight
];

/** The drawing: an SVG of 960 × 540 with the arrowhead marker and the background. */
function canvas(host) {
  const svg = el(host, "svg", {
    viewBox: "0 0 960 540",
    role: "img",
    "aria-label": _("The film: animated drawing; the captions and the transcript say what it shows"),
    class: "film-svg",
  });
  const defs = el(svg, "defs");
  const marker = el(defs, "marker", {
    id: "film-arrowhead",
    viewBox: "0 0 10 10",
    refX: 9,
    refY: 5,
    markerWidth: 8,
    markerHeight: 8,
    orient: "auto-start-reverse",
  });
  el(marker, "path", { d: "M0,0 L10,5 L0,10 z", class: "film-arrowhead" });
  el(svg, "rect", { x: 0, y: 0, width: 960, height: 540, class: "film-bg" });
  return svg;
}

/** What every scene draws with: the figures F, cue times T(id) (start) and
 *  E(id) (end) in seconds, the chapters by id, the paused timeline tl, labels
 *  (refreshers run after every seek), hide/fadeIn/fadeOut, and scene(id),
 *  the group a scene draws on, shown only during its chapter. */
function makeStage(svg, data, gsap) {
  const cues = Object.fromEntries(data.cues.map((c) => [c.id, c]));
  const chapters = Object.fromEntries(data.chapters.map((c) => [c.id, c]));
  const tl = gsap.timeline({ paused: true });
  const hide = (nodes) => gsap.set(nodes, { autoAlpha: 0 });
  const scene = (id) => {
    const g = el(svg, "g", { class: `film-scene scene-${id}`, "data-scene": id });
    const ch = chapters[id];
    if (ch.start_s > 0) {
      hide(g);
      tl.set(g, { autoAlpha: 1 }, ch.start_s);
    }
    if (ch.end_s < data.runtime_s) tl.set(g, { autoAlpha: 0 }, ch.end_s);
    return g;
  };
  return {
    data,
    F: data.figures,
    T: (id) => cues[id].start_s,
    E: (id) => cues[id].end_s,
    chapters,
    tl,
    labels: [],
    hide,
    fadeIn: (nodes, at, dur = 0.5) => tl.to(nodes, { autoAlpha: 1, duration: dur, ease: "power1.out" }, at),
    fadeOut: (nodes, at, dur = 0.4) => tl.to(nodes, { autoAlpha: 0, duration: dur, ease: "power1.in" }, at),
    scene,
  };
}

/** The words and numbers a frame draws (the wide wording), in drawing order:
 *  every text not hidden and at least 30% opaque. */
function drawnText(svg) {
  const out = [];
  for (const t of svg.querySelectorAll("text")) {
    if (t.classList.contains("film-narrow") || !t.textContent.trim()) continue;
    let n = t;
    let alpha = 1;
    while (n && n !== svg) {
      if (n.style && n.style.visibility === "hidden") {
        alpha = 0;
        break;
      }
      if (n.style && n.style.opacity !== "") alpha *= Number(n.style.opacity);
      n = n.parentNode;
    }
    if (alpha >= 0.3 && !out.includes(t.textContent.trim())) out.push(t.textContent.trim());
  }
  return out.join("; ");
}

/** Build the film in host from film.json's data with GSAP. Returns {svg,
 *  render(t), timeline, setGuess(text), describe(cueId)}. */
export function createFilm(host, data, gsap) {
  const svg = canvas(host);
  const stage = makeStage(svg, data, gsap);
  const hooks = {};
  for (const { id, draw } of SCENES) Object.assign(hooks, draw(stage.scene(id), stage));
  const { tl, labels } = stage;
  // pad the timeline to the full runtime so seek(runtime) is defined
  tl.set({}, {}, data.runtime_s);

  function render(t) {
    tl.seek(Math.max(0, Math.min(t, data.runtime_s)), false);
    for (const f of labels) f();
  }

  // Each caption's text alternative: the words and numbers its settled frame
  // draws (the wide wording), read once here from the timeline itself.
  const descriptions = {};
  for (const c of data.cues) {
    render(c.end_s - 0.05);
    descriptions[c.id] = drawnText(svg);
  }
  render(0);
  // the answer's description names the guess drawn now (whatever its language)
  let guessShown = _("your guess: not given");
  return {
    svg,
    render,
    timeline: tl,
    setGuess: (text) => {
      hooks.setGuess(text);
      const said = descriptions[data.question.answer_cue];
      if (said !== undefined) descriptions[data.question.answer_cue] = said.replace(guessShown, () => text);
      guessShown = text;
    },
    describe: (id) => descriptions[id] || _("the film"),
  };
}
