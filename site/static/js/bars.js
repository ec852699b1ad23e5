// Stacked horizontal bars of bytes per tensor, as SVG built from the count.
// Bars start at zero, label their own totals, and use each tensor's colour.
// Numbers and words are in the page's language (i18n.js).
import { _, decimalMark, lang, num } from "./i18n.js";

const SVG = "http://www.w3.org/2000/svg";
const TENSORS = ["Q", "K", "V", "S", "P", "O"];

/** An SVG element with these attributes (and text): the charts' one builder. */
export function el(name, attrs = {}, text) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

const oneDecimal = new Intl.NumberFormat(lang, { maximumFractionDigits: 1, minimumFractionDigits: 1 });
const upToTwo = new Intl.NumberFormat(lang, { maximumFractionDigits: 2, minimumFractionDigits: 1 });

export function mib(bytes) {
  return oneDecimal.format(bytes / 2 ** 20);
}

/** Bytes with a unit that keeps a small count readable: "272.5 MiB", "16.0 KiB", "512 B" (pt-BR "272,5 MiB"). */
export function size(bytes) {
  if (bytes >= 2 ** 30) return `${upToTwo.format(bytes / 2 ** 30)} GiB`;
  if (bytes >= 2 ** 20 * 0.1) return `${mib(bytes)} MiB`;
  if (bytes >= 1024) return `${oneDecimal.format(bytes / 1024)} KiB`;
  return `${num(bytes)} B`;
}

/** Sizes that stand side by side (a chart's totals): each in its unit as size() picks
 *  it, and every GiB figure with the same decimals, two where one of them needs them
 *  ("1.00 GiB" beside "1.25 GiB", not "1.0 GiB"); MiB and KiB always have one. */
export function sizes(list) {
  const gib = list.filter((b) => b >= 2 ** 30).map((b) => b / 2 ** 30);
  const places = gib.some((v) => Math.abs(Math.round(v * 10) - v * 10) > 1e-9) ? 2 : 1;
  const fmt = new Intl.NumberFormat(lang, { maximumFractionDigits: places, minimumFractionDigits: places });
  return list.map((b) => (b >= 2 ** 30 ? `${fmt.format(b / 2 ** 30)} GiB` : size(b)));
}

// A phone draws the chart in fewer units, each kernel's name above its bar, so
// that the scaled-down drawing keeps its words at least 12 px tall (a 720-unit
// chart shrunk to 350 px would draw 13-unit words about 6 px tall).
export const NARROW = "(max-width: 40rem)";

/**
 * rows: [{label, traffic: {reads, writes, total_bytes}}]; returns an <svg>.
 * tensors: the segments' order (the backward count passes the manifest's longer list).
 * narrow: the phone layout (default: the viewport is at most 40rem wide).
 */
export function barChart(rows, { title, tensors = TENSORS, narrow = window.matchMedia(NARROW).matches }) {
  const width = narrow ? 360 : 720,
    left = narrow ? 4 : 150,
    right = narrow ? 92 : 110,
    barH = narrow ? 28 : 34,
    above = narrow ? 20 : 0, // room for the name above the bar
    gap = 18,
    top = 10;
  const step = above + barH + gap;
  const height = top + rows.length * step + 24;
  const max = Math.max(...rows.map((r) => r.traffic.total_bytes), 1);
  const scale = (width - left - right) / max;
  const totals = sizes(rows.map((r) => r.traffic.total_bytes));
  const svg = el("svg", {
    viewBox: `0 0 ${width} ${height}`,
    class: narrow ? "bars is-narrow" : "bars",
    role: "img",
    "aria-label": title,
  });
  svg.appendChild(el("title", {}, title));
  rows.forEach((row, i) => {
    const y = top + i * step + above;
    if (narrow) svg.appendChild(el("text", { x: left, y: y - 6 }, row.label));
    else svg.appendChild(el("text", { x: left - 10, y: y + barH / 2 + 5, "text-anchor": "end" }, row.label));
    let x = left;
    for (const t of tensors) {
      const bytes = (row.traffic.reads[t] || 0) + (row.traffic.writes[t] || 0);
      if (!bytes) continue;
      const w = bytes * scale;
      const rect = el("rect", { x, y, width: Math.max(w, 0.5), height: barH, class: `seg-${t}` });
      rect.appendChild(el("title", {}, _("{tensor}: {bytes} bytes", { tensor: t, bytes: num(bytes) })));
      svg.appendChild(rect);
      if (w > 22)
        svg.appendChild(
          el("text", { x: x + w / 2, y: y + barH / 2 + 4, "text-anchor": "middle", class: "seg-label" }, t),
        );
      x += w;
    }
    svg.appendChild(el("text", { x: x + 6, y: y + barH / 2 + 5 }, totals[i]));
  });
  const axisY = top + rows.length * step - gap / 2;
  svg.appendChild(el("line", { x1: left, x2: left, y1: top - 4, y2: axisY, class: "axis" }));
  svg.appendChild(el("text", { x: left, y: axisY + 16, "text-anchor": narrow ? "start" : "middle" }, "0"));
  return svg;
}

/**
 * For each kernel, two bars against plain: how many times fewer bytes it moves
 * (counted) and how many times as fast it ran (measured), on one scale with a line
 * at 1× (plain). rows: [{label, counted, measured}] (ratios); returns an <svg>.
 */
export function ratioChart(rows, { title }) {
  const width = 500;
  const left = 150;
  const right = 64;
  const barH = 16;
  const pair = 2 * barH + 4;
  const gap = 16;
  const top = 8;
  const height = top + rows.length * (pair + gap) + 22;
  const max = Math.max(1, ...rows.flatMap((r) => [r.counted, r.measured].filter((x) => x > 0))) * 1.05;
  const scale = (width - left - right) / max;
  const svg = el("svg", { viewBox: `0 0 ${width} ${height}`, class: "bars ratios", role: "img", "aria-label": title });
  svg.appendChild(el("title", {}, title));
  const times = (x) => (x >= 10 ? x.toFixed(1) : x.toFixed(2)).replace(".", decimalMark) + "×";
  rows.forEach((row, i) => {
    const y = top + i * (pair + gap);
    svg.appendChild(el("text", { x: left - 8, y: y + pair / 2 + 5, "text-anchor": "end" }, row.label));
    [
      ["counted", row.counted, (kernel, ratio) => _("{kernel}: {ratio} fewer bytes", { kernel, ratio })],
      ["measured", row.measured, (kernel, ratio) => _("{kernel}: {ratio} as fast", { kernel, ratio })],
    ].forEach(([kind, value, words], j) => {
      const by = y + j * (barH + 4);
      const w = value > 0 ? value * scale : 0;
      const rect = el("rect", { x: left, y: by, width: Math.max(w, 0.5), height: barH, class: `ratio-${kind}` });
      rect.appendChild(el("title", {}, words(row.label, times(value))));
      svg.appendChild(rect);
      svg.appendChild(el("text", { x: left + w + 6, y: by + barH - 3, class: "ratio-value" }, times(value)));
    });
  });
  const axisY = top + rows.length * (pair + gap) - gap / 2;
  const one = left + scale;
  svg.appendChild(el("line", { x1: left, x2: left, y1: top - 4, y2: axisY, class: "axis" }));
  svg.appendChild(el("line", { x1: one, x2: one, y1: top - 4, y2: axisY, class: "axis one" }));
  svg.appendChild(el("text", { x: one, y: axisY + 16, "text-anchor": "middle" }, _("1× = plain")));
  return svg;
}
