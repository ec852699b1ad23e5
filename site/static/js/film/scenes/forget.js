// Scene 7, the forgotten step: the rescale left out, l wrong on the worked
// row, the checker's grid of heads it catches, and why a sorted row hides it.
import { _, num } from "../../i18n.js";
import { dual, el } from "../draw.js";

const L_SCALE = 170; // px per unit of l: the broken l's bar leaves room for its value on a phone
const CELL = 38; // a grid cell's side
const GRID_X = 230; // the layers' names end left of it
const GRID_Y = 246;

/** The rule, struck out. */
function struckRule(g, { T, hide, fadeIn }) {
  el(g, "text", { x: 480, y: 50, "text-anchor": "middle", class: "film-big" }, _("l ← l · e^(old m − new m)"));
  const strike = el(g, "line", {
    x1: 280,
    y1: 40,
    x2: 680,
    y2: 40,
    stroke: "currentColor",
    "stroke-width": 4,
    class: "text-s",
  });
  hide(strike);
  fadeIn(strike, T("easy") + 1.5);
}

/** l with the step and without it, on the worked row. */
function twoLs(g, ex, { T, hide, fadeIn }) {
  const good = el(g, "rect", { x: 260, y: 110, width: ex.l_raw * L_SCALE, height: 34, class: "fill-l" });
  const goodT = el(g, "text", { x: 20, y: 138, class: "film-text" }, _("with the step"));
  const goodV = el(g, "text", { x: 270 + ex.l_raw * L_SCALE, y: 138, class: "film-good-text" }, `l = ${ex.l} ✓`);
  const bad = el(g, "rect", {
    x: 260,
    y: 158,
    width: ex.broken_l_raw * L_SCALE,
    height: 34,
    class: "fill-l",
    "fill-opacity": 0.55,
  });
  const badT = el(g, "text", { x: 20, y: 184, class: "film-text" }, _("without it"));
  const badV = el(
    g,
    "text",
    { x: 270 + ex.broken_l_raw * L_SCALE, y: 184, class: "film-bad-text" },
    `l = ${ex.broken_l} ✗`,
  );
  const rowT = el(
    g,
    "text",
    { x: 20, y: 96, class: "film-label" },
    _("scores {scores}, tiles of {tile}", { scores: ex.scores, tile: ex.tile_raw }),
  );
  hide([good, goodT, goodV, bad, badT, badV, rowT]);
  fadeIn([rowT, good, goodT, goodV], T("rerun"));
  fadeIn([bad, badT, badV], T("rerun") + 1.2);
}

/** One layer's row of the grid: its label, then a ✓ or ✗ cell per head. Returns the nodes drawn. */
function gridRow(g, m, row, L) {
  // facts.json numbers layers from 0 (layer 0 is the lab's input); so does the film
  const layer = m.grid_layers ? m.grid_layers[L] : L;
  const lab = dual(
    g,
    { x: GRID_X - 10, y: GRID_Y + L * CELL + 27, "text-anchor": "end", class: "film-label" },
    layer === m.lab_layer ? _("layer {n} (lab)", { n: layer }) : _("layer {n}", { n: layer }),
    layer === m.lab_layer ? _("{n} (lab)", { n: layer }) : num(layer),
  );
  const nodes = [lab];
  row.forEach((h, H) => {
    const r = el(g, "rect", {
      x: GRID_X + H * CELL,
      y: GRID_Y + L * CELL,
      width: CELL - 3,
      height: CELL - 3,
      rx: 3,
      class: h.broken_passed ? "fill-v" : "fill-s",
    });
    const t = el(
      g,
      "text",
      {
        x: GRID_X + H * CELL + (CELL - 3) / 2,
        y: GRID_Y + L * CELL + 27,
        "text-anchor": "middle",
        class: "film-on",
        "font-size": 18,
      },
      h.broken_passed ? "✓" : "✗",
    );
    nodes.push(r, t);
  });
  return nodes;
}

/** The checker on the broken kernel: every head of every layer, and its key. */
function checkerGrid(g, m, { T, tl, hide, fadeIn }) {
  const title = dual(
    g,
    { x: 20, y: 232, class: "film-label" },
    _("checker, broken kernel: {failed} of {heads} heads flagged", {
      failed: m.broken_failed,
      heads: m.checked_heads,
    }),
    _("broken kernel: {failed} of {heads} flagged", { failed: m.broken_failed, heads: m.checked_heads }),
  );
  const cells = m.grid.flatMap((row, L) => gridRow(g, m, row, L));
  const kx = GRID_X + 12 * CELL + 16;
  const key = dual(g, { x: kx, y: GRID_Y + 30, class: "film-label" }, _("✗ wrong rows caught"), _("✗ caught"));
  const key2 = dual(g, { x: kx, y: GRID_Y + 80, class: "film-label" }, _("✓ largest score"), _("✓ largest"));
  const key3 = dual(
    g,
    { x: kx, y: GRID_Y + 102, class: "film-label" },
    _("always in the first tile"),
    _("came first"),
    { y: GRID_Y + 120 },
  );
  hide([title, ...cells, key, key2, key3]);
  fadeIn(title, T("caught"));
  tl.to(cells, { autoAlpha: 1, duration: 0.15, stagger: 0.03 }, T("caught") + 0.5);
  fadeIn([key, key2, key3], T("lucky"));
}

/** Scene 7 on its group g, with the film's stage (see ../scenes.js). */
export function forget(g, stage) {
  const { F, T, hide, fadeIn } = stage;
  const ex = F.ex;
  struckRule(g, stage);
  twoLs(g, ex, stage);
  if (F.model.grid) checkerGrid(g, F.model, stage);
  const sorted = dual(
    g,
    { x: 20, y: 528, class: "film-text" },
    _("order the row {row}: l = {l} with or without the step", { row: ex.sorted, l: ex.sorted_broken_l }),
    _("row {row}: l = {l} either way", { row: ex.sorted, l: ex.sorted_broken_l }),
  );
  hide(sorted);
  fadeIn(sorted, T("lucky") + 1.0);
}
