// The exercise pages' client of the page's Python worker (../worker.js, serving
// the checker: exercises.runner.handle_json): one request at a time, a time limit
// that starts when Python begins the request (not while it boots), and Cancel.
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
    super("exercises", { onProgress: ({ step }) => onBoot(step) });
    this.seconds = seconds;
    this.current = null;
  }

  get busy() {
    return this.current !== null;
  }

  /** Send {op, slug, step, source}; resolves with the worker's reply. */
  async request(request) {
    if (this.current) return { ok: false, message: _("Busy: wait for the current run to end.") };
    const current = { timer: null };
    this.current = current;
    const onStarted = () => {
      current.timer = setTimeout(() => this.abort("timeout"), this.seconds * 1000);
    };
    const outcome = await this.send(request, { onStarted });
    clearTimeout(current.timer);
    if (this.current === current) this.current = null;
    // The learner's code replaced something Python shares (exercises.sandbox names it;
    // the checker put it back): start a fresh Python anyway, so the next request
    // sees none of it, even what the snapshot cannot see.
    const result = outcome.type === "reply" && outcome.reply && outcome.reply.result;
    if (result && Array.isArray(result.touched) && result.touched.length > 0) this.restart();
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
