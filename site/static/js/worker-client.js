// The page's side of ./worker.js, the one Python worker: start it, send it
// requests, stop it and start a fresh one. The lab's EmulatorClient
// (./emulator-client.js) and the exercises' ExerciseRunner (./exercise/runner.js)
// build on it, each turning an outcome into the replies its page shows.
//
// Stopping Python mid-loop is only possible by terminating its worker, so stop()
// terminates it and the next send() (or start()) boots a fresh one: a client can
// always drop a worker whose Python went wrong and carry on with a clean one.
import { workerUrl } from "./py-locale.js";

/** The last n lines of an error message, joined by spaces (a traceback's tail names the error). */
export function lastLines(text, n) {
  return String(text).split("\n").slice(-n).join(" ");
}

export class PythonWorker {
  /**
   * serve: what the worker loads, "lab" or "exercises" (SERVES in ./worker.js).
   * onProgress({step, stage, percent}) while Python starts ("python", "files", "ready").
   * freshAfterFailedBoot: when Python fails to start while no request waits, drop that
   *   worker at once, so the next request boots a fresh one; otherwise the next request
   *   is told of the failure (and then the worker is dropped).
   * onStop() whenever a worker is dropped (a failed start, a cancel, a restart).
   */
  constructor(serve, { onProgress = () => {}, onStop = () => {}, freshAfterFailedBoot = false } = {}) {
    this.serve = serve;
    this.onProgress = onProgress;
    this.onStop = onStop;
    this.freshAfterFailedBoot = freshAfterFailedBoot;
    this.worker = null; // the Worker now, or null
    this.port = null; // the page's end of the Worker's channel, or null
    this.pending = new Map(); // id -> {resolve, onStarted}
    this.nextId = 1;
    this.ready = false; // Python has started in the current worker
  }

  /** Start a worker (and its Python) unless one is running. */
  start() {
    if (this.worker) return;
    this.ready = false;
    const url = workerUrl(new URL("./worker.js", import.meta.url));
    url.searchParams.set("serve", this.serve);
    const worker = new Worker(url, { type: "module" });
    // Replies come only through this channel's port, handed to the worker first: a
    // message the worker's Python posts with js.postMessage reaches worker.onmessage,
    // which reads nothing (see ./worker.js).
    const channel = new MessageChannel();
    channel.port1.onmessage = (event) => this.receive(worker, event.data);
    worker.onmessage = () => {};
    worker.onerror = (event) => {
      event.preventDefault();
      if (worker === this.worker) this.stop({ type: "error", message: event.message || "" });
    };
    worker.postMessage({ type: "port", port: channel.port2 }, [channel.port2]);
    this.worker = worker;
    this.port = channel.port1;
  }

  receive(worker, data) {
    if (worker !== this.worker) return; // a message from a worker already dropped
    if (data.type === "csp-violation") {
      console.error(`Content-Security-Policy violation in the page's Python worker: ${data.directive} ${data.blocked}`);
      window.dispatchEvent(new CustomEvent("cannery:csp-violation", { detail: data }));
      return;
    }
    if (data.type === "progress") {
      if (data.step !== "failed") {
        if (data.step === "ready") this.ready = true;
        this.onProgress(data);
      } else if (this.freshAfterFailedBoot && this.pending.size === 0) this.stop();
      return;
    }
    const entry = this.pending.get(data.id);
    if (!entry) return;
    if (data.type === "started") {
      entry.onStarted();
      return;
    }
    this.pending.delete(data.id);
    entry.resolve(data.error ? { type: "failed", ...data.error } : { type: "reply", reply: data.reply });
    // Python did not start (a dropped download, say): drop this worker, so the
    // next request starts clean instead of waiting on a failed start.
    if (data.error && data.error.boot) this.stop({ type: "stopped", why: "boot" });
    // Python died mid-request (it ran out of stack, say): a fresh one, booting now.
    else if (data.error && data.error.fatal) this.restart({ type: "stopped", why: "fatal" });
  }

  /**
   * Send one request (the JSON the served module's handle_json reads), starting a
   * worker if none runs. onStarted() is called when Python begins it. Resolves with
   * its outcome: {type: "reply", reply}; {type: "failed", boot, fatal, stack, message}
   * (Python could not start, or the request failed outside the module's replies;
   * fatal: Python died, and a fresh worker is already booting; stack: of a stack overflow);
   * {type: "error", message} (the worker itself failed; message "" if its script
   * did not load); or {type: "stopped", why} (stop() ended it: why "boot" when
   * another request found Python could not start, or the caller's own reason).
   */
  send(request, { onStarted = () => {} } = {}) {
    this.start();
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, { resolve, onStarted });
      this.port.postMessage({ id, request });
    });
  }

  /** Terminate the worker now; every request still waiting resolves with outcome.
   *  The next send() starts a fresh worker. */
  stop(outcome = { type: "stopped", why: "stopped" }) {
    if (this.worker) this.worker.terminate();
    if (this.port) this.port.close();
    this.worker = null;
    this.port = null;
    this.ready = false;
    this.onStop();
    const waiting = [...this.pending.values()];
    this.pending.clear();
    for (const entry of waiting) entry.resolve(outcome);
  }

  /** stop(outcome), then start a fresh worker at once, so its Python boots meanwhile. */
  restart(outcome) {
    this.stop(outcome);
    this.start();
  }
}
