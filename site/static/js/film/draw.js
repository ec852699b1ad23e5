// The film's drawing helpers, shared by every scene (./scenes/*.js): SVG
// elements, labels with a phone wording, number formats, and the two
// pictures that more than one scene draws (the bench over the warehouse, and
// the stacked byte bars).
//
// Every word drawn goes through _() (domain "page", site/static/js/i18n.js);
// every number is either a figure film.json already wrote in the page's
// language (F.*: "285.736.960" in pt-BR) or a raw value written by num().

import { _, num } from "../i18n.js";

const NS = "http://www.w3.org/2000/svg";
/** The drawing's width in SVG units (viewBox 0 0 960 540). */
export const W = 960;
export const MIB = 1048576;

/** Append an SVG element <tag attrs>text</tag> to parent and return it. */
export function el(parent, tag, attrs = {}, text) {
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

/** A label with a shorter wording for phones: both are drawn, CSS shows one
 *  (.film-wide above 40rem, .film-narrow below), so a frame still depends only
 *  on t. narrowAttrs (a place, or a class) apply to the phone's label only. */
export function dual(parent, attrs, wide, narrow, narrowAttrs = {}) {
  const g = el(parent, "g", {});
  el(g, "text", { ...attrs, class: `${attrs.class || ""} film-wide` }, wide);
  const cls = narrowAttrs.class ?? attrs.class ?? "";
  el(g, "text", { ...attrs, ...narrowAttrs, class: `${cls} film-narrow` }, narrow);
  return g;
}

/** A count with the page's digit grouping. */
export const group = (n) => num(Math.round(n));

/** Bytes in MiB: whole when within 0.05 of a whole number, else one decimal. */
export const mib = (bytes) => {
  const v = bytes / MIB;
  return Math.abs(v - Math.round(v)) < 0.05 ? group(v) : num(v, 1);
};

const SUP = { "-": "⁻", 0: "⁰", 1: "¹", 2: "²", 3: "³", 4: "⁴", 5: "⁵", 6: "⁶", 7: "⁷", 8: "⁸", 9: "⁹", ".": "·" };
/** x written as a superscript ("-3" → "⁻³"). */
export const sup = (x) =>
  String(x)
    .split("")
    .map((c) => SUP[c] ?? c)
    .join("");

/** The bench (workgroup memory) above, the warehouse (global memory) below, a
 *  door between, named at (doorX, doorY) (by default right of the door, 40
 *  below the bench). Returns the nodes a scene fades later: {benchLabel, door}. */
export function memory(g, benchY = 70, benchH = 170, { doorX = 540, doorY = benchY + benchH + 40 } = {}) {
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
  const door = el(g, "text", { x: doorX, y: doorY, class: "film-label" }, _("the door"));
  return { benchLabel, door };
}

const TENSOR_ORDER = ["S", "P", "K", "V", "Q", "O"];

/** A name's attributes centred under a shape whose bottom is at y: it hangs
 *  from 6 units below, so a larger font grows downwards, away from the shape. */
export const under = (x, y) => ({ x, y: y + 6, "text-anchor": "middle", "dominant-baseline": "hanging" });

/** Stacked bars of bytes by tensor, axis from zero, each bar labelling its own
 *  value. list: [{fig, kernel, x, label}], fig a figures entry (F.d16, F.d64)
 *  with reads/writes by kernel and tensor in bytes; the bars stand on y0 and
 *  are h tall at maxBytes. Returns each bar's group. */
export function bars(g, list, x0, y0, h, maxBytes) {
  const px = (b) => (h * b) / maxBytes;
  el(g, "line", { x1: x0 - 20, y1: y0, x2: 900, y2: y0, class: "film-axis" });
  el(g, "line", { x1: x0 - 20, y1: y0, x2: x0 - 20, y2: y0 - h - 10, class: "film-axis" });
  const step = 100 * MIB;
  // the zero tick names the unit; no tick within half a step of the top, where
  // the tallest bar's total stands
  for (let v = 0; v <= maxBytes - step / 2; v += step) {
    el(
      g,
      "text",
      { x: x0 - 26, y: y0 - px(v) + 5, "text-anchor": "end", class: "film-label" },
      `${group(v / MIB)}${v === 0 ? " MiB" : ""}`,
    );
  }
  return list.map(({ fig, kernel, x, label }) => {
    const bar = el(g, "g", {});
    let y = y0;
    for (const name of TENSOR_ORDER) {
      const bytes = (fig.reads[kernel][name] || 0) + (fig.writes[kernel][name] || 0);
      if (!bytes) continue;
      const hh = px(bytes);
      el(bar, "rect", { x, y: y - hh, width: 80, height: hh, class: `fill-${name.toLowerCase()}` });
      if (hh > 36)
        el(
          bar,
          "text",
          { x: x + 40, y: y - hh / 2 + 8, "text-anchor": "middle", class: "film-on", "font-size": 16 },
          name,
        );
      y -= hh;
    }
    const total = fig[`${kernel}_raw`];
    // the total clear of the bar's top, the name hanging clear of the axis, at every font size
    el(bar, "text", { x: x + 40, y: y - 12, "text-anchor": "middle", class: "film-text" }, `${mib(total)} MiB`);
    el(g, "text", { ...under(x + 40, y0), class: "film-label" }, label);
    return bar;
  });
}

/** Plain's and fused's bars for one figures entry (F.d16, F.d64), at x = xs[0]
 *  and xs[1], scaled so that plain's total is h tall. Returns the two bars. */
export function plainAndFused(g, fig, xs, x0, y0, h) {
  const list = [
    { fig, kernel: "plain", x: xs[0], label: _("plain") },
    { fig, kernel: "fused", x: xs[1], label: _("fused") },
  ];
  return bars(g, list, x0, y0, h, fig.plain_raw);
}

/** Tensors kept in the warehouse, drawn faint: list [[name, fill class, x]],
 *  each box {y, width, height}, its name at textY. Returns the names' text nodes by tensor. */
export function stores(g, list, { y, width, height, textY }) {
  const names = {};
  for (const [name, cls, x] of list) {
    el(g, "rect", { x, y, width, height, rx: 4, class: cls, "fill-opacity": 0.3 });
    names[name] = el(g, "text", { x: x + width / 2, y: textY, "text-anchor": "middle", class: "film-text" }, name);
  }
  return names;
}

/** A rect and its centred label in one group, the film's usual tensor tile:
 *  box holds the rect's attributes, label {x, y, text, size} the text's. */
export function tile(parent, box, { x, y, text, size = 18 }) {
  const g = el(parent, "g", {});
  el(g, "rect", box);
  el(g, "text", { x, y, "text-anchor": "middle", class: "film-on", "font-size": size }, text);
  return g;
}
