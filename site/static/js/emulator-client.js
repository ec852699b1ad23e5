// The lab's client of the page's Python worker (./worker.js, serving the
// emulator: lab_api.handle_json). request() resolves with the emulator's
// reply, {ok, op, result | errors: [{field, message}]}, or with a reply of that
// shape that says what went wrong. Cancel terminates the worker (the only way to
// stop Python mid-loop) and the next request starts a fresh one.
import { _ } from "./i18n.js";
import { PythonWorker, lastLines } from "./worker-client.js";

const failure = (message, extra = {}) => ({ ok: false, ...extra, errors: [{ field: "op", message }] });

/** The reply the lab shows for an outcome of PythonWorker.send (see worker-client.js). */
function labReply(outcome, op) {
  if (outcome.type === "reply") return outcome.reply;
  if (outcome.type === "failed" && outcome.boot)
    return failure(
      _("Python could not start in this page: {error}. Check the connection, then press the button again.", {
        error: lastLines(outcome.message, 3),
      }),
      { op },
    );
  if (outcome.type === "failed")
    return failure(_("The emulator stopped: {error}", { error: lastLines(outcome.message, 3) }), { op });
  if (outcome.type === "error")
    return failure(
      outcome.message
        ? _("The emulator's worker failed: {error}", { error: outcome.message })
        : _(
            "The emulator's worker could not start (its script did not load). Check the connection, then press the button again.",
          ),
    );
  if (outcome.why === "cancelled") return failure(_("Cancelled."), { cancelled: true });
  return failure(_("Python stopped; press the button again."));
}

export class EmulatorClient extends PythonWorker {
  /** onProgress({stage, percent}) while Python starts: stage in words, percent up to 100;
   *  onStop() when its worker is dropped. */
  constructor({ onProgress, onStop } = {}) {
    super("lab", { onProgress, onStop, freshAfterFailedBoot: true });
  }

  /** Ask the emulator: {op, params, ...extra} (lab_api/__init__.py names the ops). */
  async request(op, params, extra = {}) {
    return labReply(await this.send({ op, params, ...extra }), op);
  }

  /** Stop whatever Python is doing: every waiting request resolves as cancelled. */
  cancel() {
    this.stop({ type: "stopped", why: "cancelled" });
  }
}
