// The one check of a worker reply ({ok, result} or {ok: false, errors, cancelled?}).

/**
 * The reply's result, or null after showing its errors through `showErrors`.
 * A cancelled reply shows nothing: the Cancel button has already said so.
 */
export function resultOf(reply, showErrors) {
  if (reply.ok) return reply.result;
  if (!reply.cancelled) showErrors(reply.errors);
  return null;
}
