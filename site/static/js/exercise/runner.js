// The exercise pages' client of the page's Python worker (../worker.js, serving
// the checker: exercises.runner.handle_json): one request at a time, a time limit
// timed from the press (or, while Python first starts, from when it is ready), and Cancel.
// Stopping Python mid-loop is only possible by terminating its worker, so a
// timeout or a cancel terminates it and starts a fresh one at once; the page
// stays usable and the learner's code stays in the editor.
import { _ } from "../i18n.js";
import { PythonWorker, lastLines } from "../worker-client.js";

/** The reply the exercise page shows for an outcome of PythonWorker.send (see worker-client.js):
 *  {ok, result | message}, with boot, timeout or cancelled set when that is what happened. */
function exerciseReply(outcome) {
  if (outcome.type === "reply") return outcome.reply;
  if (outcome.type === "failed" && outcome.boot)
    return { ok: false, boot: true, message: lastLines(outcome.message, 2) };
  if (outcome.type === "failed" && outcome.fatal)
    return {
      ok: false,
      fatal: true,
      message: outcome.stack
        ? _(
            "Python ran out of stack: something is nested too deeply (a list inside a list thousands of times over, or a deep recursion). Python was restarted; your code is still here.",
          )
        : _("Python stopped working ({message}). Python was restarted; your code is still here.", {
            message: lastLines(outcome.message, 1),
          }),
    };
  if (outcome.type === "failed") return { ok: false, message: lastLines(outcome.message, 3) };
  if (outcome.type === "error")
    return { ok: false, boot: true, message: outcome.message || _("the worker's script did not load") };
  return { ok: false, [outcome.why]: true };
}

export class ExerciseRunner extends PythonWorker {
  /** seconds: the time limit of one request; onBoot(step) while Python starts ("python", "files", "ready"). */
  constructor({ seconds = 10, onBoot = () => {} } = {}) {
    super("exercises", {
      onProgress: ({ step }) => {
        if (step === "ready" && this.current && this.current.arm) this.current.arm();
        onBoot(step);
      },
    });
    this.seconds = seconds;
    this.current = null;
  }

  get busy() {
    return this.current !== null;
  }

  /** Send {op, slug, step, source}; resolves with the worker's reply. */
  async request(request) {
    if (this.current) return { ok: false, message: _("Busy: wait for the current run to end.") };
    const current = { timer: null, started: false };
    this.current = current;
    // The limit is timed from the press when Python is ready (a worker that stopped
    // answering, after the learner's js.close(), never says it began), else from the
    // moment Python is ready: a first start's seconds do not count against the code.
    const arm = () => {
      if (current.timer === null && this.current === current)
        current.timer = setTimeout(() => this.abort(current.started ? "timeout" : "unanswered"), this.seconds * 1000);
    };
    current.arm = arm;
    if (this.ready) arm();
    const onStarted = () => {
      current.started = true;
      arm();
    };
    const outcome = await this.send(request, { onStarted });
    clearTimeout(current.timer);
    if (this.current === current) this.current = null;
    // The learner's code replaced something Python shares (exercises.sandbox names it;
    // the checker put it back), or the request failed outside the checker's replies
    // (Python itself is broken): start a fresh Python, so the next request sees none of
    // it, even what the snapshot cannot see.
    const result = outcome.type === "reply" && outcome.reply && outcome.reply.result;
    if (result && Array.isArray(result.touched) && result.touched.length > 0) this.restart();
    else if (outcome.type === "failed" && !outcome.boot && !outcome.fatal) this.restart();
    return exerciseReply(outcome);
  }

  /** Stop the running request ("timeout" or "cancelled"), and boot a fresh Python. */
  abort(why) {
    this.restart({ type: "stopped", why });
  }

  cancel() {
    if (this.current) this.abort("cancelled");
  }
}
