// The page's one emulator client (Python in a worker), with the boot progress bar.
import { EmulatorClient } from "../emulator-client.js";
import { $ } from "./form.js";

const boot = $("boot");
const bootBar = $("boot-progress");
const bootLabel = $("boot-label");

export const client = new EmulatorClient({
  onProgress: ({ stage, percent }) => {
    bootLabel.textContent = stage;
    bootBar.value = percent;
    boot.hidden = percent >= 100;
  },
  // A dropped worker's start is over, whoever asked for it (Count, or the tiles' walk that
  // Count sets off beside it): its bar goes, so no stuck bar stays after a failed download.
  onStop: () => {
    boot.hidden = true;
  },
});

/** A failed start leaves no stuck progress bar. */
export function hideBootIfStopped() {
  if (!client.ready) boot.hidden = true;
}
