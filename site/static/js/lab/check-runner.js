// Check in chunks of rows: progress while it runs, a partial
// result if the learner cancels, and the rows shared among several workers.
// Every rule stays in Python: "check_plan" says how many rows a check visits,
// "check_part" checks rows [lo, hi) of that plan, "check_merge" turns partial
// reports into the report "check" gives (lab_api/__init__.py, emulator/accuracy.py).
//
// After each chunk, the worker that checked it also merges every part received
// so far (a few milliseconds), so a merged report is always in hand: Cancel can
// stop every worker at once, as before, and still show the rows already done.
import { _ } from "../i18n.js";

const TARGET_SECONDS = 0.4; // aim for chunks about this long, so progress moves
const FIRST_CHUNK_ROWS = 4; // before the first timing is known
const MAX_WORKERS = 4; // each worker holds its own Python (tens of MB)
const SPREAD_AFTER_SECONDS = 1.5; // start more workers only for work longer than this

/** Workers a check may use here: one per logical core, at most MAX_WORKERS. */
export function checkWorkerCount() {
  const cores = (typeof navigator !== "undefined" && navigator.hardwareConcurrency) || 1;
  return Math.max(1, Math.min(MAX_WORKERS, cores));
}

export class CheckRunner {
  /**
   * client: the lab's EmulatorClient (its worker does the first chunks and the merges).
   * makeClient: () => a new EmulatorClient, for the extra workers (kept between checks).
   * maxWorkers: workers in all, the lab's own included (default checkWorkerCount()).
   */
  constructor({ client, makeClient, maxWorkers = checkWorkerCount() }) {
    this.client = client;
    this.makeClient = makeClient;
    this.maxWorkers = makeClient ? maxWorkers : 1;
    this.extras = [];
    this.run_ = null;
  }

  get running() {
    return this.run_ !== null;
  }

  /**
   * Check with the lab's raw form params. onProgress({done, total, workers}) after
   * each chunk. Resolves to the worker's usual reply: {ok: true, result} with the
   * "check" report (result.seconds is the wall-clock time, result.python_seconds the
   * time summed over workers, result.workers how many took part); {ok: false,
   * errors} for bad input; or, after cancel(), {ok: false, cancelled: true, errors,
   * partial}, where partial is the merged report of the rows done (complete: false)
   * or null if no chunk had finished.
   */
  async run(params, { onProgress = () => {} } = {}) {
    const started = performance.now();
    const state = {
      cancelled: false,
      error: null,
      latest: null,
      parts: [],
      next: 0,
      done: 0,
      total: 0,
      secondsPerRow: 0,
      loops: [],
      workers: 1,
    };
    this.run_ = state;
    try {
      const plan = await this.client.request("check_plan", params);
      if (state.cancelled) return cancelledReply(state);
      if (!plan.ok) return plan;
      state.total = plan.result.rows_planned;
      const progress = () => onProgress({ done: state.done, total: state.total, workers: state.workers });
      progress();
      const work = async (c) => {
        while (!state.cancelled && !state.error && state.next < state.total) {
          const lo = state.next;
          const size =
            state.secondsPerRow > 0 ? Math.max(1, Math.round(TARGET_SECONDS / state.secondsPerRow)) : FIRST_CHUNK_ROWS;
          const hi = Math.min(state.total, lo + size);
          state.next = hi;
          const reply = await c.request("check_part", params, { rows: [lo, hi] });
          if (state.cancelled) return;
          if (!reply.ok) {
            state.error = reply;
            return;
          }
          const part = reply.result;
          state.parts.push(part);
          state.done += hi - lo;
          const perRow = part.seconds / (hi - lo);
          state.secondsPerRow = state.secondsPerRow ? Math.min(state.secondsPerRow, perRow) : perRow;
          progress();
          if (state.parts.length === 1) this.spread(state, work, progress);
          if (state.done < state.total) {
            const merged = await c.request("check_merge", params, { parts: state.parts.slice() });
            if (merged.ok && (!state.latest || merged.result.rows_checked > state.latest.rows_checked)) {
              state.latest = merged.result;
            }
          }
        }
      };
      state.loops.push(work(this.client));
      // Extra workers may join while the first ones run: wait until none is left.
      let count;
      do {
        count = state.loops.length;
        await Promise.all(state.loops);
      } while (state.loops.length !== count);
      if (state.cancelled) return cancelledReply(state);
      if (state.error) return state.error;
      const reply = await this.client.request("check_merge", params, { parts: state.parts });
      if (state.cancelled) return cancelledReply(state);
      if (reply.ok) {
        reply.result.python_seconds = reply.result.seconds;
        reply.result.seconds = (performance.now() - started) / 1000;
        reply.result.workers = state.workers;
      }
      return reply;
    } finally {
      if (this.run_ === state) this.run_ = null;
    }
  }

  /** Start the extra workers' Python now (the learner reached for Check), so that a
   *  long check shares its rows from its first seconds instead of after their start. */
  prewarm() {
    if (this.maxWorkers < 2) return;
    while (this.extras.length < this.maxWorkers - 1) this.extras.push(this.makeClient());
    for (const c of this.extras) c.start();
  }

  // After the first chunk: if the rest would take a while, let more workers share it.
  spread(state, work, progress) {
    const rest = (state.total - state.done) * state.secondsPerRow;
    if (this.maxWorkers < 2 || rest < SPREAD_AFTER_SECONDS) return;
    while (this.extras.length < this.maxWorkers - 1) this.extras.push(this.makeClient());
    for (const c of this.extras) {
      state.loops.push(
        (async () => {
          const ready = await c.request("limits", {}); // starts its Python if it has none yet
          if (!ready.ok || state.cancelled || state.next >= state.total) return;
          state.workers += 1;
          progress();
          await work(c);
        })(),
      );
    }
  }

  /** Stop every worker now (Python cannot be interrupted mid-loop); run() then
   *  resolves with the rows merged so far. The next check starts fresh workers. */
  cancel() {
    const state = this.run_;
    if (state) state.cancelled = true;
    this.client.cancel();
    for (const c of this.extras) c.cancel();
    this.extras = [];
  }
}

function cancelledReply(state) {
  return { ok: false, cancelled: true, errors: [{ field: "op", message: _("Cancelled.") }], partial: state.latest };
}
