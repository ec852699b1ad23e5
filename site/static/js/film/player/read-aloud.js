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

// A browser may offer speech and still have no voice that works (Debian's
// Chromium without a speech server: each utterance fails with
// "synthesis-failed"). Errors that only mean "stopped by us" are not failures.
const STOPPED = new Set(["interrupted", "canceled"]);

/** p.speak(cue), p.hush(); the Read aloud button (disabled where the browser has no speech).
 *  Read aloud trusts the voice only once an utterance has started (st.voiced):
 *  until then the captions still go to the screen readers' region, and an
 *  utterance that fails turns Read aloud off and says why. */
export function installReadAloud(p) {
  const { ui, st, speech } = p;
  if (!speech) {
    ui.read.disabled = true;
    ui.read.textContent = _("Read aloud (not available in this browser)");
  }

  const setRead = (on) => {
    st.read = on;
    ui.read.setAttribute("aria-pressed", String(on));
  };

  const cannotSpeak = (error) => {
    if (!st.read) return;
    setRead(false);
    st.voiced = false;
    st.spoken = null;
    p.say(
      _(
        "Read aloud cannot speak here: your browser has no working voice ({error}). The captions stay on screen and are announced to screen readers.",
        { error },
      ),
    );
    p.announce(st.cue); // the caption the voice did not read
  };

  const utter = (text) => {
    const u = new SpeechSynthesisUtterance(text);
    u.rate = st.rate;
    u.lang = lang;
    const voice = pickVoice(window.speechSynthesis.getVoices(), lang);
    if (voice) u.voice = voice;
    u.onstart = () => {
      if (!st.read || st.voiced) return;
      st.voiced = true;
      p.say(_("Read aloud is on: a synthetic voice from your browser reads each caption."));
    };
    u.onerror = (e) => {
      if (!STOPPED.has(e.error)) cannotSpeak(e.error || "error");
    };
    window.speechSynthesis.speak(u);
  };

  p.speak = (cue) => {
    if (!speech || st.spoken === cue.id) return;
    st.spoken = cue.id;
    window.speechSynthesis.cancel();
    utter(cue.text);
  };

  /** Stop speaking now; the next caption is spoken afresh. */
  p.hush = () => {
    if (speech) window.speechSynthesis.cancel();
    st.spoken = null;
  };

  ui.read.addEventListener("click", () => {
    if (!speech) return;
    setRead(!st.read);
    st.voiced = false;
    if (!st.read) {
      p.hush();
      p.say(_("Read aloud is off."));
      return;
    }
    // the voice says so itself; "on" is written only once it has been heard
    p.say(_("Read aloud: waiting for your browser's voice…"));
    window.speechSynthesis.cancel();
    utter(_("Read aloud is on."));
  });
}
