// Time when the Direction is Backward (filled in below).
import { showErrors } from "./form.js";

export async function doBackwardTime() {
  showErrors([{ field: "direction", message: "Time for the backward pass is not in this page yet." }]);
  return null;
}
