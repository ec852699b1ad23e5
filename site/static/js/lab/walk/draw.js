// The walk's drawing (SVG): the query tiles down the left, the key tiles across
// the top, and between them the grid of (query tile, key tile) squares, which is
// the N×N table where a kernel stores one, drawn to scale (a ragged last tile is
// thinner). A band marks the tile on the bench, a frame the tile walking past it;
// both move by CSS transforms, tweened unless the learner asks for reduced motion
// (walk.css and cannery.css drop every transition then). Colours are the bar
// chart's: class seg-<tensor> (cannery.css).
import { _ } from "../../i18n.js";

const SVG = "http://www.w3.org/2000/svg";
const GRID = 340; // the N×N square, in the drawing's units
const STRIP = 20; // a tensor's strip
const PITCH = 32; // strip and gap: room for a label of two letters (dO) under each
const TOP = 30; // room for the key axis's caption
const LEFT = 30; // room for the query axis's caption

function el(name, attrs = {}, text) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** A unit rect placed by a transform, so that a move between two places can be tweened. */
function place(node, x, y, w, h) {
  node.style.transform = `translate(${x}px, ${y}px) scale(${Math.max(w, 0.5)}, ${Math.max(h, 0.5)})`;
}

export class Drawing {
  constructor(walk) {
    this.walk = walk;
    const r = walk.r;
    this.query = walk.tensors.filter((t) => t.axis === "query").map((t) => t.name);
    this.keys = walk.tensors.filter((t) => t.axis === "key").map((t) => t.name);
    this.gx = LEFT + this.query.length * PITCH + 8;
    this.gy = TOP + this.keys.length * PITCH + 6;
    this.scale = GRID / r.n;
    this.width = this.gx + GRID + 48;
    this.height = this.gy + GRID + 30;
    const tables = walk.tensors.filter((t) => t.axis === "table").map((t) => t.name);
    /** The grid's caption (the page shows it under the drawing, where it stays readable at any width). */
    this.caption = tables.length
      ? _("The grid: {tables}, N×N tables in global memory.", { tables: tables.join(", ") })
      : _("The grid: pairs of tiles; their scores stay on the bench, never in global memory.");
    this.svg = el("svg", {
      viewBox: `0 0 ${this.width} ${this.height}`,
      class: "bars walk-svg",
      "aria-hidden": "true",
    });
    this.firstWrites = walk.firstWrites();
    this.shown = new Map(); // element -> the class it shows now, so an update touches only what changes
    this.drawAxes();
    this.drawStrips();
    this.drawGrid();
    this.drawCursors();
  }

  /** x of key row `a`, y of query row `a`, in drawing units. */
  kx(a) {
    return this.gx + a * this.scale;
  }

  qy(a) {
    return this.gy + a * this.scale;
  }

  drawAxes() {
    const svg = this.svg;
    svg.appendChild(el("text", { x: this.gx, y: 20, class: "walk-axis" }, _("key tiles →")));
    const y = this.gy + 4;
    svg.appendChild(
      el(
        "text",
        { x: 0, y: 0, transform: `translate(${LEFT - 21} ${y}) rotate(90)`, class: "walk-axis" },
        _("query tiles →"),
      ),
    );
    const defs = el("defs");
    const hatch = el("pattern", {
      id: "walk-hatch",
      width: 6,
      height: 6,
      patternUnits: "userSpaceOnUse",
      patternTransform: "rotate(45)",
    });
    hatch.appendChild(el("line", { x1: 0, y1: 0, x2: 0, y2: 6, class: "walk-hatch" }));
    defs.appendChild(hatch);
    svg.appendChild(defs);
  }

  drawStrips() {
    const r = this.walk.r;
    this.marks = {};
    this.query.forEach((tensor, i) => {
      const x = LEFT + i * PITCH;
      this.marks[tensor] = r.query_marks.map(([a, b]) =>
        this.svg.appendChild(
          el("rect", { x, y: this.qy(a), width: STRIP, height: Math.max((b - a) * this.scale, 0.5) }),
        ),
      );
      this.svg.appendChild(
        el(
          "text",
          { x: x + STRIP / 2, y: this.gy + GRID + 22, "text-anchor": "middle", class: `walk-label t-${tensor}` },
          tensor,
        ),
      );
    });
    this.keys.forEach((tensor, i) => {
      const y = TOP + i * PITCH;
      this.marks[tensor] = r.key_marks.map(([a, b]) =>
        this.svg.appendChild(
          el("rect", { x: this.kx(a), y, width: Math.max((b - a) * this.scale, 0.5), height: STRIP }),
        ),
      );
      this.svg.appendChild(
        el("text", { x: this.gx + GRID + 6, y: y + STRIP / 2 + 7, class: `walk-label t-${tensor}` }, tensor),
      );
    });
  }

  drawGrid() {
    const r = this.walk.r;
    this.squares = r.query_marks.map(([qa, qb]) =>
      r.key_marks.map(([ka, kb]) =>
        this.svg.appendChild(
          el("rect", {
            x: this.kx(ka),
            y: this.qy(qa),
            width: Math.max((kb - ka) * this.scale, 0.5),
            height: Math.max((qb - qa) * this.scale, 0.5),
          }),
        ),
      ),
    );
    this.svg.appendChild(el("rect", { x: this.gx, y: this.gy, width: GRID, height: GRID, class: "walk-frame" }));
    if (r.causal && r.n > 1) {
      this.svg.appendChild(
        el("line", { x1: this.gx, y1: this.gy, x2: this.gx + GRID, y2: this.gy + GRID, class: "walk-diagonal" }),
      );
      // the top right square lies past the diagonal whenever any does
      if (this.walk.square(0, r.key_marks.length - 1, Infinity, -1) === "skipped") {
        this.svg.appendChild(
          el(
            "text",
            { x: this.gx + GRID * 0.72, y: this.gy + GRID * 0.28, "text-anchor": "middle", class: "walk-skipped" },
            _("skipped"),
          ),
        );
      }
    }
  }

  drawCursors() {
    this.band = this.svg.appendChild(el("rect", { x: 0, y: 0, width: 1, height: 1, class: "walk-band" }));
    this.walker = this.svg.appendChild(el("rect", { x: 0, y: 0, width: 1, height: 1, class: "walk-walker" }));
    this.cursor = this.svg.appendChild(el("rect", { x: 0, y: 0, width: 1, height: 1, class: "walk-cursor" }));
    for (const node of [this.band, this.walker, this.cursor]) node.setAttribute("vector-effect", "non-scaling-stroke");
  }

  setClass(node, name) {
    if (this.shown.get(node) === name) return;
    this.shown.set(node, name);
    node.setAttribute("class", name);
  }

  /** Show the walk after `done` steps. */
  update(done) {
    const walk = this.walk;
    const step = done > 0 ? walk.step(done - 1) : null;
    this.squares.forEach((row, q) =>
      row.forEach((node, k) => {
        const state = walk.square(q, k, done, step ? step.pass : -1);
        let name = "sq sq-wait";
        if (state === "skipped") name = "sq sq-skip";
        else if (state !== "waiting")
          name = `sq ${state.table ? `seg-${state.table}` : "sq-seen"}${state.part ? " sq-part" : ""}`;
        this.setClass(node, name);
      }),
    );
    const now = this.movedNow(step);
    for (const [tensor, marks] of Object.entries(this.marks)) {
      const first = this.firstWrites[tensor];
      const input = first.every((s) => s === Infinity);
      marks.forEach((node, m) => {
        let state = input ? "mk-have" : first[m] < done ? "mk-done" : "mk-none";
        if (now[tensor]?.has(m)) state = "mk-now";
        this.setClass(node, `seg-${tensor} mk ${state}`);
      });
    }
    this.moveCursors(step);
  }

  /** {tensor: Set of its marks} that the step moves. */
  movedNow(step) {
    const out = {};
    if (!step) return out;
    for (const kind of ["reads", "writes"]) {
      for (const tensor of Object.keys(step[kind])) {
        if (!(tensor in this.marks)) continue;
        out[tensor] = new Set([
          ...(out[tensor] || []),
          ...this.walk.marksMoved(step.spec, step, step.inner, tensor, kind),
        ]);
      }
    }
    return out;
  }

  moveCursors(step) {
    const r = this.walk.r;
    const tiles = step && step.phase !== "once";
    this.band.classList.toggle("off", !tiles);
    this.walker.classList.toggle("off", !tiles || step.phase !== "stream");
    this.cursor.classList.toggle("off", !tiles || step.phase !== "stream");
    if (!tiles) return;
    const query = step.walk === "query_tiles";
    const [oa, ob] = (query ? r.query_marks : r.key_marks)[step.outer];
    const stripsEnd = TOP + this.keys.length * PITCH - 5;
    if (query) place(this.band, LEFT - 2, this.qy(oa), this.gx + GRID - LEFT + 2, (ob - oa) * this.scale);
    else place(this.band, this.kx(oa), TOP - 2, (ob - oa) * this.scale, this.gy + GRID - TOP + 2);
    if (step.phase !== "stream") return;
    const [ia, ib] = (query ? r.key_marks : r.query_marks)[step.inner];
    if (query) place(this.walker, this.kx(ia), TOP - 2, (ib - ia) * this.scale, stripsEnd - TOP + 4);
    else place(this.walker, LEFT - 2, this.qy(ia), this.query.length * PITCH, (ib - ia) * this.scale);
    const [q, k] = step.cell;
    const [qa, qb] = r.query_marks[q];
    const [ka, kb] = r.key_marks[k];
    place(this.cursor, this.kx(ka), this.qy(qa), (kb - ka) * this.scale, (qb - qa) * this.scale);
  }
}
