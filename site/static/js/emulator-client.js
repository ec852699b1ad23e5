// A small promise wrapper around the emulator's worker. Cancel terminates the
// worker (the only way to stop Python mid-loop) and the next request starts a
// fresh one.
import { _ } from "./i18n.js";
import { workerUrl } from "./py-locale.js";

export class EmulatorClient {
  constructor({ onProgress } = {}) {
    this.onProgress = onProgress || (() => {});
    this.worker = null;
    this.pending = new Map();
    this.nextId = 1;
    this.ready = false;
  }

  start() {
    if (this.worker) return;
    this.worker = new Worker(workerUrl(new URL("./emulator-worker.js", import.meta.url)), { type: "module" });
    this.worker.onmessage = (event) => {
      const data = event.data;
      if (data.type === "csp-violation") {
        console.error(`Content-Security-Policy violation in the emulator's worker: ${data.directive} ${data.blocked}`);
        if (typeof window !== "undefined")
          window.dispatchEvent(new CustomEvent("cannery:csp-violation", { detail: data }));
        return;
      }
      if (data.type === "progress") {
        if (data.percent >= 100) this.ready = true;
        this.onProgress(data);
        return;
      }
      const entry = this.pending.get(data.id);
      if (!entry) return;
      this.pending.delete(data.id);
      if (data.restart) this.restart();
      entry.resolve(data.reply);
    };
    this.worker.onerror = (event) => {
      event.preventDefault();
      this.failAll(
        event.message
          ? _("The emulator's worker failed: {error}", { error: event.message })
          : _(
              "The emulator's worker could not start (its script did not load). Check the connection, then press the button again.",
            ),
      );
      this.worker.terminate();
      this.worker = null;
      this.ready = false;
    };
  }

  failAll(message) {
    for (const [, entry] of this.pending) {
      entry.resolve({ ok: false, errors: [{ field: "op", message }] });
    }
    this.pending.clear();
  }

  request(op, params, extra = {}) {
    this.start();
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, { resolve });
      this.worker.postMessage({ id, request: { op, params, ...extra } });
    });
  }

  /** Drop this worker (its Python failed to start); the next request starts a fresh one. */
  restart() {
    if (this.worker) this.worker.terminate();
    this.worker = null;
    this.ready = false;
    this.failAll(_("Python stopped; press the button again."));
  }

  cancel() {
    if (this.worker) this.worker.terminate();
    this.worker = null;
    this.ready = false;
    for (const [, entry] of this.pending) {
      entry.resolve({ ok: false, cancelled: true, errors: [{ field: "op", message: _("Cancelled.") }] });
    }
    this.pending.clear();
  }
}
