// The film's player shell. Before Play it loads nothing: the poster and the
// controls are in the HTML. On the first Play (or seek) it fetches
// media/film.json, GSAP (vendor/gsap/gsap.min.js) and ./scenes.js, and attaches
// the captions and chapters tracks (./player/load.js).
//
// The film is a pure function of time: every frame is scenes.render(t), a
// seek of a paused GSAP timeline, so seeking to t shows the frame that
// playing to t shows. The clock (./player/transport.js) only advances t.
//
// One concern per module of ./player/, each adding its functions to the one
// player object p ({root, ui, st, runtime, stop, reduced, speech} and the
// functions the others call: p.load, p.draw, p.seek, p.play, p.openQuestion …).

import { installCaptions } from "./player/captions.js";
import { installControls } from "./player/controls.js";
import { installReveal, installTimeLinks, installTranscript } from "./player/links.js";
import { installLoading } from "./player/load.js";
import { installQuestion } from "./player/question.js";
import { installReadAloud, pickVoice } from "./player/read-aloud.js";
import { installTransport } from "./player/transport.js";

export { pickVoice };

/** The player's elements, by role. */
function elements(root) {
  const $ = (sel) => root.querySelector(sel);
  return {
    poster: $(".film-poster"),
    posterPlay: $(".film-poster-play"),
    host: $(".film-canvas-host"),
    video: $(".film-tracks"),
    caption: $(".film-caption"),
    sr: $(".film-sr-caption"),
    play: $(".film-play"),
    seek: $(".film-seek"),
    now: $(".film-now"),
    cc: $(".film-cc"),
    speed: $(".film-speed"),
    chapter: $(".film-chapter"),
    read: $(".film-read"),
    status: $(".film-status"),
    panel: $(".film-question"),
    form: $(".film-q-form"),
    input: $(".film-q-input"),
    show: $(".film-q-show"),
    feedback: $(".film-q-feedback"),
    rewatch: $(".film-q-rewatch"),
    later: $(".film-q-later"),
    remembered: $(".film-q-remembered"),
    forget: $(".film-q-forget"),
    rememberedText: $(".film-q-remembered-text"),
  };
}

/** The player's state: t in seconds, what is loaded, the question's state, the caption shown. */
function initialState() {
  return {
    t: 0,
    playing: false,
    rate: 1,
    captions: true,
    read: false,
    voiced: false, // an utterance has started since Read aloud was turned on
    film: null,
    scenes: null,
    loading: null,
    answered: false,
    open: false,
    skipped: false,
    record: null,
    tracksSettled: false,
    cue: null,
    announced: null,
    spoken: null,
    last: 0,
    raf: 0,
  };
}

// A small hook for tests and for the curious (read-only state, and the same
// seek the controls use).
function hook(p) {
  const { st } = p;
  return {
    get time() {
      return st.t;
    },
    get playing() {
      return st.playing;
    },
    get loaded() {
      return Boolean(st.film) && st.tracksSettled;
    },
    get questionOpen() {
      return st.open;
    },
    get answered() {
      return st.answered;
    },
    get skipped() {
      return st.skipped;
    },
    get cue() {
      return st.cue ? st.cue.id : null;
    },
    load: p.load,
    seek: p.seek,
    play: p.play,
    pause: p.pause,
    frame: () => (st.scenes ? st.scenes.svg.outerHTML : ""),
  };
}

function setup(root) {
  const p = {
    root,
    ui: elements(root),
    st: initialState(),
    runtime: Number(root.dataset.runtime),
    stop: Number(root.dataset.questionStop),
    reduced: window.matchMedia("(prefers-reduced-motion: reduce)"),
    speech: "speechSynthesis" in window && typeof window.SpeechSynthesisUtterance === "function",
  };
  installReadAloud(p);
  installCaptions(p);
  installLoading(p);
  installTransport(p);
  installQuestion(p);
  installControls(p);
  installTranscript(p);
  installTimeLinks(p);
  installReveal(p);
  window.canneryFilm = hook(p);
}

const root = document.getElementById("film-player");
if (root) setup(root);
