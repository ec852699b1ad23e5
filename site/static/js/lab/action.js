// The start and the cancel that Count and Check share, forward and backward:
// read the form, answer a plainly bad value without Python, say what Python is
// about to do, and after a Cancel, say that earlier results are kept.
import { _ } from "../i18n.js";
import { client } from "./client.js";
import { buttons, clearErrors, readForm, setBusy, showErrors, status } from "./form.js";

/**
 * Clear the old errors and read the form; a plainly bad value needs no Python, so
 * quick(p) -> [{field, message}] is shown at once, even before Python has started.
 * Returns the form's params, or null after those messages.
 */
export function readChecked(quick) {
  clearErrors();
  const p = readForm();
  const errors = quick(p);
  if (errors.length) {
    showErrors(errors);
    return null;
  }
  return p;
}

/** Mark the lab busy with `what` ("count", "check"), saying `doing`, or `starting`
 *  while Python has not started yet. */
export function busyWith(what, doing, starting) {
  setBusy(true, what);
  status.textContent = client.ready ? doing : starting;
}

/** After stop() has dropped the check's workers: free the lab and say so; Check takes the focus. */
export function checkCancelled(stop) {
  stop();
  setBusy(false);
  status.textContent = _("Check cancelled. Earlier results are kept.");
  buttons.check.focus();
}
