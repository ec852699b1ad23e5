// The walk's controls: Back, Step, Play/Pause and To end, and the keys (← →, Home,
// End, Space). Play takes at most about half a minute, however many steps the walk
// has, by taking several steps per tick when it must. Its ticks are timers, never an
// animation loop: the tween between two places is CSS's, and reduced motion drops it,
// so the picture then jumps from step to step.
import { _ } from "../../i18n.js";

const PLAY_MS = 30_000; // a whole walk, played
const TICK_MS = [150, 700]; // shortest and longest tick

export class Player {
  /**
   * root: the element holding the controls (#walk-view); steps: how many; show(done, playing):
   * draws the walk after `done` steps (playing: the live region stays quiet).
   */
  constructor(root, steps, show) {
    this.root = root;
    this.steps = steps;
    this.show = show;
    this.done = 0;
    this.timer = null;
    const ticks = Math.max(1, Math.min(steps, Math.floor(PLAY_MS / TICK_MS[0])));
    this.tickMs = Math.min(TICK_MS[1], Math.max(TICK_MS[0], PLAY_MS / ticks));
    this.stride = Math.ceil(steps / ticks);
    root.style.setProperty("--walk-tween", `${Math.round(this.tickMs * 0.8)}ms`);
    this.buttons = {
      back: root.querySelector("#walk-back"),
      step: root.querySelector("#walk-step"),
      play: root.querySelector("#walk-play"),
      end: root.querySelector("#walk-end"),
    };
    this.listeners = [
      [this.buttons.back, "click", () => this.go(this.done - 1)],
      [this.buttons.step, "click", () => this.go(this.done + 1)],
      [this.buttons.play, "click", () => (this.timer ? this.pause() : this.play())],
      [this.buttons.end, "click", () => this.go(this.steps)],
      [root, "keydown", (event) => this.key(event)],
    ];
    for (const [node, type, fn] of this.listeners) node.addEventListener(type, fn);
    this.go(0);
  }

  /** Remove the listeners and stop playing (a new walk replaces this one). */
  stop() {
    this.pause(false);
    for (const [node, type, fn] of this.listeners) node.removeEventListener(type, fn);
  }

  go(done, playing = false) {
    if (!playing) this.pause(false);
    this.done = Math.max(0, Math.min(this.steps, done));
    this.show(this.done, playing);
    this.buttons.back.setAttribute("aria-disabled", String(this.done === 0));
    this.buttons.step.setAttribute("aria-disabled", String(this.done === this.steps));
    this.buttons.end.setAttribute("aria-disabled", String(this.done === this.steps));
  }

  play() {
    if (this.done >= this.steps) this.go(0);
    this.buttons.play.textContent = _("Pause");
    const tick = () => {
      this.go(this.done + this.stride, true);
      if (this.done < this.steps) this.timer = setTimeout(tick, this.tickMs);
      else this.pause(); // at the end: read it out
    };
    this.timer = setTimeout(tick, 0);
  }

  /** Stop playing; `say`: read the step out (the live region was quiet while playing). */
  pause(say = true) {
    const was = this.timer !== null;
    clearTimeout(this.timer);
    this.timer = null;
    this.buttons.play.textContent = _("Play");
    if (was && say) this.show(this.done, false);
  }

  key(event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const onButton = event.target.tagName === "BUTTON";
    const moves = {
      ArrowRight: () => this.go(this.done + 1),
      ArrowLeft: () => this.go(this.done - 1),
      Home: () => this.go(0),
      End: () => this.go(this.steps),
    };
    if (event.key in moves) moves[event.key]();
    else if (event.key === " " && !onButton) this.timer ? this.pause() : this.play();
    else return;
    event.preventDefault();
  }
}
