// The player's controls: Play and the poster, the slider, the chapter menu,
// speed, captions on or off, and the keyboard (Space or K, arrows, C, Escape).

/** Wire the controls and the keys to p.play, p.seek and the rest. */
export function installControls(p) {
  const { root, ui, st } = p;
  ui.play.addEventListener("click", p.toggle);
  // the poster and its own button play the film (then focus moves to the
  // controls' Play, as the poster's button goes away)
  const playFromPoster = () => {
    p.play().then(() => ui.play.focus({ preventScroll: true }));
  };
  ui.poster.addEventListener("click", playFromPoster);
  ui.posterPlay.addEventListener("click", playFromPoster);
  ui.seek.addEventListener("input", () => p.seek(Number(ui.seek.value)));
  ui.chapter.addEventListener("change", () => p.seek(Number(ui.chapter.value)));
  ui.speed.addEventListener("change", () => {
    st.rate = Number(ui.speed.value);
  });
  ui.cc.addEventListener("click", p.toggleCaptions);
  root.addEventListener("keydown", (e) => onKey(p, e));
  p.reduced.addEventListener?.("change", () => p.draw());
}

const KEYS = {
  " ": (p) => p.toggle(),
  k: (p) => p.toggle(),
  K: (p) => p.toggle(),
  ArrowLeft: (p) => p.seek(p.st.t - 5),
  ArrowRight: (p) => p.seek(p.st.t + 5),
  c: (p) => p.toggleCaptions(),
  C: (p) => p.toggleCaptions(),
};

function onKey(p, e) {
  if (e.altKey || e.ctrlKey || e.metaKey) return;
  if (p.st.open && e.key === "Escape") {
    e.preventDefault();
    p.showMe();
    return;
  }
  const tgt = e.target;
  if (p.ui.panel.contains(tgt) || tgt.tagName === "SELECT" || (tgt.tagName === "INPUT" && tgt.type !== "range")) return;
  const action = Object.hasOwn(KEYS, e.key) ? KEYS[e.key] : null;
  if (!action) return;
  if (e.key === " " && tgt.tagName === "BUTTON") return; // the button's own action
  e.preventDefault();
  action(p);
}
