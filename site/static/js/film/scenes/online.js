// Scene 3, shares without the whole row: the online softmax worked by hand on
// a row of scores in two tiles, the running largest m and running total l.
import { _, num } from "../../i18n.js";
import { dual, el, sup } from "../draw.js";

const L_SCALE = 220; // px per unit of l

/** A generic row: a share needs the total of the whole row. */
function wholeRow(g, { T, fadeOut }) {
  const row = [];
  for (let j = 0; j < 10; j += 1)
    row.push(el(g, "rect", { x: 180 + j * 60, y: 120, width: 54, height: 54, rx: 4, class: "fill-s" }));
  const brace = el(g, "path", { d: "M180,190 L180,200 L774,200 L774,190", class: "film-axis" });
  const braceText = el(
    g,
    "text",
    { x: 477, y: 228, "text-anchor": "middle", class: "film-text" },
    _("share = e^score ÷ (total over the whole row)"),
  );
  fadeOut([...row, brace, braceText], T("byhand") - 0.3);
}

/** m and l, named, with l's bar and the rescale rule. Returns the nodes that change. */
function runningValues(g, { T, hide, fadeIn }) {
  const mBox = el(g, "text", { x: 600, y: 305, class: "film-big text-m" }, "m = −∞");
  const mNote = dual(g, { x: 600, y: 350, class: "film-label" }, _("largest score so far"), _("largest so far"));
  const lName = el(g, "text", { x: 120, y: 305, class: "film-big text-l" }, "l = 0");
  const lNote = dual(
    g,
    { x: 120, y: 350, class: "film-label" },
    _("running total of e^(score − m)"),
    _("running total"),
  );
  const lBar = el(g, "rect", { x: 120, y: 368, width: 0, height: 30, class: "fill-l" });
  const formula = dual(
    g,
    { x: 120, y: 450, class: "film-text" },
    _("bigger score arrives:  l ← l · e^(old m − new m)"),
    _("l ← l · e^(old m − new m)"),
  );
  hide([mBox, mNote, lName, lNote, formula]);
  fadeIn([mBox, mNote, lName, lNote], T("running"));
  fadeIn(formula, T("rescale"));
  return { mBox, lName, lBar, formula };
}

/** The worked row's scores, in their tiles. Returns each tile's [frame, label]. */
function workedRow(g, ex, { T, hide, fadeIn }) {
  const cells = [];
  ex.scores_raw.forEach((v, j) => {
    const tileIdx = Math.floor(j / ex.tile_raw);
    const x = 200 + j * 90 + tileIdx * 50;
    const c = el(g, "g", {});
    el(c, "rect", { x, y: 110, width: 80, height: 80, rx: 4, class: "fill-s" });
    el(c, "text", { x: x + 40, y: 162, "text-anchor": "middle", class: "film-on", "font-size": 28 }, num(v));
    cells.push(c);
  });
  const tiles = ex.steps.map((s, k) => {
    const x = 200 + k * ex.tile_raw * 90 + k * 50;
    const r = el(g, "rect", {
      x: x - 8,
      y: 100,
      width: ex.tile_raw * 90 + 6,
      height: 100,
      rx: 8,
      fill: "none",
      stroke: "currentColor",
      "stroke-width": 3,
    });
    const t = el(g, "text", { x: x, y: 222, class: "film-label" }, _("tile {k}", { k: k + 1 }));
    return [r, t];
  });
  hide([...cells, ...tiles.flat()]);
  fadeIn(cells, T("byhand"));
  fadeIn(tiles.flat(), T("byhand") + 0.8);
  return tiles;
}

/** Tile by tile: m set, l grown; at tile 2, l shrunk to the new m, then grown by the tile's terms. */
function tileSteps(g, ex, tiles, shown, { T, tl, labels, hide, fadeIn, fadeOut }) {
  const mP = { v: 0, shown: 0 };
  const lP = { v: 0 };
  labels.push(() => {
    shown.mBox.textContent = mP.shown < 0.5 ? "m = −∞" : `m = ${num(+Number(mP.v).toFixed(3))}`;
    shown.lName.textContent = `l = ${num(lP.v, 3)}`;
    shown.lBar.setAttribute("width", String(Math.max(0, lP.v * L_SCALE)));
  });
  const [s1, s2] = ex.steps;
  const t1 = T("tile1");
  tl.to(tiles[0][0], { attr: { "stroke-width": 6 }, duration: 0.3 }, t1);
  tl.set(mP, { v: s1.m, shown: 1 }, t1 + 0.6);
  tl.to(lP, { v: s1.l, duration: 1.2, ease: "power1.out" }, t1 + 1.2);
  const t2 = T("tile2");
  tl.to(tiles[0][0], { attr: { "stroke-width": 3 }, duration: 0.3 }, t2);
  tl.to(tiles[1][0], { attr: { "stroke-width": 6 }, duration: 0.3 }, t2);
  tl.set(mP, { v: s2.m }, t2 + 1.0);
  // the total shrinks because a bigger score arrived
  tl.to(lP, { v: s2.l_shrunk, duration: 1.2, ease: "power2.inOut" }, t2 + 1.6);
  const note = (text) => el(g, "text", { x: 120, y: 436, class: "film-label" }, text);
  const shrinkNote = note(_("× {factor}: shrunk to match the new m", { factor: ex.shrink }));
  hide(shrinkNote);
  fadeIn(shrinkNote, t2 + 1.6);
  tl.to(lP, { v: s2.l, duration: 1.2, ease: "power1.out" }, t2 + 4.2);
  // then the tile's own terms are added: the note follows the step on screen
  const gainNote = note(_("+ {terms}: the new tile's terms", { terms: ex.l2_terms }));
  hide(gainNote);
  fadeOut(shrinkNote, t2 + 4.0, 0.2);
  fadeIn(gainNote, t2 + 4.2);
  fadeOut(shown.formula, t2 + 1.2, 0.2);
  return gainNote;
}

/** The check against the whole row, and the credit. */
function sameL(g, ex, gainNote, { T, hide, fadeIn, fadeOut }) {
  const check = dual(
    g,
    { x: 120, y: 478, class: "film-text" },
    _("whole row: {terms} = {full};  {full} × {factor} = {l}", {
      terms: ex.scores_raw.map((v) => `e${sup(v)}`).join(" + "),
      full: ex.full,
      factor: ex.e_minus_m,
      l: ex.l_from_full,
    }),
    _("whole row: {full} × {factor} = {l}", { full: ex.full, factor: ex.e_minus_m, l: ex.l_from_full }),
  );
  const ok = dual(
    g,
    { x: 120, y: 522, class: "film-good-text" },
    _("✓ the same l, without holding the whole row"),
    _("✓ the same l"),
  );
  hide([check, ok]);
  fadeOut(gainNote, T("check"), 0.2);
  fadeIn(check, T("check") + 0.3);
  fadeIn(ok, T("check") + 2.5);
  const credit = dual(
    g,
    { x: 940, y: 60, "text-anchor": "end", class: "film-text" },
    _("online softmax: Milakov & Gimelshein, 2018"),
    _("Milakov & Gimelshein, 2018"),
  );
  hide(credit);
  fadeIn(credit, T("credit"));
}

/** Scene 3 on its group g, with the film's stage (see ../scenes.js). */
export function online(g, stage) {
  const ex = stage.F.ex;
  wholeRow(g, stage);
  const shown = runningValues(g, stage);
  const tiles = workedRow(g, ex, stage);
  const gainNote = tileSteps(g, ex, tiles, shown, stage);
  sameL(g, ex, gainNote, stage);
}
