// Scene 1, the table of scores: Q and K, the scores S, each row's shares P,
// O = P·V, then d and the heads, and the table growing with N².
import { _ } from "../../i18n.js";
import { W, dual, el, group, mib, tile } from "../draw.js";

// the grid of the little table: its left and top edges, a cell's width and height
const GX = 210;
const GY = 150;
const CW = 110;
const CH = 66;

/** The film's title, gone before the first caption about scores. */
function titleCard(g, { data, T, fadeOut }) {
  const title = el(g, "text", { x: W / 2, y: 230, "text-anchor": "middle", class: "film-title" }, data.title);
  const sub = dual(
    g,
    { x: W / 2, y: 285, "text-anchor": "middle", class: "film-text" },
    _("how many trips attention makes to memory"),
    _("its trips to memory"),
  );
  fadeOut([title, sub], T("score") - 0.4);
}

/** One query and one key per word; the first row is the row worked by hand later. */
function queriesAndKeys(g, words, { T, hide, fadeIn }) {
  const qs = [];
  const ks = [];
  words.forEach((w, i) => {
    qs.push(
      tile(
        g,
        { x: 40, y: GY + i * CH + 4, width: 150, height: CH - 8, rx: 4, class: "fill-q" },
        { x: 115, y: GY + i * CH + 42, text: w, size: 22 },
      ),
    );
    ks.push(
      tile(
        g,
        { x: GX + i * CW + 4, y: GY - 66, width: CW - 8, height: 56, rx: 4, class: "fill-k" },
        { x: GX + i * CW + CW / 2, y: GY - 30, text: w, size: 22 },
      ),
    );
  });
  // on a phone the queries' name is their letter: the word would run under the keys
  const qLabel = dual(g, { x: 40, y: GY - 30, class: "film-label" }, _("queries, Q"), "Q");
  const kLabel = dual(g, { x: GX, y: GY - 76, class: "film-label" }, _("keys, K"), _("keys, K"));
  hide([...qs, ...ks, qLabel, kLabel]);
  fadeIn([...qs, qLabel], T("score"));
  fadeIn([...ks, kLabel], T("score") + 0.6);
  return [...qs, ...ks, qLabel, kLabel];
}

/** A cell of the n × n grid at row i, column j, filled with cls and labelled text. */
function cell(parent, i, j, cls, text) {
  el(parent, "rect", { x: GX + j * CW, y: GY + i * CH, width: CW, height: CH, class: `${cls} film-cell` });
  el(
    parent,
    "text",
    { x: GX + j * CW + CW / 2, y: GY + i * CH + 42, "text-anchor": "middle", class: "film-on", "font-size": 22 },
    text,
  );
}

/** The scores S, then row by row the shares P that replace them. */
function scoresAndShares(g, tb, n, { tl, T, hide, fadeIn, fadeOut }) {
  const sCells = [];
  const pCells = [];
  for (let i = 0; i < n; i += 1) {
    for (let j = 0; j < n; j += 1) {
      const sc = el(g, "g", {});
      cell(sc, i, j, "fill-s", tb.S[i][j]);
      sCells.push(sc);
    }
  }
  const rows = [];
  for (let i = 0; i < n; i += 1) {
    const row = el(g, "g", {});
    for (let j = 0; j < n; j += 1) cell(row, i, j, "fill-p", tb.P[i][j]);
    pCells.push(row);
    rows.push(el(g, "text", { x: GX + n * CW + 14, y: GY + i * CH + 42, class: "film-label" }, _("sum = 1")));
  }
  hide([...sCells, ...pCells, ...rows]);
  // the table's name, under it (beside it, it would run off the drawing)
  const at = { x: GX, y: GY + n * CH + 40 };
  const sLabel = dual(g, { ...at, class: "film-text text-s" }, _("S: one score per query, key"), _("S: scores"));
  const pLabel = dual(g, { ...at, class: "film-text text-p" }, _("P: each row’s shares"), _("P: shares"));
  hide([sLabel, pLabel]);
  tl.to(sCells, { autoAlpha: 1, duration: 0.25, stagger: 0.08 }, T("s-table"));
  fadeIn(sLabel, T("s-table") + 0.5);
  fadeOut(sLabel, T("p-table"), 0.3);
  // each row of S gives way to its row of shares: gone before the shares come
  tl.to(pCells, { autoAlpha: 1, duration: 0.35, stagger: 0.5 }, T("p-table") + 0.45);
  for (let i = 0; i < n; i += 1)
    tl.to(sCells.slice(i * n, i * n + n), { autoAlpha: 0, duration: 0.15 }, T("p-table") + 0.3 + i * 0.5);
  tl.to(rows, { autoAlpha: 1, duration: 0.3, stagger: 0.5 }, T("p-table") + 0.6);
  fadeIn(pLabel, T("p-table") + 0.3);
  return { drawn: [...sCells, ...pCells, pLabel], rows };
}

/** O = P·V: each output row mixes the value rows by its shares. */
function mixValues(g, n, rows, { tl, T, hide, fadeIn, fadeOut }) {
  const vs = [];
  const os = [];
  fadeOut(rows, T("mix"), 0.3);
  for (let i = 0; i < n; i += 1) {
    vs.push(el(g, "rect", { x: 680, y: GY + i * CH + 8, width: 100, height: CH - 16, rx: 3, class: "fill-v" }));
    os.push(el(g, "rect", { x: 830, y: GY + i * CH + 8, width: 100, height: CH - 16, rx: 3, class: "fill-o" }));
  }
  const vText = el(g, "text", { x: 730, y: GY + n * CH + 40, "text-anchor": "middle", class: "film-text" }, "V");
  const oText = el(g, "text", { x: 880, y: GY + n * CH + 40, "text-anchor": "middle", class: "film-text" }, "O");
  const mixNote = dual(
    g,
    { x: GX, y: GY + n * CH + 80, class: "film-label" },
    _("each row of O: its row of P times V"),
    "O = P · V",
  );
  const mixArrow = el(g, "path", { d: `M${784},${GY + 2 * CH} L${826},${GY + 2 * CH}`, class: "film-arrow" });
  hide([...vs, ...os, vText, oText, mixArrow, mixNote]);
  fadeIn([...vs, vText], T("mix") + 0.3);
  fadeIn([mixArrow, mixNote], T("mix") + 0.8);
  tl.to([...os, oText], { autoAlpha: 1, duration: 0.3, stagger: 0.15 }, T("mix") + 1.2);
  return [...vs, ...os, vText, oText, mixArrow, mixNote];
}

/** d, the head dimension: one row of Q as d cells. */
function headDimension(g, F) {
  const dims = el(g, "g", {});
  const dd = F.d16.d;
  const size = 34;
  el(dims, "text", { x: 60, y: 90, class: "film-text" }, _("one row of Q (or K, or V):"));
  for (let j = 0; j < dd; j += 1)
    el(dims, "rect", { x: 60 + j * size, y: 110, width: size - 4, height: size - 4, rx: 3, class: "fill-q" });
  el(dims, "path", {
    d: `M60,${155} L60,${165} L${60 + dd * size - 4},${165} L${60 + dd * size - 4},${155}`,
    class: "film-axis",
  });
  dual(
    dims,
    { x: 60, y: 200, class: "film-text" },
    // the count, later, takes d = 64 first, then asks about d = 16 (this row's d)
    _("d = {d} numbers: the head dimension (the count takes {first}, then {d})", { d: dd, first: F.d64.d }),
    _("d = {d} numbers", { d: dd }),
  );
  return dims;
}

/** Heads: one table each, and how many our model has. */
function heads(g, F) {
  const stack = el(g, "g", {});
  for (let h = 2; h >= 0; h -= 1) {
    el(stack, "rect", {
      x: 120 + h * 40,
      y: 250 + h * 36,
      width: 260,
      height: 160,
      rx: 4,
      class: "fill-s",
      "fill-opacity": 0.35 + 0.2 * (2 - h),
      stroke: "currentColor",
    });
  }
  el(
    stack,
    "text",
    { x: 250, y: 340, "text-anchor": "middle", class: "film-on", "font-size": 22 },
    _("head {k}: S", { k: 1 }),
  );
  const model = F.model.heads
    ? _("{heads} heads, d = {d}", { heads: F.model.heads, d: F.model.head_dim })
    : _("many heads");
  dual(
    stack,
    { x: 470, y: 330, class: "film-text" },
    _("one table per head, each its own S and P"),
    _("a table per head"),
  );
  const ours = _("our model: {model}", { model });
  dual(stack, { x: 470, y: 370, class: "film-label" }, ours, ours, { y: 380 });
  return stack;
}

/** The table grows with N squared: four sizes, side proportional to N, and the full size's bytes. */
function growingTable(g, { F, T, hide, fadeIn }) {
  const sizes = [8, 4, 2, 1].map((div) => F.N_raw / div);
  const side = (nn) => (360 * nn) / F.N_raw;
  const x0 = 40;
  const y0 = 500;
  const squares = sizes.map((nn, k) => {
    const s = side(nn);
    const sq = el(g, "rect", {
      x: x0,
      y: y0 - s,
      width: s,
      height: s,
      class: "fill-s",
      "fill-opacity": 0.25 + 0.15 * (3 - k),
      stroke: "currentColor",
    });
    const ly = y0 - s + (k === 0 ? 24 : 22);
    const lead = el(g, "line", { x1: x0 + s, y1: y0 - s + 1, x2: 412, y2: ly - 8, class: "film-grid" });
    const lab = dual(
      g,
      { x: 420, y: ly, class: "film-label" },
      `N = ${group(nn)}: ${mib(nn * nn * F.float_bytes)} MiB`,
      `${group(nn)}: ${mib(nn * nn * F.float_bytes)} MiB`,
    );
    hide([sq, lab, lead]);
    fadeIn([sq, lab, lead], T("square") + 0.1 + k * 1.1);
    return [sq, lab, lead];
  });
  // smaller squares in front of the larger ones
  for (const [sq] of [...squares].reverse()) g.append(sq);
  for (const [, lab, lead] of squares) g.append(lead, lab);
  const big = dual(
    g,
    { x: 580, y: 250, class: "film-big" },
    `${F.N} × ${F.N} × ${F.float_bytes} B`,
    `${F.N}² × ${F.float_bytes} B`,
  );
  const big2 = el(g, "text", { x: 580, y: 300, class: "film-big text-s" }, `= ${F.table.mib} MiB`);
  const big3 = dual(g, { x: 580, y: 345, class: "film-label" }, _("one head, float32"), _("one head, float32"), {
    x: 600,
    y: 392,
  });
  hide([big, big2, big3]);
  fadeIn(big, T("size"));
  fadeIn([big2, big3], T("size") + 1.2);
}

/** Scene 1 on its group g, with the film's stage (see ../scenes.js). */
export function table(g, stage) {
  const { F, T, hide, fadeIn, fadeOut } = stage;
  titleCard(g, stage);
  const tb = F.ex.table;
  const n = tb.words.length;
  const qk = queriesAndKeys(g, tb.words, stage);
  const { drawn, rows } = scoresAndShares(g, tb, n, stage);
  const mixed = mixValues(g, n, rows, stage);
  fadeOut([...qk, ...drawn, ...mixed], T("dim"), 0.3);
  const dims = headDimension(g, F);
  const stack = heads(g, F);
  hide([dims, stack]);
  fadeIn(dims, T("dim") + 0.3);
  fadeIn(stack, T("dim") + 3.0);
  fadeOut([dims, stack], T("square"), 0.3);
  growingTable(g, stage);
}
