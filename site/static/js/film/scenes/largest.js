// Scene 8, why keep the largest: e^x outgrows float16, the model's own score
// would overflow, and subtracting m first keeps every exponent at or below 0.
import { _, num } from "../../i18n.js";
import { dual, el, group } from "../draw.js";

// the e^x chart: its origin, size and ranges
const X0 = 130;
const Y0 = 440;
const CW = 500;
const CH = 330;
const X_MAX = 12;
const Y_MAX = 70000;
const X = (x) => X0 + (CW * x) / X_MAX;
const Y = (y) => Y0 - (CH * y) / Y_MAX;

/** The chart's axes, ticks and names. */
function axes(g, { T, hide, fadeIn }) {
  const a = el(g, "g", {});
  el(a, "line", { x1: X0, y1: Y0, x2: X0 + CW, y2: Y0, class: "film-axis" });
  el(a, "line", { x1: X0, y1: Y0, x2: X0, y2: Y0 - CH, class: "film-axis" });
  // on a phone the last tick gives its place to the axis's name
  for (let x = 0; x <= X_MAX; x += 2)
    dual(a, { x: X(x), y: Y0 + 22, "text-anchor": "middle", class: "film-label" }, num(x), x < X_MAX ? num(x) : "");
  // the origin's one "0" is the x axis's (a second, the y axis's, would sit on it)
  for (let y = 20000; y <= 60000; y += 20000)
    el(a, "text", { x: X0 - 8, y: Y(y) + 5, "text-anchor": "end", class: "film-label" }, group(y));
  dual(a, { x: X0 + CW, y: Y0 + 50, "text-anchor": "end", class: "film-label" }, _("score x"), _("score x"), {
    // on a phone: at the axis's end, on the row of its ticks, in the last
    // tick's place (above it sits the model's score; under it, the held-out count)
    x: X0 + CW - 8,
    y: Y0 + 22,
    "text-anchor": "start",
  });
  el(a, "text", { x: X0 - 10, y: Y0 - CH + 10, "text-anchor": "end", class: "film-label" }, "e^x");
  hide(a);
  fadeIn(a, T("second") + 0.3);
}

/** e^x drawn out, then float16's largest value and the x where it is passed. */
function curveAndLimits(g, fp, { T, tl, hide, fadeIn }) {
  let d = "";
  for (let i = 0; i <= 200; i += 1) {
    const x = (X_MAX * i) / 200;
    const y = Math.exp(x);
    if (y > Y_MAX) break;
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
  const limit = el(g, "line", { x1: X0, y1: Y(fp.max_raw), x2: X0 + CW, y2: Y(fp.max_raw), class: "film-limit" });
  const limitT = dual(
    g,
    { x: X0 + 8, y: Y(fp.max_raw) - 8, class: "film-bad-text" },
    _("fp16 largest: {max}", { max: fp.max }),
    _("fp16 max {max}", { max: fp.max }),
    { y: Y(fp.max_raw) + 34 }, // on a phone, under its line: the edge's x sits above it
  );
  hide([limit, limitT]);
  fadeIn([limit, limitT], T("grows") + 0.6); // the line the curve is heading for
  const edge = el(g, "line", {
    x1: X(fp.ln_edge_raw),
    y1: Y0,
    x2: X(fp.ln_edge_raw),
    y2: Y0 - CH,
    class: "film-limit",
  });
  const edgeT = dual(
    g,
    { x: X(fp.ln_edge_raw) - 6, y: Y0 - CH - 12, "text-anchor": "end", class: "film-label" },
    _("x ≈ {x}: from {edge}, ∞", { x: fp.ln_edge, edge: fp.edge }),
    `x ≈ ${fp.ln_edge}`,
  );
  hide([edge, edgeT]);
  fadeIn([edge, edgeT], T("edge") + 0.2);
}

/** The model's largest score, past the edge. */
function modelScore(g, score, { T, hide, fadeIn, fadeOut }) {
  // right of the fp16 edge, where the curve has already left the chart
  const x = X(X_MAX) - 25;
  const arrow = el(g, "path", { d: `M${x},${Y0 - 60} L${x + 300},${Y0 - 60}`, class: "film-arrow" });
  const t1 = dual(
    g,
    { x, y: Y0 - 80, class: "film-text" },
    _("model's score: {score}", { score }),
    _("score {score}", { score }),
  );
  const t2 = dual(g, { x, y: Y0 - 30, class: "film-label" }, _("in fp16, e^{score} = ∞", { score }), `e^${score} = ∞`);
  hide([arrow, t1, t2]);
  fadeIn([arrow, t1, t2], T("model") + 0.2);
  fadeOut([arrow, t1, t2], T("subtract"), 0.3);
}

/** Subtract m first: every exponent is at or below zero, e^(score − m) at most 1. */
function subtractM(g, { T, hide, fadeIn }) {
  const px0 = 680;
  const pw = 220;
  const py0 = 300;
  const ph = 150;
  const small = el(g, "g", {});
  el(small, "line", { x1: px0, y1: py0, x2: px0 + pw, y2: py0, class: "film-axis" });
  el(small, "line", { x1: px0 + pw, y1: py0, x2: px0 + pw, y2: py0 - ph, class: "film-axis" });
  let d2 = "";
  for (let i = 0; i <= 100; i += 1) {
    const x = -X_MAX + (X_MAX * i) / 100;
    d2 += `${i ? "L" : "M"}${(px0 + pw * (i / 100)).toFixed(1)},${(py0 - ph * Math.exp(x)).toFixed(1)} `;
  }
  el(small, "path", { d: d2, class: "film-curve-safe" });
  el(small, "text", { x: px0 + pw + 6, y: py0 - ph + 5, class: "film-label" }, num(1));
  el(small, "text", { x: px0 + pw, y: py0 + 22, "text-anchor": "end", class: "film-label" }, _("score − m ≤ 0"));
  // above the small chart's "1", clear of it in a language with longer words
  dual(small, { x: px0, y: py0 - ph - 24, class: "film-text text-m" }, _("e^(score − m) ≤ 1"), "e^(s − m) ≤ 1", {
    x: 660,
  });
  hide(small);
  fadeIn(small, T("subtract") + 0.2);
}

/** Scene 8 on its group g, with the film's stage (see ../scenes.js). */
export function largest(g, stage) {
  const { F, T, chapters, hide, fadeIn } = stage;
  axes(g, stage);
  const job = dual(
    g,
    { x: X0, y: 50, class: "film-text text-m" },
    _("m’s second job: keep e^(score) small enough to hold"),
    _("m’s second job: small numbers"),
  );
  hide(job);
  fadeIn(job, chapters.largest.start_s, 0.4);
  curveAndLimits(g, F.fp16, stage);
  if (F.model.row_max) modelScore(g, F.model.row_max, stage);
  subtractM(g, stage);
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
