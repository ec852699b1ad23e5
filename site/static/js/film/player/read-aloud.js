// Read aloud: the browser's speech synthesis reads each caption as it starts.
import { _, lang } from "../../i18n.js";

// Read aloud speaks in the page's language: a voice whose lang is the page's
// ("pt-BR"), else one of the same language ("pt-PT", "pt"), else none (the
// browser's default; utterance.lang still names the page's language).
export function pickVoice(voices, tag) {
  const norm = (x) =>
    String(x || "")
      .replace("_", "-")
      .toLowerCase();
  const want = norm(tag);
  const base = want.split("-")[0];
  return voices.find((v) => norm(v.lang) === want) || voices.find((v) => norm(v.lang).split("-")[0] === base) || null;
}

/** p.speak(cue), p.hush(); the Read aloud button (disabled where the browser has no speech). */
export function installReadAloud(p) {
  const { ui, st, speech } = p;
  if (!speech) {
    ui.read.disabled = true;
    ui.read.textContent = _("Read aloud (not available in this browser)");
  }

  p.speak = (cue) => {
    if (!speech || st.spoken === cue.id) return;
    st.spoken = cue.id;
    window.speechSynthesis.cancel();
    const u = new SpeechSynthesisUtterance(cue.text);
    u.rate = st.rate;
    u.lang = lang;
    const voice = pickVoice(window.speechSynthesis.getVoices(), lang);
    if (voice) u.voice = voice;
    window.speechSynthesis.speak(u);
  };

  /** Stop speaking now; the next caption is spoken afresh. */
  p.hush = () => {
    if (speech) window.speechSynthesis.cancel();
    st.spoken = null;
  };

  ui.read.addEventListener("click", () => {
    if (!speech) return;
    st.read = !st.read;
    ui.read.setAttribute("aria-pressed", String(st.read));
    if (!st.read) p.hush();
    p.say(
      st.read
        ? _("Read aloud is on: a synthetic voice from your browser reads each caption.")
        : _("Read aloud is off."),
    );
  });
}
