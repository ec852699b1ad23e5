// The page's side of the exercise worker: one request at a time, a time limit
// that starts when Python begins the request (not while it boots), and Cancel.
// Stopping Python mid-loop is only possible by terminating its worker, so a
// timeout or a cancel terminates it and starts a fresh one at once; the page
// stays usable and the learner's code stays in the editor.
import { workerUrl } from "../py-locale.js";
import { _ } from "../i18n.js";

export class ExerciseRunner {
  constructor({ seconds = 10, onBoot = () => {} } = {}) {
    this.seconds = seconds;
    this.onBoot = onBoot;
    this.worker = null;
    this.current = null;
    this.nextId = 1;
    this.ready = false;
  }

  start() {
    if (this.worker) return;
    this.ready = false;
    this.worker = new Worker(workerUrl(new URL("./worker.js", import.meta.url)), { type: "module" });
    this.worker.onmessage = (event) => this.receive(event.data);
    this.worker.onerror = (event) => {
      event.preventDefault();
      this.finish({ ok: false, boot: true, message: event.message || _("the worker's script did not load") });
      this.stop();
    };
  }

  receive(data) {
    if (data.type === "csp-violation") {
      window.dispatchEvent(new CustomEvent("cannery:csp-violation", { detail: data }));
      return;
    }
    if (data.type === "progress") {
      if (data.stage === "ready") this.ready = true;
      this.onBoot(data.stage);
      return;
    }
    if (!this.current || data.id !== this.current.id) return;
    if (data.type === "started") {
      this.current.timer = setTimeout(() => this.abort("timeout"), this.seconds * 1000);
      return;
    }
    // Python did not start (a dropped download, say): drop this worker so the
    // next request boots a fresh one instead of waiting on a failed start.
    if (data.reply && data.reply.boot) this.stop();
    this.finish(data.reply);
  }

  finish(reply) {
    const entry = this.current;
    if (!entry) return;
    clearTimeout(entry.timer);
    this.current = null;
    entry.resolve(reply);
  }

  stop() {
    if (this.worker) this.worker.terminate();
    this.worker = null;
    this.ready = false;
  }

  /** Stop the running request ("timeout" or "cancelled"), and boot a fresh Python. */
  abort(why) {
    this.stop();
    this.finish({ ok: false, [why]: true });
    this.start();
  }

  cancel() {
    if (this.current) this.abort("cancelled");
  }

  get busy() {
    return this.current !== null;
  }

  /** Send {op, slug, step, source}; resolves with the worker's reply. */
  request(request) {
    if (this.current) return Promise.resolve({ ok: false, message: _("Busy: wait for the current run to end.") });
    this.start();
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.current = { id, resolve, timer: null };
      this.worker.postMessage({ id, request });
    });
  }
}
