// The film's scenes, drawn in SVG from media/film.json (figures computed at
// build time by film/numbers.py from the emulator and facts.json).
//
// createFilm() builds every scene once and one paused GSAP timeline. render(t)
// seeks that timeline to t and refreshes the number labels from their tweened
// values, so a frame depends only on t: seeking and playing agree.
// Each motion shows a cause: a tile moves because bytes cross the door; l
// shrinks because a bigger score arrived.
//
// Every word drawn goes through _() (domain "page", site/static/js/i18n.js);
// every number is either a figure film.json already wrote in the page's
// language (F.*: "285.736.960" in pt-BR) or a raw value written by num().

import { _, num } from "../i18n.js";

const NS = "http://www.w3.org/2000/svg";
const W = 960;
const MIB = 1048576;

function el(parent, tag, attrs = {}, text) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (tag === "path" && /\bfilm-arrow\b/.test(attrs.class || ""))
    node.setAttribute("marker-end", "url(#film-arrowhead)");
  if (tag === "text" && !("font-size" in attrs) && /\bfilm-on\b/.test(attrs.class || ""))
    node.setAttribute("font-size", "18");
  if (text !== undefined) node.textContent = text;
  parent.append(node);
  return node;
}

// A label with a shorter wording for phones: both are drawn, CSS shows one
// (.film-wide above 40rem, .film-narrow below), so a frame still depends only on t.
function dual(parent, attrs, wide, narrow, narrowAttrs = {}) {
  const g = el(parent, "g", {});
  el(g, "text", { ...attrs, class: `${attrs.class || ""} film-wide` }, wide);
  el(g, "text", { ...attrs, ...narrowAttrs, class: `${attrs.class || ""} film-narrow` }, narrow);
  return g;
}

const group = (n) => num(Math.round(n));
const mib = (bytes) => {
  const v = bytes / MIB;
  return Math.abs(v - Math.round(v)) < 0.05 ? group(v) : num(v, 1);
};
const SUP = { "-": "⁻", 0: "⁰", 1: "¹", 2: "²", 3: "³", 4: "⁴", 5: "⁵", 6: "⁶", 7: "⁷", 8: "⁸", 9: "⁹", ".": "·" };
const sup = (x) =>
  String(x)
    .split("")
    .map((c) => SUP[c] ?? c)
    .join("");

export function createFilm(host, data, gsap) {
  const F = data.figures;
  const cues = Object.fromEntries(data.cues.map((c) => [c.id, c]));
  const chapters = Object.fromEntries(data.chapters.map((c) => [c.id, c]));
  const T = (id) => cues[id].start_s;
  const E = (id) => cues[id].end_s;

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

  const tl = gsap.timeline({ paused: true });
  const labels = []; // [() => void] refreshed after every seek
  const hide = (nodes) => gsap.set(nodes, { autoAlpha: 0 });
  const fadeIn = (nodes, at, dur = 0.5) => tl.to(nodes, { autoAlpha: 1, duration: dur, ease: "power1.out" }, at);
  const fadeOut = (nodes, at, dur = 0.4) => tl.to(nodes, { autoAlpha: 0, duration: dur, ease: "power1.in" }, at);

  function scene(id) {
    const g = el(svg, "g", { class: `film-scene scene-${id}`, "data-scene": id });
    const ch = chapters[id];
    if (ch.start_s > 0) {
      hide(g);
      tl.set(g, { autoAlpha: 1 }, ch.start_s);
    }
    if (ch.end_s < data.runtime_s) tl.set(g, { autoAlpha: 0 }, ch.end_s);
    return g;
  }

  function memory(g, benchY = 70, benchH = 170) {
    // the bench (workgroup memory) above, the warehouse (global memory) below, a door between
    el(g, "rect", { x: 250, y: benchY, width: 460, height: benchH, rx: 10, class: "film-box film-bench" });
    const benchLabel = dual(
      g,
      { x: 260, y: benchY - 10, class: "film-label" },
      _("the bench: workgroup memory, on the chip"),
      _("the bench"),
    );
    el(g, "rect", { x: 120, y: 370, width: 720, height: 130, rx: 10, class: "film-box film-warehouse" });
    dual(
      g,
      { x: 130, y: 525, class: "film-label" },
      _("the warehouse: global memory (HBM), off the chip"),
      _("the warehouse: global memory (HBM)"),
    );
    el(g, "rect", { x: 430, y: benchY + benchH, width: 100, height: 370 - benchY - benchH, class: "film-door" });
    const door = el(g, "text", { x: 540, y: benchY + benchH + 40, class: "film-label" }, _("the door"));
    return { benchLabel, door };
  }

  // ================= 1. The table of scores =================
  {
    const g = scene("table");
    const title = el(g, "text", { x: W / 2, y: 230, "text-anchor": "middle", class: "film-title" }, data.title);
    const sub = dual(
      g,
      { x: W / 2, y: 285, "text-anchor": "middle", class: "film-text" },
      _("how many trips attention makes to memory"),
      _("its trips to memory"),
    );
    fadeOut([title, sub], T("score") - 0.4);

    // a real little table: its first row is the row worked by hand later
    const tb = F.ex.table;
    const words = tb.words;
    const n = words.length;
    const gx = 210;
    const gy = 150;
    const cw = 110;
    const ch = 66;
    const qs = [];
    const ks = [];
    words.forEach((w, i) => {
      const q = el(g, "g", {});
      el(q, "rect", { x: 40, y: gy + i * ch + 4, width: 150, height: ch - 8, rx: 4, class: "fill-q" });
      el(q, "text", { x: 115, y: gy + i * ch + 42, "text-anchor": "middle", class: "film-on", "font-size": 22 }, w);
      qs.push(q);
      const k = el(g, "g", {});
      el(k, "rect", { x: gx + i * cw + 4, y: gy - 66, width: cw - 8, height: 56, rx: 4, class: "fill-k" });
      el(
        k,
        "text",
        { x: gx + i * cw + cw / 2, y: gy - 30, "text-anchor": "middle", class: "film-on", "font-size": 22 },
        w,
      );
      ks.push(k);
    });
    const qLabel = el(g, "text", { x: 40, y: gy - 30, class: "film-label" }, _("queries, Q"));
    const kLabel = dual(g, { x: gx, y: gy - 76, class: "film-label" }, _("keys, K"), _("keys, K"));
    hide([...qs, ...ks, qLabel, kLabel]);
    fadeIn([...qs, qLabel], T("score"));
    fadeIn([...ks, kLabel], T("score") + 0.6);

    const sCells = [];
    const pCells = [];
    for (let i = 0; i < n; i += 1) {
      for (let j = 0; j < n; j += 1) {
        const sc = el(g, "g", {});
        el(sc, "rect", { x: gx + j * cw, y: gy + i * ch, width: cw, height: ch, class: "fill-s film-cell" });
        el(
          sc,
          "text",
          { x: gx + j * cw + cw / 2, y: gy + i * ch + 42, "text-anchor": "middle", class: "film-on", "font-size": 22 },
          tb.S[i][j],
        );
        sCells.push(sc);
      }
    }
    const rows = [];
    for (let i = 0; i < n; i += 1) {
      const row = el(g, "g", {});
      for (let j = 0; j < n; j += 1) {
        el(row, "rect", { x: gx + j * cw, y: gy + i * ch, width: cw, height: ch, class: "fill-p film-cell" });
        el(
          row,
          "text",
          { x: gx + j * cw + cw / 2, y: gy + i * ch + 42, "text-anchor": "middle", class: "film-on", "font-size": 22 },
          tb.P[i][j],
        );
      }
      pCells.push(row);
      rows.push(el(g, "text", { x: gx + n * cw + 14, y: gy + i * ch + 42, class: "film-label" }, _("sum = 1")));
    }
    hide([...sCells, ...pCells, ...rows]);
    const sLabel = dual(
      g,
      { x: gx + n * cw + 14, y: gy - 30, class: "film-text text-s" },
      _("S: one score per query, key"),
      _("S: scores"),
    );
    const pLabel = dual(
      g,
      { x: gx + n * cw + 14, y: gy - 30, class: "film-text text-p" },
      _("P: each row’s shares"),
      _("P: shares"),
    );
    hide([sLabel, pLabel]);
    tl.to(sCells, { autoAlpha: 1, duration: 0.25, stagger: 0.08 }, T("s-table"));
    fadeIn(sLabel, T("s-table") + 0.5);
    fadeOut(sLabel, T("p-table"), 0.3);
    tl.to(pCells, { autoAlpha: 1, duration: 0.4, stagger: 0.5 }, T("p-table") + 0.3);
    // each row of S gives way to its row of shares
    for (let i = 0; i < n; i += 1)
      tl.to(sCells.slice(i * n, i * n + n), { autoAlpha: 0, duration: 0.2 }, T("p-table") + 0.3 + i * 0.5);
    tl.to(rows, { autoAlpha: 1, duration: 0.3, stagger: 0.5 }, T("p-table") + 0.6);
    fadeIn(pLabel, T("p-table") + 0.3);

    // O = P·V: each output row mixes the value rows by its shares
    const vs = [];
    const os = [];
    fadeOut(rows, T("mix"), 0.3);
    for (let i = 0; i < n; i += 1) {
      vs.push(el(g, "rect", { x: 680, y: gy + i * ch + 8, width: 100, height: ch - 16, rx: 3, class: "fill-v" }));
      os.push(el(g, "rect", { x: 830, y: gy + i * ch + 8, width: 100, height: ch - 16, rx: 3, class: "fill-o" }));
    }
    const vText = el(g, "text", { x: 730, y: gy + n * ch + 40, "text-anchor": "middle", class: "film-text" }, "V");
    const oText = el(g, "text", { x: 880, y: gy + n * ch + 40, "text-anchor": "middle", class: "film-text" }, "O");
    const mixNote = dual(
      g,
      { x: 210, y: gy + n * ch + 40, class: "film-label" },
      _("each row of O: its row of P times V"),
      "O = P · V",
    );
    const mixArrow = el(g, "path", { d: `M${784},${gy + 2 * ch} L${826},${gy + 2 * ch}`, class: "film-arrow" });
    hide([...vs, ...os, vText, oText, mixArrow, mixNote]);
    fadeIn([...vs, vText], T("mix") + 0.3);
    fadeIn([mixArrow, mixNote], T("mix") + 0.8);
    tl.to([...os, oText], { autoAlpha: 1, duration: 0.3, stagger: 0.15 }, T("mix") + 1.2);
    const first = [
      ...qs,
      ...ks,
      qLabel,
      kLabel,
      ...sCells,
      ...pCells,
      pLabel,
      ...vs,
      ...os,
      vText,
      oText,
      mixArrow,
      mixNote,
    ];
    fadeOut(first, T("dim"), 0.3);

    // d, the head dimension, and heads: one table each
    const dims = el(g, "g", {});
    const dd = F.d16.d;
    const cell = 34;
    el(dims, "text", { x: 60, y: 90, class: "film-text" }, _("one row of Q (or K, or V):"));
    for (let j = 0; j < dd; j += 1)
      el(dims, "rect", { x: 60 + j * cell, y: 110, width: cell - 4, height: cell - 4, rx: 3, class: "fill-q" });
    el(dims, "path", {
      d: `M60,${155} L60,${165} L${60 + dd * cell - 4},${165} L${60 + dd * cell - 4},${155}`,
      class: "film-axis",
    });
    dual(
      dims,
      { x: 60, y: 200, class: "film-text" },
      _("d = {d} numbers: the head dimension ({later} in the count, later)", { d: dd, later: F.d64.d }),
      _("d = {d} numbers", { d: dd }),
    );
    const heads = el(g, "g", {});
    for (let h = 2; h >= 0; h -= 1) {
      el(heads, "rect", {
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
      heads,
      "text",
      { x: 250, y: 340, "text-anchor": "middle", class: "film-on", "font-size": 22 },
      _("head {k}: S", { k: 1 }),
    );
    const model = F.model.heads
      ? _("{heads} heads, d = {d}", { heads: F.model.heads, d: F.model.head_dim })
      : _("many heads");
    dual(
      heads,
      { x: 500, y: 330, class: "film-text" },
      _("one table per head, each its own S and P"),
      _("a table per head"),
    );
    const ours = _("our model: {model}", { model });
    dual(heads, { x: 500, y: 370, class: "film-label" }, ours, ours, { y: 380 });
    hide([dims, heads]);
    fadeIn(dims, T("dim") + 0.3);
    fadeIn(heads, T("dim") + 3.0);
    fadeOut([dims, heads], T("square"), 0.3);

    // the table grows with N squared: four sizes, side proportional to N
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
      { x: 600, y: 250, class: "film-big" },
      `${F.N} × ${F.N} × ${F.float_bytes} B`,
      `${F.N}² × ${F.float_bytes} B`,
    );
    const big2 = el(g, "text", { x: 600, y: 300, class: "film-big text-s" }, `= ${F.table.mib} MiB`);
    const big3 = dual(g, { x: 600, y: 345, class: "film-label" }, _("one head, float32"), _("one head, float32"), {
      x: 630,
      y: 392,
    });
    hide([big, big2, big3]);
    fadeIn(big, T("size"));
    fadeIn([big2, big3], T("size") + 1.2);
  }

  // ================= 2. The plain way =================
  {
    const g = scene("plain");
    memory(g);
    const passes = [
      dual(g, { x: 20, y: 110, class: "film-text" }, _("pass {k}: scores", { k: 1 }), _("pass {k}", { k: 1 })),
      dual(g, { x: 20, y: 155, class: "film-text" }, _("pass {k}: softmax", { k: 2 }), _("pass {k}", { k: 2 })),
      dual(g, { x: 20, y: 200, class: "film-text" }, _("pass {k}: mix V", { k: 3 }), _("pass {k}", { k: 3 })),
    ];
    hide(passes);
    const meterLabel = dual(g, { x: 730, y: 60, class: "film-label" }, _("through the door so far"), _("so far"), {
      y: 30,
    });
    const meter = el(g, "text", { x: 730, y: 95, class: "film-big" }, `${num(0)} MiB`);
    const s = el(g, "g", {});
    el(s, "rect", { x: 440, y: 110, width: 80, height: 80, rx: 4, class: "fill-s" });
    el(s, "text", { x: 480, y: 158, "text-anchor": "middle", class: "film-on" }, "S");
    const p = el(g, "g", {});
    el(p, "rect", { x: 440, y: 110, width: 80, height: 80, rx: 4, class: "fill-p" });
    el(p, "text", { x: 480, y: 158, "text-anchor": "middle", class: "film-on" }, "P");
    hide([s, p]);
    const down = 290; // bench -> warehouse offset
    const moves = [
      // [node, at, direction], each move is one crossing of the whole table
      [s, T("pass1") + 1.0, "out", _("S out {mib} MiB", { mib: F.table.mib })],
      [s, T("pass2") + 0.3, "in", _("S in {mib} MiB", { mib: F.table.mib })],
      [p, T("pass2") + 2.0, "out", _("P out {mib} MiB", { mib: F.table.mib })],
      [p, T("pass3") + 0.5, "in", _("P in {mib} MiB", { mib: F.table.mib })],
    ];
    fadeIn(passes[0], T("pass1"));
    fadeIn(s, T("pass1") + 0.3);
    fadeIn(passes[1], T("pass2"));
    fadeIn(passes[2], T("pass3"));
    const log = [];
    moves.forEach(([node, at, dir, name], k) => {
      if (dir === "out") tl.to(node, { y: down, duration: 1.2, ease: "power1.inOut" }, at);
      else tl.to(node, { y: 0, duration: 1.2, ease: "power1.inOut" }, at);
      const line = el(g, "text", { x: 730, y: 150 + k * 40, class: "film-text" }, name);
      hide(line);
      fadeIn(line, at + 1.0, 0.3);
      log.push(line);
    });
    // S turns into P on the bench during pass 2
    fadeOut(s, T("pass2") + 1.6, 0.3);
    fadeIn(p, T("pass2") + 1.6, 0.3);
    const cross = { v: 0 };
    moves.forEach(([, at], k) => tl.to(cross, { v: (k + 1) * F.table.raw, duration: 1.2, ease: "none" }, at));
    labels.push(() => {
      meter.textContent = `${mib(cross.v)} MiB`;
    });
    // Q, K and V come in too (and O goes out): the count adds them later
    const stores = {};
    for (const [name, cls, x] of [
      ["Q", "fill-q", 150],
      ["K", "fill-k", 250],
      ["V", "fill-v", 350],
      ["O", "fill-o", 600],
    ]) {
      el(g, "rect", { x, y: 400, width: 80, height: 80, rx: 4, class: cls, "fill-opacity": 0.3 });
      stores[name] = el(g, "text", { x: x + 40, y: 448, "text-anchor": "middle", class: "film-text" }, name);
    }
    const reader = (name, cls, x, at, dx) => {
      const r = el(g, "g", {});
      el(r, "rect", { x, y: 400, width: 80, height: 80, rx: 4, class: cls });
      el(r, "text", { x: x + 40, y: 448, "text-anchor": "middle", class: "film-on", "font-size": 18 }, name);
      hide(r);
      tl.set(r, { autoAlpha: 1 }, at);
      tl.set(stores[name], { autoAlpha: 0 }, at);
      tl.to(r, { x: dx, y: -290, duration: 1.2, ease: "power1.inOut" }, at);
      tl.to(r, { autoAlpha: 0, duration: 0.3 }, at + 2.2);
      tl.set(stores[name], { autoAlpha: 1 }, at + 1.2);
      return r;
    };
    reader("Q", "fill-q", 150, T("pass1") + 0.1, 130);
    reader("K", "fill-k", 250, T("pass1") + 0.1, 120);
    reader("V", "fill-v", 350, T("pass3") + 0.1, 20);
    const kvIn = dual(
      g,
      { x: 130, y: 385, class: "film-label" },
      _("Q, K and V come in too: the count adds them"),
      _("Q, K, V come in too"),
    );
    hide(kvIn);
    fadeIn(kvIn, T("pass3") + 1.4);
    const total = dual(
      g,
      { x: 560, y: 320, class: "film-text text-s" },
      _("the table crossed {times} times: {mib} MiB", { times: F.cross.times, mib: F.cross.mib }),
      _("table: {mib} MiB", { mib: F.cross.mib }),
    );
    const note = dual(
      g,
      { x: 560, y: 352, class: "film-label" },
      _("and not one byte of Q, K, V or O yet"),
      _("no Q, K, V or O yet"),
      { y: 360 },
    );
    hide([total, note]);
    fadeIn(total, T("door") + 0.5);
    fadeIn(note, T("cross"));
    void meterLabel;
    void log;
  }

  // ================= 3. Shares without the whole row =================
  {
    const g = scene("online");
    const ex = F.ex;
    // a generic row: a share needs the total of the whole row
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
    const scale = 220; // px per unit of l
    const formula = dual(
      g,
      { x: 120, y: 450, class: "film-text" },
      _("bigger score arrives:  l ← l · e^(old m − new m)"),
      _("l ← l · e^(old m − new m)"),
    );
    hide([mBox, mNote, lName, lNote, formula]);
    fadeIn([mBox, mNote, lName, lNote], T("running"));
    fadeIn(formula, T("rescale"));

    // the worked row, in tiles
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
    const mP = { v: 0, shown: 0 };
    const lP = { v: 0 };
    labels.push(() => {
      mBox.textContent = mP.shown < 0.5 ? "m = −∞" : `m = ${num(+Number(mP.v).toFixed(3))}`;
      lName.textContent = `l = ${num(lP.v, 3)}`;
      lBar.setAttribute("width", String(Math.max(0, lP.v * scale)));
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
    const shrinkNote = el(
      g,
      "text",
      { x: 120, y: 436, class: "film-label" },
      _("× {factor}: shrunk to match the new m", { factor: ex.shrink }),
    );
    hide(shrinkNote);
    fadeIn(shrinkNote, t2 + 1.6);
    tl.to(lP, { v: s2.l, duration: 1.2, ease: "power1.out" }, t2 + 4.2);
    // then the tile's own terms are added: the note follows the step on screen
    const gainNote = el(
      g,
      "text",
      { x: 120, y: 436, class: "film-label" },
      _("+ {terms}: the new tile's terms", { terms: ex.l2_terms }),
    );
    hide(gainNote);
    fadeOut(shrinkNote, t2 + 4.0, 0.2);
    fadeIn(gainNote, t2 + 4.2);
    fadeOut(formula, t2 + 1.2, 0.2);
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

  // ================= 4. One trip =================
  {
    const g0 = scene("trip");
    const g = el(g0, "g", {}); // the kernel at work; dimmed under the closing notes
    const mem = memory(g, 70, 200);
    const d = F.d16;
    const ex = F.ex;
    // tensors in the warehouse
    const store = [
      ["Q", "fill-q", 150],
      ["K", "fill-k", 330],
      ["V", "fill-v", 510],
      ["O", "fill-o", 690],
    ];
    const storeNames = {};
    for (const [name, cls, x] of store) {
      el(g, "rect", { x, y: 390, width: 120, height: 90, rx: 4, class: cls, "fill-opacity": 0.3 });
      storeNames[name] = el(g, "text", { x: x + 60, y: 445, "text-anchor": "middle", class: "film-text" }, name);
    }
    const q = el(g, "g", {});
    el(q, "rect", { x: 150, y: 390, width: 120, height: 90, rx: 4, class: "fill-q" });
    el(q, "text", { x: 210, y: 428, "text-anchor": "middle", class: "film-on", "font-size": 18 }, _("Q tile"));
    dual(
      q,
      { x: 210, y: 452, "text-anchor": "middle", class: "film-on", "font-size": 15 },
      _("{n} rows", { n: d.B_r }),
      "",
    );
    dual(q, { x: 210, y: 472, "text-anchor": "middle", class: "film-on", "font-size": 15 }, `d = ${num(d.d)}`, "");
    hide(q);
    // the tile leaves the warehouse: its name there gives way while it passes
    tl.set(storeNames.Q, { autoAlpha: 0 }, T("bench") + 0.2);
    tl.set(storeNames.Q, { autoAlpha: 1 }, T("bench") + 1.6);
    fadeIn(q, T("bench") + 0.2, 0.2);
    tl.to(q, { x: 120, y: -290, duration: 1.4, ease: "power1.inOut" }, T("bench") + 0.2);
    const qNote = dual(
      g,
      { x: 260, y: 262, class: "film-label" },
      _("{n} query rows stay on the bench", { n: d.B_r }),
      _("{n} query rows", { n: d.B_r }),
    );
    hide(qNote);
    fadeIn(qNote, T("bench") + 1.8);
    fadeOut(qNote, T("walk"), 0.3);

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
      // up through the door (straight up, then across), then used and dropped
      tl.set(kv, { autoAlpha: 1 }, at);
      tl.to(kv, { x: 110, duration: span * 0.12, ease: "power1.inOut" }, at);
      tl.to(kv, { y: -290, duration: span * 0.25, ease: "power1.inOut" }, at + span * 0.12);
      tl.to(kv, { x: 200, autoAlpha: 0, duration: span * 0.3, ease: "power1.in" }, at + span * 0.7);
    }
    const kvNote = dual(
      g,
      { x: 260, y: 262, class: "film-label" },
      _("K, V tiles of {rows} rows: {tiles} per query tile", { rows: d.B_c, tiles: keyTiles }),
      _("K, V: {tiles} tiles", { tiles: keyTiles }),
    );
    hide(kvNote);
    fadeIn(kvNote, T("walk") + 0.5);
    // on the bench: a scratch S tile and its P, m and l, and the O being built
    const sTile = el(g, "rect", { x: 560, y: 100, width: 60, height: 60, rx: 4, class: "fill-s" });
    const sText = el(g, "text", { x: 590, y: 140, "text-anchor": "middle", class: "film-on", "font-size": 18 }, "S");
    const pTile = el(g, "rect", { x: 630, y: 100, width: 60, height: 60, rx: 4, class: "fill-p" });
    const pText = el(g, "text", { x: 660, y: 140, "text-anchor": "middle", class: "film-on", "font-size": 18 }, "P");
    const mText = dual(
      g,
      { x: 270, y: 226, class: "film-text text-m" },
      `m: ${num(ex.steps[0].m)} → ${ex.m}`,
      `m ${num(ex.steps[0].m)}→${ex.m}`,
      { y: 212 },
    );
    const oAcc = el(g, "rect", { x: 560, y: 210, width: 0, height: 50, rx: 4, class: "fill-o" });
    const oText = el(g, "text", { x: 575, y: 245, class: "film-on", "font-size": 18 }, "O");
    // the rescale, with the worked row's numbers: a bigger score shrinks O (and l)
    const rescale = dual(
      g,
      { x: 560, y: 196, class: "film-label" },
      _("O × {factor} = O × {value}, then + P·V", { factor: ex.shrink, value: ex.shrink_value }),
      `O × ${ex.shrink_value}`,
    );
    hide([sTile, sText, pTile, pText, mText, oText, rescale]);
    fadeIn([sTile, sText], T("update"));
    fadeIn([pTile, pText], T("update") + 0.8);
    fadeIn([mText, oText], T("update") + 0.5);
    fadeIn(rescale, T("update") + 2.5);
    tl.to(oAcc, { attr: { width: 70 }, duration: 2.0, ease: "none" }, T("update"));
    tl.to(
      oAcc,
      { attr: { width: 70 * Math.exp(ex.steps[0].m - ex.steps[1].m) }, duration: 0.6, ease: "power2.inOut" },
      T("update") + 2.5,
    );
    tl.to(oAcc, { attr: { width: 120 }, duration: 2.5, ease: "none" }, T("update") + 3.6);
    fadeOut([rescale, kvNote], T("write"), 0.3);
    // at the end: divide by l, then the finished rows go down through the door, once
    const divide = dual(
      g,
      { x: 560, y: 196, class: "film-label" },
      _("O ÷ l (l = {l} in the worked row)", { l: ex.l }),
      "O ÷ l",
    );
    hide(divide);
    fadeIn(divide, T("write") + 0.2);
    fadeOut(divide, T("write") + 2.6, 0.3);
    const oOut = el(g, "g", {});
    el(oOut, "rect", { x: 560, y: 210, width: 120, height: 50, rx: 4, class: "fill-o" });
    el(oOut, "text", { x: 620, y: 245, "text-anchor": "middle", class: "film-on", "font-size": 18 }, "O");
    hide(oOut);
    tl.set(oOut, { autoAlpha: 1 }, T("write") + 0.8);
    tl.set([oAcc, oText], { autoAlpha: 0 }, T("write") + 0.8);
    tl.to(oOut, { x: 130, y: 180, duration: 1.5, ease: "power1.inOut" }, T("write") + 1.0);
    // the finished O takes the warehouse's place: its own name there gives way
    tl.set(storeNames.O, { autoAlpha: 0 }, T("write") + 1.0);
    const written = dual(
      g,
      { x: 690, y: 372, class: "film-label" },
      _("O, finished: written once"),
      _("O, written once"),
      {
        y: 372,
      },
    );
    hide(written);
    fadeIn(written, T("write") + 2.5);
    const stay = dual(
      g,
      { x: 260, y: 262, class: "film-text text-s" },
      _("S and P stay on the bench"),
      _("S, P stay here"),
    );
    const ring = el(g, "rect", { x: 552, y: 92, width: 146, height: 76, rx: 8, class: "film-ring" });
    hide([stay, ring]);
    fadeIn([stay, ring], T("never"));
    // the closing notes: the same answer; FlashAttention, and its own loop
    tl.to(g, { autoAlpha: 0.12, duration: 0.4 }, T("same"));
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
    fadeIn(same, T("same"), 0.4);
    fadeOut(same, T("fa"), 0.2);
    tl.to(g, { autoAlpha: 1, duration: 0.3 }, T("fa"));
    fadeOut(mem.benchLabel, T("fa"), 0.2);
    const fa = dual(
      g0,
      { x: W / 2, y: 40, "text-anchor": "middle", class: "film-big" },
      _("FlashAttention (Dao et al., 2022)"),
      "FlashAttention, 2022",
    );
    hide(fa);
    fadeIn(fa, T("fa"));
    tl.to(g, { autoAlpha: 0.12, duration: 0.4 }, T("loops"));
    const loops = el(g0, "g", {});
    el(loops, "text", { x: 80, y: 110, class: "film-text" }, _("ours:"));
    dual(
      loops,
      { x: 260, y: 110, class: "film-text" },
      _("for each Q tile → for each K, V tile"),
      _("Q tiles outside"),
    );
    el(loops, "text", { x: 80, y: 190, class: "film-text" }, "FlashAttention:");
    dual(
      loops,
      { x: 260, y: 230, class: "film-text" },
      _("for each K, V tile → for each Q tile"),
      _("K, V tiles outside"),
    );
    dual(
      loops,
      { x: 80, y: 320, class: "film-text text-m" },
      _("it also saves m and l, as L = m + log l (the logsumexp),"),
      _("it also saves m and l"),
    );
    dual(
      loops,
      { x: 80, y: 360, class: "film-text text-m" },
      _("one number per query row, for the backward pass"),
      _("as L, the logsumexp,"),
    );
    dual(
      loops,
      { x: 80, y: 400, class: "film-label" },
      _("(training needs it to recompute P without storing it)"),
      _("for the backward pass"),
    );
    hide(loops);
    fadeIn(loops, T("loops") + 0.2);
  }

  // ================= 5. The count (and 6. the question) =================
  function bars(g, list, x0, y0, h, maxBytes) {
    // stacked bars by tensor, axis from zero; each bar labels its own value
    const order = ["S", "P", "K", "V", "Q", "O"];
    const px = (b) => (h * b) / maxBytes;
    el(g, "line", { x1: x0 - 20, y1: y0, x2: 900, y2: y0, class: "film-axis" });
    el(g, "line", { x1: x0 - 20, y1: y0, x2: x0 - 20, y2: y0 - h - 10, class: "film-axis" });
    const step = 100 * MIB;
    // the top tick names the unit
    for (let v = 0; v <= maxBytes; v += step) {
      el(
        g,
        "text",
        { x: x0 - 26, y: y0 - px(v) + 5, "text-anchor": "end", class: "film-label" },
        `${group(v / MIB)}${v + step > maxBytes ? " MiB" : ""}`,
      );
    }
    return list.map(({ fig, kernel, x, label }) => {
      const bar = el(g, "g", {});
      let y = y0;
      const segs = [];
      for (const name of order) {
        const bytes = (fig.reads[kernel][name] || 0) + (fig.writes[kernel][name] || 0);
        if (!bytes) continue;
        const hh = px(bytes);
        const r = el(bar, "rect", { x, y: y - hh, width: 80, height: hh, class: `fill-${name.toLowerCase()}` });
        if (hh > 36)
          el(
            bar,
            "text",
            { x: x + 40, y: y - hh / 2 + 8, "text-anchor": "middle", class: "film-on", "font-size": 16 },
            name,
          );
        segs.push(r);
        y -= hh;
      }
      const total = fig[`${kernel}_raw`];
      el(bar, "text", { x: x + 40, y: y - 8, "text-anchor": "middle", class: "film-text" }, `${mib(total)} MiB`);
      el(g, "text", { x: x + 40, y: y0 + 22, "text-anchor": "middle", class: "film-label" }, label);
      return bar;
    });
  }

  {
    const g = scene("count");
    const max = F.d64.plain_raw;
    const [b1, b2] = bars(
      g,
      [
        { fig: F.d64, kernel: "plain", x: 170, label: _("plain") },
        { fig: F.d64, kernel: "fused", x: 270, label: _("fused") },
      ],
      170,
      470,
      330,
      max,
    );
    dual(
      g,
      { x: 260, y: 524, "text-anchor": "middle", class: "film-text" },
      `d = ${num(F.d64.d)}`,
      `d = ${num(F.d64.d)}`,
      {
        y: 532,
      },
    );
    dual(
      g,
      { x: 480, y: 24, "text-anchor": "middle", class: "film-label" },
      _("one head, N = {n}, float32, bench of {bytes} bytes", { n: F.N, bytes: F.M }),
      `N = ${F.N}, float32`,
      { x: 720, y: 26 },
    );
    hide([b1, b2]);
    // what the count adds up: every tensor's bytes through the door
    const legend = el(g, "g", {});
    dual(
      legend,
      { x: 400, y: 170, class: "film-text" },
      _("every byte through the door, by tensor:"),
      _("bytes by tensor:"),
    );
    ["S", "P", "K", "V", "Q", "O"].forEach((name, k) => {
      el(legend, "rect", {
        x: 400 + k * 80,
        y: 195,
        width: 64,
        height: 50,
        rx: 4,
        class: `fill-${name.toLowerCase()}`,
      });
      el(legend, "text", { x: 432 + k * 80, y: 230, "text-anchor": "middle", class: "film-on", "font-size": 18 }, name);
    });
    hide(legend);
    fadeIn(legend, T("tally") + 0.3);
    fadeOut(legend, T("d64why"), 0.3);
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
    const why64 = dual(
      g,
      { x: 170, y: 54, class: "film-text" },
      _("d = {d}: B_r = {rows} query rows → {tiles} query tiles, K and V read {tiles} times", {
        d: F.d64.d,
        rows: F.d64.B_r,
        tiles: F.d64.q_tiles,
      }),
      _("K, V read {tiles}×", { tiles: F.d64.q_tiles }),
      { x: 260, y: 76, "text-anchor": "middle" },
    );
    hide(why64);
    fadeIn(why64, T("d64why") + 1.0);
    const refetch = dual(
      g,
      { x: 380, y: 330, class: "film-label" },
      _("K + V: {mib} MiB of each bar, {trips} trips", { mib: F.d64.kv_mib_fused, trips: F.d64.q_tiles }),
      `K + V: ${F.d64.kv_mib_fused} MiB`,
    );
    hide(refetch);
    fadeIn(refetch, T("d64refetch") + 0.3);
    fadeOut(refetch, T("d16"), 0.3);
    // d = 16: the film does not count it for you. Two unlabelled slots of the
    // same height (a height would give the ratio away), and the recipe.
    const slots = el(g, "g", {});
    for (const [x, name] of [
      [530, _("plain")],
      [630, _("fused")],
    ]) {
      el(slots, "rect", { x, y: 330, width: 80, height: 140, class: "film-box film-unknown" });
      el(slots, "text", { x: x + 40, y: 412, "text-anchor": "middle", class: "film-big" }, "?");
      el(slots, "text", { x: x + 40, y: 492, "text-anchor": "middle", class: "film-label" }, name);
    }
    dual(
      slots,
      { x: 620, y: 524, "text-anchor": "middle", class: "film-text" },
      `d = ${num(F.d16.d)}`,
      `d = ${num(F.d16.d)}`,
      {
        y: 532,
      },
    );
    hide(slots);
    fadeIn(slots, T("d16") + 0.3);
    const why16 = dual(
      g,
      { x: 170, y: 82, class: "film-text" },
      _("d = {d}: B_r = {rows} query rows → {tiles} query tiles, K and V read {tiles} times", {
        d: F.d16.d,
        rows: F.d16.B_r,
        tiles: F.d16.q_tiles,
      }),
      _("K, V read {tiles}×", { tiles: F.d16.q_tiles }),
      { x: 620, y: 76, "text-anchor": "middle" },
    );
    hide(why16);
    fadeIn(why16, T("d16") + 0.8);
    const recipe = el(g, "g", {});
    el(
      recipe,
      "text",
      { x: 380, y: 170, class: "film-text" },
      _("fused = Q + O + {tiles} × (K + V)", { tiles: F.d16.q_tiles }),
    );
    el(
      recipe,
      "text",
      { x: 380, y: 215, class: "film-text" },
      _("plain = fused + {times} × table", { times: F.cross.times_raw }),
    );
    dual(
      recipe,
      { x: 380, y: 260, class: "film-label" },
      _("table = {mib} MiB; Q, K, V, O = {kib} KiB each", { mib: F.table.mib, kib: F.d16.tensor_kib }),
      _("table {mib} MiB; Q, K, V, O {kib} KiB", { mib: F.table.mib, kib: F.d16.tensor_kib }),
    );
    hide(recipe);
    fadeIn(recipe, T("recipe") + 0.5);
  }

  let setGuess = () => {};
  {
    const g = scene("question");
    // asked: what the learner knows, no totals
    const known = el(g, "g", {});
    const counted = el(g, "g", {});
    const lines = [
      [_("N = {n} rows, d = {d} numbers per row", { n: F.N, d: F.d16.d }), "film-text"],
      [
        _("Q, K, V, O: N × d × {bytes} B = {kib} KiB each", { bytes: F.float_bytes, kib: F.d16.tensor_kib }),
        "film-text",
      ],
      [_("B_r = {rows} query rows → {tiles} query tiles", { rows: F.d16.B_r, tiles: F.d16.q_tiles }), "film-text"],
      [_("the table, S or P: {mib} MiB", { mib: F.table.mib }), "film-text"],
      [_("fused: Q in, O out, K and V in {tiles} times", { tiles: F.d16.q_tiles }), "film-text"],
      [_("plain: the same, plus the table {times} times", { times: F.cross.times_raw }), "film-text"],
    ];
    // left half only: on a wide screen the question's panel covers the right half
    lines.forEach(([text, cls], k) => el(known, "text", { x: 30, y: 110 + k * 44, class: cls }, text));
    el(known, "text", { x: 30, y: 110 + lines.length * 44 + 20, class: "film-big" }, _("plain ÷ fused = ?"));
    el(known, "text", { x: 30, y: 50, class: "film-label" }, _("what the film has shown you:"));
    el(
      counted,
      "text",
      { x: 480, y: 40, "text-anchor": "middle", class: "film-label" },
      `N = ${F.N}, d = ${num(F.d16.d)}`,
    );
    // answered: the count, and the learner's guess beside it
    bars(
      counted,
      [
        { fig: F.d16, kernel: "plain", x: 220, label: _("plain") },
        { fig: F.d16, kernel: "fused", x: 360, label: _("fused") },
      ],
      160,
      470,
      360,
      F.d16.plain_raw,
    );
    const ans = dual(
      counted,
      { x: 500, y: 200, class: "film-big" },
      _("count: {ratio} times less", { ratio: F.d16.ratio2 }),
      _("count: {ratio}×", { ratio: F.d16.ratio2 }),
    );
    el(counted, "text", { x: 500, y: 240, class: "film-label" }, `${F.d16.plain_bytes} ÷ ${F.d16.fused_bytes} B`);
    const guess = el(
      counted,
      "text",
      { x: 500, y: 300, class: "film-big text-q film-guess" },
      _("your guess: not given"),
    );
    hide(counted);
    fadeOut(known, T("answer"), 0.2);
    fadeIn(counted, T("answer") + 0.2);
    void ans;
    setGuess = (text) => {
      guess.textContent = text;
    };
  }

  // ================= 7. The forgotten step =================
  {
    const g = scene("forget");
    const ex = F.ex;
    const rule = el(
      g,
      "text",
      { x: 480, y: 50, "text-anchor": "middle", class: "film-big" },
      _("l ← l · e^(old m − new m)"),
    );
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
    const scale = 200;
    const good = el(g, "rect", { x: 260, y: 110, width: ex.l_raw * scale, height: 34, class: "fill-l" });
    const goodT = el(g, "text", { x: 20, y: 138, class: "film-text" }, _("with the step"));
    const goodV = el(g, "text", { x: 270 + ex.l_raw * scale, y: 138, class: "film-good-text" }, `l = ${ex.l} ✓`);
    const bad = el(g, "rect", {
      x: 260,
      y: 158,
      width: ex.broken_l_raw * scale,
      height: 34,
      class: "fill-l",
      "fill-opacity": 0.55,
    });
    const badT = el(g, "text", { x: 20, y: 184, class: "film-text" }, _("without it"));
    const badV = el(
      g,
      "text",
      { x: 270 + ex.broken_l_raw * scale, y: 184, class: "film-bad-text" },
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

    const m = F.model;
    if (m.grid) {
      const gx = 200;
      const gy = 246;
      const c = 38;
      const title = el(
        g,
        "text",
        { x: 20, y: 232, class: "film-label" },
        _("checker, broken kernel: {failed} of {heads} heads flagged", {
          failed: m.broken_failed,
          heads: m.checked_heads,
        }),
      );
      const cells = [];
      m.grid.forEach((row, L) => {
        // facts.json numbers layers from 0 (layer 0 is the lab's input); so does the film
        const layer = m.grid_layers ? m.grid_layers[L] : L;
        const tag = layer === m.lab_layer ? _("layer {n} (lab)", { n: layer }) : _("layer {n}", { n: layer });
        const lab = dual(
          g,
          { x: gx - 10, y: gy + L * c + 27, "text-anchor": "end", class: "film-label" },
          tag,
          layer === m.lab_layer ? _("{n} (lab)", { n: layer }) : num(layer),
        );
        cells.push(lab);
        row.forEach((h, H) => {
          const r = el(g, "rect", {
            x: gx + H * c,
            y: gy + L * c,
            width: c - 3,
            height: c - 3,
            rx: 3,
            class: h.broken_passed ? "fill-v" : "fill-s",
          });
          const t = el(
            g,
            "text",
            {
              x: gx + H * c + (c - 3) / 2,
              y: gy + L * c + 27,
              "text-anchor": "middle",
              class: "film-on",
              "font-size": 18,
            },
            h.broken_passed ? "✓" : "✗",
          );
          cells.push(r, t);
        });
      });
      const kx = gx + 12 * c + 16;
      const key = dual(g, { x: kx, y: gy + 30, class: "film-label" }, _("✗ wrong rows caught"), _("✗ caught"));
      const key2 = dual(g, { x: kx, y: gy + 80, class: "film-label" }, _("✓ largest score"), _("✓ largest"));
      const key3 = dual(
        g,
        { x: kx, y: gy + 102, class: "film-label" },
        _("always in the first tile"),
        _("came first"),
        {
          y: gy + 120,
        },
      );
      hide([title, ...cells, key, key2, key3]);
      fadeIn(title, T("caught"));
      tl.to(cells, { autoAlpha: 1, duration: 0.15, stagger: 0.03 }, T("caught") + 0.5);
      fadeIn([key, key2, key3], T("lucky"));
    }
    const sorted = dual(
      g,
      { x: 20, y: 528, class: "film-text" },
      _("order the row {row}: l = {l} with or without the step", { row: ex.sorted, l: ex.sorted_broken_l }),
      _("row {row}: l = {l} either way", { row: ex.sorted, l: ex.sorted_broken_l }),
    );
    hide(sorted);
    fadeIn(sorted, T("lucky") + 1.0);
    void rule;
  }

  // ================= 8. Why keep the largest =================
  {
    const g = scene("largest");
    const fp = F.fp16;
    const x0 = 110;
    const y0 = 440;
    const w = 520;
    const h = 330;
    const xMax = 12;
    const yMax = 70000;
    const X = (x) => x0 + (w * x) / xMax;
    const Y = (y) => y0 - (h * y) / yMax;
    const axes = el(g, "g", {});
    el(axes, "line", { x1: x0, y1: y0, x2: x0 + w, y2: y0, class: "film-axis" });
    el(axes, "line", { x1: x0, y1: y0, x2: x0, y2: y0 - h, class: "film-axis" });
    for (let x = 0; x <= xMax; x += 2)
      el(axes, "text", { x: X(x), y: y0 + 22, "text-anchor": "middle", class: "film-label" }, num(x));
    for (let y = 0; y <= 60000; y += 20000)
      el(axes, "text", { x: x0 - 8, y: Y(y) + 5, "text-anchor": "end", class: "film-label" }, group(y));
    dual(axes, { x: x0 + w, y: y0 + 50, "text-anchor": "end", class: "film-label" }, _("score x"), _("score x"), {
      x: x0 + w + 25,
      y: y0 + 6,
      "text-anchor": "start",
    });
    el(axes, "text", { x: x0 - 10, y: y0 - h + 10, "text-anchor": "end", class: "film-label" }, "e^x");
    hide(axes);
    fadeIn(axes, T("second") + 0.3);
    const job = dual(
      g,
      { x: x0, y: 50, class: "film-text text-m" },
      _("m’s second job: keep e^(score) small enough to hold"),
      _("m’s second job: small numbers"),
    );
    hide(job);
    fadeIn(job, chapters.largest.start_s, 0.4);
    let d = "";
    for (let i = 0; i <= 200; i += 1) {
      const x = (xMax * i) / 200;
      const y = Math.exp(x);
      if (y > yMax) break;
      d += `${i ? "L" : "M"}${X(x).toFixed(1)},${Y(y).toFixed(1)} `;
    }
    const curve = el(g, "path", {
      d,
      class: "film-curve",
      pathLength: 1,
      "stroke-dasharray": 1,
      "stroke-dashoffset": 1,
    });
    tl.to(curve, { attr: { "stroke-dashoffset": 0 }, duration: 2.5, ease: "none" }, T("grows"));
    const limit = el(g, "line", { x1: x0, y1: Y(fp.max_raw), x2: x0 + w, y2: Y(fp.max_raw), class: "film-limit" });
    const limitT = dual(
      g,
      { x: x0 + 8, y: Y(fp.max_raw) - 8, class: "film-bad-text" },
      _("fp16 largest: {max}", { max: fp.max }),
      _("fp16 max {max}", { max: fp.max }),
    );
    hide([limit, limitT]);
    fadeIn([limit, limitT], T("grows") + 2.0);
    const edge = el(g, "line", {
      x1: X(fp.ln_edge_raw),
      y1: y0,
      x2: X(fp.ln_edge_raw),
      y2: y0 - h,
      class: "film-limit",
    });
    const edgeT = dual(
      g,
      { x: X(fp.ln_edge_raw) - 6, y: y0 - h - 12, "text-anchor": "end", class: "film-label" },
      _("x ≈ {x}: from {edge}, ∞", { x: fp.ln_edge, edge: fp.edge }),
      `x ≈ ${fp.ln_edge}`,
    );
    hide([edge, edgeT]);
    fadeIn([edge, edgeT], T("edge") + 0.5);
    if (F.model.row_max) {
      const arrow = el(g, "path", { d: `M${x0 + w + 20},${y0 - 60} L${x0 + w + 300},${y0 - 60}`, class: "film-arrow" });
      const t1 = dual(
        g,
        { x: x0 + w + 20, y: y0 - 80, class: "film-text" },
        _("model's score: {score}", { score: F.model.row_max }),
        _("score {score}", { score: F.model.row_max }),
      );
      const t2 = dual(
        g,
        { x: x0 + w + 20, y: y0 - 30, class: "film-label" },
        _("in fp16, e^{score} = ∞", { score: F.model.row_max }),
        `e^${F.model.row_max} = ∞`,
      );
      hide([arrow, t1, t2]);
      fadeIn([arrow, t1, t2], T("model") + 0.5);
      fadeOut([arrow, t1, t2], T("subtract"), 0.3);
    }
    // subtract m first: every exponent is at or below zero
    const px0 = 700;
    const pw = 220;
    const py0 = 300;
    const ph = 150;
    const small = el(g, "g", {});
    el(small, "line", { x1: px0, y1: py0, x2: px0 + pw, y2: py0, class: "film-axis" });
    el(small, "line", { x1: px0 + pw, y1: py0, x2: px0 + pw, y2: py0 - ph, class: "film-axis" });
    let d2 = "";
    for (let i = 0; i <= 100; i += 1) {
      const x = -xMax + (xMax * i) / 100;
      d2 += `${i ? "L" : "M"}${(px0 + pw * (i / 100)).toFixed(1)},${(py0 - ph * Math.exp(x)).toFixed(1)} `;
    }
    el(small, "path", { d: d2, class: "film-curve-safe" });
    el(small, "text", { x: px0 + pw + 6, y: py0 - ph + 5, class: "film-label" }, num(1));
    el(small, "text", { x: px0 + pw, y: py0 + 22, "text-anchor": "end", class: "film-label" }, _("score − m ≤ 0"));
    dual(small, { x: px0, y: py0 - ph - 14, class: "film-text text-m" }, _("e^(score − m) ≤ 1"), "e^(s − m) ≤ 1", {
      x: 680,
    });
    hide(small);
    fadeIn(small, T("subtract") + 0.5);
    if (F.model.overflow_count) {
      const held = dual(
        g,
        { x: 480, y: 528, "text-anchor": "middle", class: "film-text" },
        _("held-out sentences: {count} of {total} scores would overflow without it", {
          count: F.model.overflow_count,
          total: F.model.score_count,
        }),
        _("{count} of {total} would overflow", { count: F.model.overflow_count, total: F.model.score_count }),
      );
      hide(held);
      fadeIn(held, T("heldout") + 0.3);
    }
  }

  // ================= 9. What the count leaves out =================
  {
    const g = scene("leaves");
    const head = el(
      g,
      "text",
      { x: W / 2, y: 44, "text-anchor": "middle", class: "film-big" },
      _("what the count leaves out"),
    );
    void head;
    const cards = [
      ["care", _("bytes requested, not seconds")],
      ["caches", _("caches may serve repeated reads")],
      ["arith", _("fusion adds rescaling arithmetic")],
      ["lab", _("the lab times both on your chip")],
    ];
    cards.forEach(([id, text], k) => {
      const c = el(g, "g", {});
      el(c, "rect", { x: 130, y: 70 + k * 105, width: 700, height: 85, rx: 10, class: "film-box" });
      el(c, "text", { x: 160, y: 122 + k * 105, class: "film-big film-card-text" }, text);
      hide(c);
      fadeIn(c, T(id) + 0.2);
    });
  }

  // ================= 10. Goodnight =================
  {
    const g0 = scene("goodnight");
    const g = el(g0, "g", {}); // the summary picture; it steps back for the goodnight
    memory(g, 70, 170);
    el(g, "rect", { x: 270, y: 100, width: 120, height: 110, rx: 4, class: "fill-q" });
    el(g, "text", { x: 330, y: 162, "text-anchor": "middle", class: "film-on", "font-size": 18 }, _("Q tile"));
    dual(g, { x: 405, y: 125, class: "film-text text-m" }, _("m: running largest"), _("m: largest"));
    dual(g, { x: 405, y: 170, class: "film-text text-l" }, _("l: running total"), _("l: total"));
    const o = el(g, "g", {});
    el(o, "rect", { x: 610, y: 150, width: 80, height: 60, rx: 4, class: "fill-o" });
    el(o, "text", { x: 650, y: 188, "text-anchor": "middle", class: "film-on", "font-size": 18 }, "O");
    tl.to(o, { y: 240, duration: 2, ease: "power1.inOut" }, T("sum") + 2);
    const once = el(g, "text", { x: 710, y: 440, class: "film-text" }, _("written once"));
    hide(once);
    fadeIn(once, T("sum") + 4);
    tl.to(g, { autoAlpha: 0.12, duration: 0.6 }, T("bye"));
    const bye = el(g0, "text", { x: W / 2, y: 290, "text-anchor": "middle", class: "film-title" }, _("Goodnight."));
    hide(bye);
    fadeIn(bye, T("bye"), 0.8);
  }

  // pad the timeline to the full runtime so seek(runtime) is defined
  tl.set({}, {}, data.runtime_s);

  function render(t) {
    tl.seek(Math.max(0, Math.min(t, data.runtime_s)), false);
    for (const f of labels) f();
  }

  // Each caption's text alternative: the words and numbers its settled frame
  // draws (the wide wording), read once here from the timeline itself.
  function drawnText() {
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
  const descriptions = {};
  for (const c of data.cues) {
    render(c.end_s - 0.05);
    descriptions[c.id] = drawnText();
  }
  render(0);
  // the answer's description names the guess drawn now (whatever its language)
  let guessShown = _("your guess: not given");
  return {
    svg,
    render,
    timeline: tl,
    setGuess: (text) => {
      setGuess(text);
      const said = descriptions[data.question.answer_cue];
      if (said !== undefined) descriptions[data.question.answer_cue] = said.replace(guessShown, () => text);
      guessShown = text;
    },
    describe: (id) => descriptions[id] || _("the film"),
  };
}
