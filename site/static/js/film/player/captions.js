// The caption under the drawing, the screen readers' caption region, the
// transcript's current line, the drawing's text alternative, and the status line.
import { _ } from "../../i18n.js";

/** p.say(text), p.cueAt(t), p.announce(cue), p.showCaption(cue), p.describeFrame(t). */
export function installCaptions(p) {
  const { ui, st } = p;

  p.say = (text) => {
    ui.status.textContent = text;
  };

  p.cueAt = (t) => {
    if (!st.film) return null;
    const cues = st.film.cues;
    for (let i = 0; i < cues.length; i += 1) {
      if (cues[i].start_s <= t && t < cues[i].end_s) return cues[i];
    }
    return null;
  };

  // Screen readers hear each caption once, through one polite region; not
  // while a voice that has been heard to speak reads it aloud. The question's
  // caption is not sent there: the question panel takes focus and its label says it.
  p.announce = (cue) => {
    if (!cue || !st.captions || (st.read && st.voiced)) return;
    if (cue.id === st.film.question.cue || st.announced === cue.id) return;
    st.announced = cue.id;
    ui.sr.textContent = cue.text;
  };

  p.showCaption = (cue) => {
    if (cue === st.cue) return;
    st.cue = cue;

    ui.caption.replaceChildren();
    if (cue) {
      const span = document.createElement("span");
      span.textContent = cue.text;
      span.dataset.cue = cue.id;
      ui.caption.append(span);
      p.announce(cue);
      if (st.read && st.playing) p.speak(cue);
    }
    for (const li of document.querySelectorAll(".transcript-line.is-current")) li.classList.remove("is-current");
    if (cue) document.getElementById(`line-${cue.id}`)?.classList.add("is-current");
  };

  // the drawing's text alternative names what the frame of the caption at t
  // (or, between captions, the one just before) shows: a function of t alone
  p.describeFrame = (t) => {
    const cues = st.film.cues;
    let lc = cues[0];
    for (const c of cues) if (c.start_s <= t + 1e-6) lc = c;
    if (st.described !== lc.id) {
      st.described = lc.id;
      st.scenes.svg.setAttribute("aria-label", _("Drawing: {what}", { what: st.scenes.describe(lc.id) }));
    }
  };

  p.toggleCaptions = () => {
    st.captions = !st.captions;
    ui.cc.setAttribute("aria-pressed", String(st.captions));
    ui.caption.classList.toggle("is-off", !st.captions);
  };
}
