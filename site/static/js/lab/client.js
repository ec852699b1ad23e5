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
});

/** A failed start leaves no stuck progress bar. */
export function hideBootIfStopped() {
  if (!client.ready) boot.hidden = true;
}
