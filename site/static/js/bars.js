// Stacked horizontal bars of bytes per tensor, as SVG built from the count.
// Bars start at zero, label their own totals, and use each tensor's colour.
const SVG = "http://www.w3.org/2000/svg";
const TENSORS = ["Q", "K", "V", "S", "P", "O"];

function el(name, attrs = {}, text) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

export function mib(bytes) {
  return (bytes / 2 ** 20).toLocaleString("en-US", { maximumFractionDigits: 1, minimumFractionDigits: 1 });
}

/** Bytes with a unit that keeps a small count readable: "272.5 MiB", "16.0 KiB", "512 B". */
export function size(bytes) {
  if (bytes >= 2 ** 30)
    return `${(bytes / 2 ** 30).toLocaleString("en-US", { maximumFractionDigits: 2, minimumFractionDigits: 1 })} GiB`;
  if (bytes >= 2 ** 20 * 0.1) return `${mib(bytes)} MiB`;
  if (bytes >= 1024)
    return `${(bytes / 1024).toLocaleString("en-US", { maximumFractionDigits: 1, minimumFractionDigits: 1 })} KiB`;
  return `${bytes.toLocaleString("en-US")} B`;
}

/** rows: [{label, traffic: {reads, writes, total_bytes}}]; returns an <svg>. */
export function barChart(rows, { title }) {
  const width = 720,
    left = 150,
    right = 110,
    barH = 34,
    gap = 18,
    top = 10;
  const height = top + rows.length * (barH + gap) + 24;
  const max = Math.max(...rows.map((r) => r.traffic.total_bytes), 1);
  const scale = (width - left - right) / max;
  const svg = el("svg", { viewBox: `0 0 ${width} ${height}`, class: "bars", role: "img", "aria-label": title });
  svg.appendChild(el("title", {}, title));
  rows.forEach((row, i) => {
    const y = top + i * (barH + gap);
    svg.appendChild(el("text", { x: left - 10, y: y + barH / 2 + 5, "text-anchor": "end" }, row.label));
    let x = left;
    for (const t of TENSORS) {
      const bytes = row.traffic.reads[t] + row.traffic.writes[t];
      if (!bytes) continue;
      const w = bytes * scale;
      const rect = el("rect", { x, y, width: Math.max(w, 0.5), height: barH, class: `seg-${t}` });
      rect.appendChild(el("title", {}, `${t}: ${bytes.toLocaleString("en-US")} bytes`));
      svg.appendChild(rect);
      if (w > 22)
        svg.appendChild(
          el("text", { x: x + w / 2, y: y + barH / 2 + 4, "text-anchor": "middle", class: "seg-label" }, t),
        );
      x += w;
    }
    svg.appendChild(el("text", { x: x + 8, y: y + barH / 2 + 5 }, size(row.traffic.total_bytes)));
  });
  const axisY = top + rows.length * (barH + gap) - gap / 2;
  svg.appendChild(el("line", { x1: left, x2: left, y1: top - 4, y2: axisY, class: "axis" }));
  svg.appendChild(el("text", { x: left, y: axisY + 16, "text-anchor": "middle" }, "0"));
  return svg;
}
