// The walk, step by step, from the worker's op "walk" (emulator/walk.py picture()):
// which tiles each step holds on the bench, which stream past, which squares of the
// grid it visits, and the running tally. Pure data, no DOM: draw.js and words.js read it.
// Every number here is the emulator's; this module only replays its runs in order.

const KINDS = ["reads", "writes"];

/** Add `times` × each tensor's elements of `moved` ({tensor: elements}) into `into`. */
function addInto(into, moved, times) {
  for (const [tensor, elements] of Object.entries(moved)) into[tensor] = (into[tensor] || 0) + times * elements;
}

export class Walk {
  /** result: the op's reply (see emulator/walk.py picture()). */
  constructor(result) {
    this.r = result;
    this.steps = result.steps;
    this.bytes = result.bytes_per_element;
    this.tensors = result.tensors.map(([name, axis]) => ({ name, axis }));
    this.axis = Object.fromEntries(result.tensors);
    this.hasTables = this.tensors.some((t) => t.axis === "table");
    this.skips = new Map();
    const at = Object.fromEntries(result.run_fields.map((name, i) => [name, i]));
    this.runs = result.runs.map((run) => ({
      pass: run[at.pass],
      phase: run[at.phase],
      outer: run[at.outer],
      inner: run[at.inner],
      repeat: run[at.repeat],
      pairs: run[at.pairs],
      reads: run[at.reads],
      writes: run[at.writes],
    }));
    this.starts = []; // the first step of each run
    this.before = []; // the tally, in elements, before each run: {reads: {...}, writes: {...}}
    const running = { reads: {}, writes: {} };
    let step = 0;
    for (const run of this.runs) {
      this.starts.push(step);
      this.before.push({ reads: { ...running.reads }, writes: { ...running.writes } });
      for (const kind of KINDS) addInto(running[kind], run[kind], run.repeat);
      step += run.repeat;
    }
    this.total = running;
    this.cells = this.cellEvents();
  }

  /** The index of the run holding step k (0-based). */
  runOf(k) {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid] <= k) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** Step k (0-based): its pass, phase, marks, pairs and elements, and the grid square it visits. */
  step(k) {
    const index = this.runOf(k);
    const run = this.runs[index];
    const inner = run.inner === null ? null : run.inner + (k - this.starts[index]);
    const spec = this.r.passes[run.pass];
    const query = spec.walk === "query_tiles";
    const cell = run.phase === "stream" ? (query ? [run.outer, inner] : [inner, run.outer]) : null;
    return { k, run: index, ...run, inner, passName: spec.name, walk: spec.walk, spec, cell };
  }

  /** The tally after `done` steps, in bytes: {reads: {tensor: B}, writes: {...}, total}. */
  tally(done) {
    const out = { reads: {}, writes: {}, total: 0 };
    if (done > 0) {
      const index = this.runOf(done - 1);
      const run = this.runs[index];
      for (const kind of KINDS) {
        out[kind] = { ...this.before[index][kind] };
        addInto(out[kind], run[kind], done - this.starts[index]);
      }
    }
    for (const kind of KINDS) {
      for (const tensor of Object.keys(out[kind])) {
        out[kind][tensor] *= this.bytes;
        out.total += out[kind][tensor];
      }
    }
    return out;
  }

  /** Bytes of the whole walk: Count's figure. */
  get totalBytes() {
    let total = 0;
    for (const kind of KINDS) for (const e of Object.values(this.total[kind])) total += e * this.bytes;
    return total;
  }

  /** Tile pairs a grid square stands for (its query tiles × its key tiles). */
  squarePairs(q, k) {
    const [, , q0, q1] = this.r.query_marks[q];
    const [, , k0, k1] = this.r.key_marks[k];
    return (q1 - q0) * (k1 - k0);
  }

  /**
   * Per grid square ("q,k"), the stream steps that visit it, in order:
   * [{step, pass, pairs, table: the N×N tensor it writes there, or null}].
   */
  cellEvents() {
    const cells = new Map();
    this.runs.forEach((run, index) => {
      if (run.phase !== "stream") return;
      const spec = this.r.passes[run.pass];
      const written = Object.keys(run.writes).find((t) => spec.writes[t] === "table") || null;
      for (let i = 0; i < run.repeat; i++) {
        const inner = run.inner + i;
        const key = spec.walk === "query_tiles" ? `${run.outer},${inner}` : `${inner},${run.outer}`;
        if (!cells.has(key)) cells.set(key, []);
        cells.get(key).push({ step: this.starts[index] + i, pass: run.pass, pairs: run.pairs, table: written });
      }
    });
    return cells;
  }

  /**
   * The state of square (q, k) after `done` steps, during pass `pass`: "skipped" (no
   * step ever visits it), "waiting", or {table, part}: the last N×N tensor written
   * there (it stays in global memory from pass to pass; null when the kernel keeps
   * its scores on the bench and this pass has visited the square), and whether that
   * visit covered only part of its tile pairs (the causal diagonal, in grouped squares).
   */
  square(q, k, done, pass) {
    const events = this.cells.get(`${q},${k}`);
    if (!events) return "skipped";
    let table = null;
    let now = null;
    let last = null;
    for (const e of events) {
      if (e.step >= done) break;
      if (e.table) {
        table = e.table;
        last = e;
      }
      if (e.pass === pass) now = e;
    }
    if (!table && !now) return "waiting";
    return { table, part: (now || last).pairs < this.squarePairs(q, k) };
  }

  /** Per pass and outer mark: tile pairs the causal mask skips in that row (or column) of the grid. */
  skippedPairs(passIndex, outer) {
    const key = `${passIndex},${outer}`;
    if (!this.skips.has(key)) this.skips.set(key, this.countSkipped(passIndex, outer));
    return this.skips.get(key);
  }

  countSkipped(passIndex, outer) {
    const spec = this.r.passes[passIndex];
    const query = spec.walk === "query_tiles";
    const marks = query ? this.r.query_marks : this.r.key_marks;
    const others = query ? this.r.key_tiles : this.r.query_tiles;
    const [, , t0, t1] = marks[outer];
    let visited = 0;
    this.runs.forEach((run) => {
      if (run.pass === passIndex && run.phase === "stream" && run.outer === outer) visited += run.pairs * run.repeat;
    });
    return { skipped: (t1 - t0) * others - visited, total: (t1 - t0) * others };
  }

  /**
   * The first step that writes each mark of a written tensor along its axis:
   * {tensor: [step per mark]} (Infinity where no step writes it), for the strips.
   */
  firstWrites() {
    const out = {};
    for (const { name, axis } of this.tensors) {
      if (axis === "table") continue;
      const marks = axis === "query" ? this.r.query_marks : this.r.key_marks;
      out[name] = marks.map(() => Infinity);
    }
    this.runs.forEach((run, index) => {
      const spec = this.r.passes[run.pass];
      for (const tensor of Object.keys(run.writes)) {
        if (!(tensor in out)) continue;
        for (let i = 0; i < run.repeat; i++) {
          for (const m of this.marksMoved(spec, run, run.inner === null ? null : run.inner + i, tensor, "writes")) {
            out[tensor][m] = Math.min(out[tensor][m], this.starts[index] + i);
          }
        }
      }
    });
    return out;
  }

  /** The marks along its axis that a step moves of `tensor` (all of them in a "once" pass). */
  marksMoved(spec, run, inner, tensor, kind) {
    const role = spec[kind][tensor];
    const marks = this.axis[tensor] === "query" ? this.r.query_marks : this.r.key_marks;
    if (role === "whole") return marks.map((_, i) => i);
    if (role === "bench") return [run.outer];
    if (role === "stream") return inner === null ? [] : [inner];
    return [];
  }
}
