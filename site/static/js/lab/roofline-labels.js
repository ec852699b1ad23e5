// Where the roofline's point labels go: beside their marks, clear of every other label
// and mark and inside the plot. Pure (no DOM): tests/js_parity.mjs runs it under node.

/** Candidate places for a label, in order of preference: [dx, dy, anchor] from its mark. */
const PLACES = [
  [10, 16, "start"],
  [10, -10, "start"],
  [-10, 16, "end"],
  [-10, -10, "end"],
  [10, 30, "start"],
  [-10, 30, "end"],
  [10, -24, "start"],
  [-10, -24, "end"],
];

const meets = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;

/**
 * marks: [{x, y, label}] in drawing units, in drawing order (a mark within 14 units of an
 * earlier labelled one shares its label: "fused, fused-fast"); bounds: {left, right, top,
 * bottom} the labels stay inside; size: the labels' font size in the same units (a
 * character is taken as 0.62 of it wide, a line 1.25 of it tall).
 * Returns one entry per label drawn: {x, y, anchor, text, box: {left, right, top, bottom},
 * marks: [indices of the marks it names]}.
 */
export function placeLabels(marks, bounds, size) {
  const dots = marks.map((m) => ({ left: m.x - 6, right: m.x + 6, top: m.y - 6, bottom: m.y + 6 }));
  const placed = [];
  const boxOf = (m, [dx, dy, anchor], text) => {
    const w = text.length * size * 0.62;
    const left = anchor === "start" ? m.x + dx : m.x + dx - w;
    return { left, right: left + w, top: m.y + dy - size, bottom: m.y + dy + 0.25 * size };
  };
  const free = (box, self) =>
    box.left >= bounds.left &&
    box.right <= bounds.right &&
    box.top >= bounds.top &&
    box.bottom <= bounds.bottom &&
    !placed.some((p) => meets(p.box, box)) &&
    !dots.some((d, i) => !self.includes(i) && meets(d, box));
  const put = (label, text) => {
    const m = marks[label.marks[0]];
    for (const place of PLACES) {
      const box = boxOf(m, place, text);
      if (free(box, label.marks))
        return { ...label, x: m.x + place[0], y: m.y + place[1], anchor: place[2], text, box };
    }
    return null;
  };
  marks.forEach((m, i) => {
    const near = placed.find(
      (p) => Math.abs(marks[p.marks[0]].x - m.x) < 14 && Math.abs(marks[p.marks[0]].y - m.y) < 14,
    );
    if (near) {
      const k = placed.indexOf(near);
      placed.splice(k, 1);
      const again = put({ marks: [...near.marks, i] }, `${near.text}, ${m.label}`);
      placed.splice(k, 0, again || { ...near, marks: [...near.marks, i], text: `${near.text}, ${m.label}` });
      return;
    }
    const label = put({ marks: [i] }, m.label);
    if (label) placed.push(label);
    else {
      // nowhere free: share the nearest label's words rather than draw over it
      const nearest = placed.reduce(
        (best, p) => {
          const d = Math.hypot(marks[p.marks[0]].x - m.x, marks[p.marks[0]].y - m.y);
          return d < best.d ? { p, d } : best;
        },
        { p: null, d: Infinity },
      ).p;
      if (nearest) {
        nearest.text += `, ${m.label}`;
        nearest.marks.push(i);
      }
    }
  });
  return placed;
}
