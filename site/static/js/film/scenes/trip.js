// Scene 4, one trip: the fused kernel at work. A Q tile comes up to the bench
// once, K and V tiles walk past it, S and P stay on the bench, O goes down
// once; then the closing notes (the same answer, FlashAttention, its loops).
import { _, num } from "../../i18n.js";
import { W, dual, el, memory, stores } from "../draw.js";

// the bench spans y 60..270 (tiles rest on it 300 above their stores), the door
// 270..370; words about the bench sit beside it, left or right of the door,
// out of the tiles' way (K and V come up straight through the door)
const BENCH_Y = 60;
const BENCH_H = 210;
const UP = 300;
const NOTE = { x: 20, y: 305 }; // left of the door: what stays on the bench
const SIDE = { x: 548, y: 345 }; // right of the door, under its name: what is done to O
// Q, K, V and O in the warehouse
const STORES = [
  ["Q", "fill-q", 150],
  ["K", "fill-k", 330],
  ["V", "fill-v", 510],
  ["O", "fill-o", 690],
];

/** The Q tile goes up through the door and stays on the bench. */
function queryTile(g, storeNames, { F, T, tl, hide, fadeIn, fadeOut }) {
  const d = F.d16;
  const q = el(g, "g", {});
  el(q, "rect", { x: 150, y: 390, width: 120, height: 90, rx: 4, class: "fill-q" });
  dual(q, { x: 210, y: 428, "text-anchor": "middle", class: "film-on", "font-size": 18 }, _("Q tile"), "Q");
  const small = { "text-anchor": "middle", class: "film-on", "font-size": 15 };
  dual(q, { x: 210, y: 452, ...small }, _("{n} rows", { n: d.B_r }), "");
  dual(q, { x: 210, y: 472, ...small }, `d = ${num(d.d)}`, "");
  hide(q);
  // the tile leaves the warehouse: its name there gives way while it passes
  tl.set(storeNames.Q, { autoAlpha: 0 }, T("bench") + 0.2);
  tl.set(storeNames.Q, { autoAlpha: 1 }, T("bench") + 1.6);
  fadeIn(q, T("bench") + 0.2, 0.2);
  tl.to(q, { x: 120, y: -UP, duration: 1.4, ease: "power1.inOut" }, T("bench") + 0.2);
  const qNote = dual(
    g,
    { ...NOTE, class: "film-label" },
    _("{n} query rows stay on the bench", { n: d.B_r }),
    _("{n} query rows", { n: d.B_r }),
  );
  hide(qNote);
  fadeIn(qNote, T("bench") + 1.8);
  fadeOut(qNote, T("walk"), 0.2);
}

/** K and V tiles, one after another: up through the door, used, dropped. Returns their note. */
function keyValueWalk(g, storeNames, { F, T, E, tl, hide, fadeIn }) {
  const d = F.d16;
  const keyTiles = Math.ceil(F.N_raw / d.B_c);
  const cycles = 6;
  const span = (E("update") - T("walk") - 0.5) / cycles;
  for (let k = 0; k < cycles; k += 1) {
    const kv = el(g, "g", {});
    el(kv, "rect", { x: 330, y: 390, width: 56, height: 90, rx: 4, class: "fill-k" });
    el(kv, "text", { x: 358, y: 445, "text-anchor": "middle", class: "film-on", "font-size": 18 }, "K");
    el(kv, "rect", { x: 392, y: 390, width: 56, height: 90, rx: 4, class: "fill-v" });
    el(kv, "text", { x: 420, y: 445, "text-anchor": "middle", class: "film-on", "font-size": 18 }, "V");
    hide(kv);
    const at = T("walk") + k * span;
    // across to the door (the K store's name gives way while the tiles sit on
    // it), straight up through it to the bench, then used and dropped there
    tl.set(kv, { autoAlpha: 1 }, at);
    tl.set(storeNames.K, { autoAlpha: 0 }, at);
    tl.to(kv, { x: 90, duration: span * 0.12, ease: "power1.inOut" }, at);
    tl.set(storeNames.K, { autoAlpha: 1 }, at + span * 0.12);
    tl.to(kv, { y: -UP, duration: span * 0.25, ease: "power1.inOut" }, at + span * 0.12);
    tl.to(kv, { autoAlpha: 0, duration: span * 0.3, ease: "power1.in" }, at + span * 0.7);
  }
  const kvNote = dual(
    g,
    { ...NOTE, class: "film-label" },
    _("K, V tiles of {rows} rows: {tiles} per query tile", { rows: d.B_c, tiles: keyTiles }),
    _("K, V: {tiles} tiles", { tiles: keyTiles }),
  );
  hide(kvNote);
  fadeIn(kvNote, T("walk") + 0.3);
  return kvNote;
}

/** On the bench: a scratch S tile and its P, m, and the O being built, rescaled
 *  when a bigger score arrives (with the worked row's numbers). Returns O's nodes. */
function benchWork(g, kvNote, { F, T, tl, hide, fadeIn, fadeOut }) {
  const ex = F.ex;
  const on = { "text-anchor": "middle", class: "film-on", "font-size": 18 };
  const sTile = el(g, "rect", { x: 560, y: 90, width: 60, height: 60, rx: 4, class: "fill-s" });
  const sText = el(g, "text", { x: 590, y: 130, ...on }, "S");
  const pTile = el(g, "rect", { x: 630, y: 90, width: 60, height: 60, rx: 4, class: "fill-p" });
  const pText = el(g, "text", { x: 660, y: 130, ...on }, "P");
  const mText = dual(
    g,
    { x: 270, y: 215, class: "film-text text-m" },
    `m: ${num(ex.steps[0].m)} → ${ex.m}`,
    `m ${num(ex.steps[0].m)}→${ex.m}`,
  );
  // O so far: grown by the first tiles, shrunk when the bigger score arrives, grown again
  const grown = 80;
  const oAcc = el(g, "rect", { x: 560, y: 215, width: 0, height: 40, rx: 4, class: "fill-o" });
  const oText = el(g, "text", { x: 564, y: 243, class: "film-on", "font-size": 18 }, "O");
  const rescale = dual(
    g,
    { ...SIDE, class: "film-label" },
    _("O × {factor} = O × {value}, then + P·V", { factor: ex.shrink, value: ex.shrink_value }),
    `O × ${ex.shrink_value}`,
  );
  hide([sTile, sText, pTile, pText, mText, oText, rescale]);
  fadeIn([sTile, sText], T("update"));
  fadeIn([pTile, pText], T("update") + 0.8);
  fadeIn([mText, oText], T("update") + 0.5);
  fadeIn(rescale, T("update") + 2.5);
  tl.to(oAcc, { attr: { width: grown }, duration: 2.0, ease: "none" }, T("update"));
  tl.to(
    oAcc,
    { attr: { width: grown * Math.exp(ex.steps[0].m - ex.steps[1].m) }, duration: 0.6, ease: "power2.inOut" },
    T("update") + 2.5,
  );
  tl.to(oAcc, { attr: { width: 120 }, duration: 2.5, ease: "none" }, T("update") + 3.6);
  fadeOut([rescale, kvNote], T("write"), 0.3);
  return [oAcc, oText];
}

/** At the end: divide by l, then the finished rows go down through the door, once. */
function writeOnce(g, storeNames, building, { F, T, tl, hide, fadeIn }) {
  const divide = dual(
    g,
    { ...SIDE, class: "film-label" },
    _("O ÷ l (l = {l} in the worked row)", { l: F.ex.l }),
    "O ÷ l",
  );
  hide(divide);
  fadeIn(divide, T("write") + 0.2);
  tl.to(divide, { autoAlpha: 0, duration: 0.3 }, T("write") + 2.3);
  const oOut = el(g, "g", {});
  el(oOut, "rect", { x: 560, y: 215, width: 120, height: 40, rx: 4, class: "fill-o" });
  el(oOut, "text", { x: 620, y: 243, "text-anchor": "middle", class: "film-on", "font-size": 18 }, "O");
  hide(oOut);
  const at = T("write") + 0.8;
  tl.set(oOut, { autoAlpha: 1 }, at);
  tl.set(building, { autoAlpha: 0 }, at);
  // to the door, down through it, then along the warehouse to O's place, whose
  // name gives way to it (as V's does while it passes)
  tl.to(oOut, { x: -140, duration: 0.5, ease: "power1.inOut" }, at);
  tl.to(oOut, { y: 175, duration: 0.7, ease: "power1.inOut" }, at + 0.5);
  tl.set([storeNames.O, storeNames.V], { autoAlpha: 0 }, at + 1.2);
  tl.to(oOut, { x: 130, duration: 0.6, ease: "power1.inOut" }, at + 1.2);
  tl.set(storeNames.V, { autoAlpha: 1 }, at + 1.8);
  const written = dual(
    g,
    { x: 560, y: 362, class: "film-label" },
    _("O, finished: written once"),
    _("O, written once"),
  );
  hide(written);
  fadeIn(written, T("write") + 2.6);
  const stay = dual(g, { ...NOTE, class: "film-text text-s" }, _("S and P stay on the bench"), _("S, P stay here"));
  const ring = el(g, "rect", { x: 552, y: 82, width: 146, height: 76, rx: 8, class: "film-ring" });
  hide([stay, ring]);
  fadeIn([stay, ring], T("never"));
}

/** The closing note, with the kernel stepped back (gone, so that its words
 *  never show through): the same answer, checked on our model's heads. */
function sameAnswer(g0, g, { F, T, tl, hide, fadeIn, fadeOut }) {
  tl.to(g, { autoAlpha: 0, duration: 0.2 }, T("same"));
  const m = F.model;
  const same = el(g0, "g", {});
  el(same, "text", { x: W / 2, y: 150, "text-anchor": "middle", class: "film-big" }, _("the same answer"));
  if (m.checked_heads) {
    dual(
      same,
      { x: W / 2, y: 215, "text-anchor": "middle", class: "film-text" },
      _("all {heads} heads of our model: tiled ✓, plain ✓", { heads: m.checked_heads }),
      _("{heads} heads: tiled ✓ plain ✓", { heads: m.checked_heads }),
    );
    dual(
      same,
      { x: W / 2, y: 265, "text-anchor": "middle", class: "film-text" },
      _("within float32 rounding of the exact (float64) answer"),
      _("within float32 rounding"),
    );
    if (m.worst_fused) {
      dual(
        same,
        { x: W / 2, y: 330, "text-anchor": "middle", class: "film-label" },
        _("largest error: tiled {fused}, plain {plain}", { fused: m.worst_fused, plain: m.worst_plain }),
        _("worst error {fused}", { fused: m.worst_fused }),
      );
    }
  } else {
    el(same, "text", { x: W / 2, y: 215, "text-anchor": "middle", class: "film-text" }, _("within float32 rounding"));
  }
  hide(same);
  fadeIn(same, T("same") + 0.2, 0.3); // the stage is never blank
  fadeOut(same, T("fa"), 0.2);
  tl.to(g, { autoAlpha: 1, duration: 0.3 }, T("fa") + 0.2);
}

/** FlashAttention's name, then its loop order beside ours, with the kernel
 *  stepped back; what it saves for the backward pass (m and l, in the 2022
 *  paper's Algorithm 1), and FlashAttention-2's one logsumexp L per row. */
function flashAttention(g0, g, mem, { T, tl, hide, fadeIn, fadeOut }) {
  fadeOut(mem.benchLabel, T("fa"), 0.2);
  const fa = dual(
    g0,
    { x: W / 2, y: 40, "text-anchor": "middle", class: "film-big" },
    _("FlashAttention (Dao et al., 2022)"),
    "FlashAttention, 2022",
  );
  hide(fa);
  fadeIn(fa, T("fa"));
  tl.to(g, { autoAlpha: 0, duration: 0.3 }, T("loops"));
  const loops = el(g0, "g", {});
  const text = (x, y, cls, wide, narrow) => dual(loops, { x, y, class: cls }, wide, narrow);
  el(loops, "text", { x: 80, y: 110, class: "film-text" }, _("ours:"));
  text(260, 110, "film-text", _("for each Q tile → for each K, V tile"), _("Q tiles outside"));
  el(loops, "text", { x: 80, y: 190, class: "film-text" }, "FlashAttention:");
  text(260, 230, "film-text", _("for each K, V tile → for each Q tile"), _("K, V tiles outside"));
  text(80, 310, "film-text text-m", _("it also saves m and l for each query row,"), _("it also saves m and l"));
  text(80, 350, "film-text text-m", _("for the backward pass"), _("for the backward pass"));
  text(80, 390, "film-label", _("(training needs them to recompute P without storing it)"), "");
  text(
    80,
    460,
    "film-text",
    _("FlashAttention-2 (2023) saves them as one number: L = m + log l"),
    _("FlashAttention-2 (2023): L = m + log l"),
  );
  hide(loops);
  fadeIn(loops, T("loops") + 0.3);
}

/** Scene 4 on its group g0, with the film's stage (see ../scenes.js). */
export function trip(g0, stage) {
  const g = el(g0, "g", {}); // the kernel at work; dimmed under the closing notes
  const mem = memory(g, BENCH_Y, BENCH_H, { doorX: 548, doorY: 300 });
  const storeNames = stores(g, STORES, { y: 390, width: 120, height: 90, textY: 445 });
  queryTile(g, storeNames, stage);
  const kvNote = keyValueWalk(g, storeNames, stage);
  const building = benchWork(g, kvNote, stage);
  writeOnce(g, storeNames, building, stage);
  sameAnswer(g0, g, stage);
  flashAttention(g0, g, mem, stage);
}
