// Ways into the film from outside the player: transcript lines, which seek it,
// and links to a moment of it (#t=3:31).

/** After a jump from outside the player: the answer box keeps the focus if the
 *  question opened, else Play takes it. */
function focusAfterJump(p) {
  if (p.st.open) p.ui.input.focus({ preventScroll: true });
  else p.ui.play.focus({ preventScroll: true });
}

/** Transcript lines seek the film (and bring it into view, ready to play). */
export function installTranscript(p) {
  document.addEventListener("click", (e) => {
    const btn = e.target.closest?.(".transcript-seek");
    if (!btn) return;
    p.seek(Number(btn.dataset.start) + 0.001).then(() => {
      p.root.scrollIntoView({ block: "nearest" });
      // if the seek stopped at the question, its answer box keeps the focus
      focusAfterJump(p);
    });
  });
}

/** The answer's transcript lines, revealed on demand. */
export function installReveal(p) {
  document.addEventListener("click", (e) => {
    const btn = e.target.closest?.(".t-reveal");
    if (btn) p.revealTranscript();
  });
}

// A link to a moment of the film: #t=3:31 (or #t=211). It moves the film
// there, paused, past the question if need be (which then counts as skipped).
function fromHash(p) {
  const m = /^#t=(?:(\d{1,2}):)?(\d{1,4}(?:\.\d+)?)$/.exec(window.location.hash);
  if (!m) return;
  const t = (m[1] ? Number(m[1]) * 60 : 0) + Number(m[2]);
  p.root.scrollIntoView({ block: "start" });
  p.seek(t).then(() => focusAfterJump(p));
}

/** Follow #t= now and whenever the fragment changes. */
export function installTimeLinks(p) {
  window.addEventListener("hashchange", () => fromHash(p));
  fromHash(p);
}
