// Scene 2, the plain way: three passes, and the whole table of scores through
// the door four times, counted on a meter.
import { _, num } from "../../i18n.js";
import { dual, el, memory, mib, stores, tile } from "../draw.js";

const DOWN = 290; // bench -> warehouse offset
// Q, K and V in the warehouse, and O
const STORES = [
  ["Q", "fill-q", 150],
  ["K", "fill-k", 250],
  ["V", "fill-v", 350],
  ["O", "fill-o", 600],
];

/** The three passes' names, shown as each pass starts (labels, so that the
 *  longest fits left of the bench in every language). */
function passNames(g, { hide }) {
  const passes = [
    dual(g, { x: 20, y: 110, class: "film-label" }, _("pass {k}: scores", { k: 1 }), _("pass {k}", { k: 1 })),
    dual(g, { x: 20, y: 155, class: "film-label" }, _("pass {k}: softmax", { k: 2 }), _("pass {k}", { k: 2 })),
    dual(g, { x: 20, y: 200, class: "film-label" }, _("pass {k}: mix V", { k: 3 }), _("pass {k}", { k: 3 })),
  ];
  hide(passes);
  return passes;
}

/** S and P cross the door, each crossing logged and added to the meter. */
function tableCrossings(g, passes, { F, T, tl, labels, hide, fadeIn, fadeOut }) {
  // the meter and its log, right of the bench, aligned on the right (the meter's digits grow leftwards)
  const right = { x: 935, "text-anchor": "end" };
  dual(g, { ...right, y: 60, class: "film-label" }, _("through the door so far"), _("so far"), { y: 30 });
  const meter = el(g, "text", { ...right, y: 95, class: "film-big" }, `${num(0)} MiB`);
  const s = tile(g, { x: 440, y: 110, width: 80, height: 80, rx: 4, class: "fill-s" }, { x: 480, y: 158, text: "S" });
  const p = tile(g, { x: 440, y: 110, width: 80, height: 80, rx: 4, class: "fill-p" }, { x: 480, y: 158, text: "P" });
  hide([s, p]);
  const moves = [
    // [node, at, direction, log line, its phone wording], each move is one
    // crossing of the whole table (↓ out to the warehouse, ↑ back in)
    [s, T("pass1") + 1.0, "out", _("S out {mib} MiB", { mib: F.table.mib }), `S ↓ ${F.table.mib} MiB`],
    [s, T("pass2") + 0.3, "in", _("S in {mib} MiB", { mib: F.table.mib }), `S ↑ ${F.table.mib} MiB`],
    [p, T("pass2") + 2.0, "out", _("P out {mib} MiB", { mib: F.table.mib }), `P ↓ ${F.table.mib} MiB`],
    [p, T("pass3") + 0.5, "in", _("P in {mib} MiB", { mib: F.table.mib }), `P ↑ ${F.table.mib} MiB`],
  ];
  fadeIn(passes[0], T("pass1"));
  fadeIn(s, T("pass1") + 0.3);
  fadeIn(passes[1], T("pass2"));
  fadeIn(passes[2], T("pass3"));
  moves.forEach(([node, at, dir, name, short], k) => {
    tl.to(node, { y: dir === "out" ? DOWN : 0, duration: 1.2, ease: "power1.inOut" }, at);
    const line = dual(g, { ...right, y: 150 + k * 40, class: "film-text" }, name, short);
    hide(line);
    fadeIn(line, at + 1.0, 0.3);
  });
  // S turns into P on the bench during pass 2
  fadeOut(s, T("pass2") + 1.6, 0.3);
  fadeIn(p, T("pass2") + 1.6, 0.3);
  const cross = { v: 0 };
  moves.forEach(([, at], k) => tl.to(cross, { v: (k + 1) * F.table.raw, duration: 1.2, ease: "none" }, at));
  labels.push(() => {
    meter.textContent = `${mib(cross.v)} MiB`;
  });
}

/** Q, K and V come in too (and O goes out): the count adds them later. */
function tensorsComeIn(g, { T, tl, hide, fadeIn }) {
  const names = stores(g, STORES, { y: 400, width: 80, height: 80, textY: 448 });
  const reader = (name, cls, x, at, dx) => {
    const r = tile(g, { x, y: 400, width: 80, height: 80, rx: 4, class: cls }, { x: x + 40, y: 448, text: name });
    hide(r);
    tl.set(r, { autoAlpha: 1 }, at);
    tl.set(names[name], { autoAlpha: 0 }, at);
    tl.to(r, { x: dx, y: -290, duration: 1.2, ease: "power1.inOut" }, at);
    tl.to(r, { autoAlpha: 0, duration: 0.3 }, at + 2.2);
    tl.set(names[name], { autoAlpha: 1 }, at + 1.2);
  };
  reader("Q", "fill-q", 150, T("pass1") + 0.1, 130);
  reader("K", "fill-k", 250, T("pass1") + 0.1, 120);
  reader("V", "fill-v", 350, T("pass3") + 0.1, 20);
  const kvIn = dual(
    g,
    { x: 536, y: 362, class: "film-label" },
    _("Q, K and V come in too: the count adds them"),
    _("Q, K, V come in too"),
  );
  hide(kvIn);
  fadeIn(kvIn, T("pass3") + 1.4);
}

/** Scene 2 on its group g, with the film's stage (see ../scenes.js). */
export function plain(g, stage) {
  const { F, T, hide, fadeIn } = stage;
  memory(g);
  const passes = passNames(g, stage);
  tableCrossings(g, passes, stage);
  tensorsComeIn(g, stage);
  // what crossed, left of the door (Q, K and V have gone up by then)
  const total = dual(
    g,
    { x: 20, y: 295, class: "film-text text-s" },
    _("the table crossed {times} times: {mib} MiB", { times: F.cross.times, mib: F.cross.mib }),
    _("table: {mib} MiB", { mib: F.cross.mib }),
  );
  const note = dual(
    g,
    { x: 20, y: 330, class: "film-label" },
    _("and not one byte of Q, K, V or O yet"),
    _("no Q, K, V or O yet"),
    { y: 340 },
  );
  hide([total, note]);
  fadeIn(total, T("door") + 0.1);
  fadeIn(note, T("cross"));
}
