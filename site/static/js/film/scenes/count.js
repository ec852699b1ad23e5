// Scene 5, the count: the bytes of plain and fused at d = 64 as stacked bars
// by tensor, why K and V come back, and d = 16 left for the learner to count.
import { _, num } from "../../i18n.js";
import { dual, el, plainAndFused, under } from "../draw.js";

// the axis at x 175 (its labels end left of it), the bars on y 460; the d = 64
// bars at D64, the d = 16 slots at D16, each pair 130 apart so that their names
// never meet on a phone
const AXIS = 175;
const BASE = 460;
const D64 = [180, 310];
const D16 = [540, 670];
const mid = ([a, b]) => (a + b + 80) / 2;

const TENSORS = ["S", "P", "K", "V", "Q", "O"];

/** A "d = …" label under a pair of bars centred on x. */
function dLabel(g, x, d) {
  dual(g, { x, y: 524, "text-anchor": "middle", class: "film-text" }, `d = ${num(d)}`, `d = ${num(d)}`, {
    y: 532,
  });
}

/** What the count adds up: one swatch per tensor. */
function legend(g, { T, hide, fadeIn, fadeOut }) {
  const key = el(g, "g", {});
  dual(
    key,
    { x: 400, y: 170, class: "film-text" },
    _("every byte through the door, by tensor:"),
    _("bytes by tensor:"),
  );
  TENSORS.forEach((name, k) => {
    el(key, "rect", {
      x: 400 + k * 80,
      y: 195,
      width: 64,
      height: 50,
      rx: 4,
      class: `fill-${name.toLowerCase()}`,
    });
    el(key, "text", { x: 432 + k * 80, y: 230, "text-anchor": "middle", class: "film-on", "font-size": 18 }, name);
  });
  hide(key);
  fadeIn(key, T("tally") + 0.3);
  fadeOut(key, T("d64why"), 0.3);
}

/** The d = 64 bars, grown from the axis, and the legend. */
function barsAtD64(g, stage) {
  const { F, T, tl, hide } = stage;
  const [b1, b2] = plainAndFused(g, F.d64, D64, AXIS, BASE, 330);
  dLabel(g, mid(D64), F.d64.d);
  dual(
    g,
    { x: 480, y: 24, "text-anchor": "middle", class: "film-label" },
    _("one head, N = {n}, float32, bench of {bytes} bytes", { n: F.N, bytes: F.M }),
    `N = ${F.N}, float32`,
    { x: 720, y: 34 },
  );
  hide([b1, b2]);
  legend(g, stage);
  const grow = (b, at) => {
    tl.fromTo(
      b,
      { scaleY: 0, transformOrigin: "50% 100%" },
      { scaleY: 1, duration: 1.2, ease: "power2.out", immediateRender: false },
      at,
    );
    tl.set(b, { autoAlpha: 1 }, at);
  };
  grow(b1, T("d64") + 0.5);
  grow(b2, T("d64") + 2.5);
}

/** "d = …: B_r = … query rows → … query tiles", above the bars of that d. */
function why(g, fig, y, x) {
  return dual(
    g,
    { x: 40, y, class: "film-text" },
    _("d = {d}: B_r = {rows} query rows → {tiles} query tiles, K and V read {tiles} times", {
      d: fig.d,
      rows: fig.B_r,
      tiles: fig.q_tiles,
    }),
    _("K, V read {tiles}×", { tiles: fig.q_tiles }),
    { x, y: 76, "text-anchor": "middle" },
  );
}

/** Why d = 64 moves so much: few query rows fit, so K and V are read again and again. */
function refetchAtD64(g, { F, T, hide, fadeIn, fadeOut }) {
  const why64 = why(g, F.d64, 54, mid(D64));
  hide(why64);
  fadeIn(why64, T("d64why") + 0.2);
  const refetch = dual(
    g,
    { x: 400, y: 330, class: "film-label" },
    _("K + V: {mib} MiB of each bar, {trips} trips", { mib: F.d64.kv_mib_fused, trips: F.d64.q_tiles }),
    `K + V: ${F.d64.kv_mib_fused} MiB`,
  );
  hide(refetch);
  fadeIn(refetch, T("d64refetch") + 0.3);
  fadeOut(refetch, T("d16"), 0.3);
}

/** d = 16: the film does not count it for you. Two unlabelled slots of the
 *  same height (a height would give the ratio away), and the recipe. */
function slotsAtD16(g, { F, T, hide, fadeIn }) {
  const slots = el(g, "g", {});
  for (const [x, name] of [
    [D16[0], _("plain")],
    [D16[1], _("fused")],
  ]) {
    el(slots, "rect", { x, y: BASE - 140, width: 80, height: 140, class: "film-box film-unknown" });
    el(slots, "text", { x: x + 40, y: BASE - 58, "text-anchor": "middle", class: "film-big" }, "?");
    el(slots, "text", { ...under(x + 40, BASE), class: "film-label" }, name);
  }
  dLabel(slots, mid(D16), F.d16.d);
  hide(slots);
  fadeIn(slots, T("d16") + 0.3);
  const why16 = why(g, F.d16, 82, mid(D16));
  hide(why16);
  fadeIn(why16, T("d16") + 0.8);
  // right of the d = 64 bars (and of their totals, at a phone's font size)
  const recipe = el(g, "g", {});
  const line = (y, text, cls) =>
    dual(recipe, { x: 428, y, class: cls }, text, text, { class: "film-label film-tight" });
  line(170, _("fused = Q + O + {tiles} × (K + V)", { tiles: F.d16.q_tiles }), "film-text");
  line(215, _("plain = fused + {times} × table", { times: F.cross.times_raw }), "film-text");
  line(255, _("table = {mib} MiB", { mib: F.table.mib }), "film-label");
  line(291, _("Q, K, V, O = {kib} KiB each", { kib: F.d16.tensor_kib }), "film-label");
  hide(recipe);
  fadeIn(recipe, T("recipe") + 0.2);
}

/** Scene 5 on its group g, with the film's stage (see ../scenes.js). */
export function count(g, stage) {
  barsAtD64(g, stage);
  refetchAtD64(g, stage);
  slotsAtD16(g, stage);
}
