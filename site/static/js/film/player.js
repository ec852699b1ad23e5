// The film's player shell. Before Play it loads nothing: the poster and the
// controls are in the HTML. On the first Play (or seek) it fetches
// media/film.json, GSAP (vendor/gsap/gsap.min.js) and ./scenes.js, and attaches
// the captions and chapters tracks.
//
// The film is a pure function of time: every frame is scenes.render(t), a
// seek of a paused GSAP timeline, so seeking to t shows the frame that
// playing to t shows. The clock here only advances t.

import { parseNumber } from "../parse-number.js";
import { _, lang, num } from "../i18n.js";

function clock(s) {
  const whole = Math.max(0, Math.floor(s + 1e-6));
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}`;
}

// The answer box reads numbers through the site's one parser; a ratio may
// also carry its unit ("16.5x", "×16.5", "16.5 times", "16,5 vezes"), which is set aside first.
function readAnswer(text) {
  const bare = String(text)
    .trim()
    .replace(/^[x×]\s*/i, "")
    .replace(/\s*(x|×|times|vezes)$/i, "");
  return parseNumber(bare, { integer: false });
}

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

// An answered question is remembered in this browser only (localStorage);
// the version in the key changes whenever the question does.
const STORE_KEY = "cannery.film.question.v1";
function recall() {
  try {
    const v = JSON.parse(window.localStorage.getItem(STORE_KEY) || "null");
    return v && v.state === "answered" ? v : null;
  } catch {
    return null;
  }
}
function remember(v) {
  try {
    window.localStorage.setItem(STORE_KEY, JSON.stringify(v));
  } catch {
    /* private mode: not remembered */
  }
}
function forget() {
  try {
    window.localStorage.removeItem(STORE_KEY);
  } catch {
    /* nothing stored */
  }
}

function setup(root) {
  const $ = (sel) => root.querySelector(sel);
  const ui = {
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
  const runtime = Number(root.dataset.runtime);
  const stop = Number(root.dataset.questionStop);
  const reduced = window.matchMedia("(prefers-reduced-motion: reduce)");
  const speech = "speechSynthesis" in window && typeof window.SpeechSynthesisUtterance === "function";
  const st = {
    t: 0,
    playing: false,
    rate: 1,
    captions: true,
    read: false,
    film: null,
    scenes: null,
    loading: null,
    answered: false,
    open: false,
    skipped: false,
    record: null,
    lastGuess: null,
    tracksSettled: false,
    cue: null,
    announced: null,
    spoken: null,
    last: 0,
    raf: 0,
  };

  if (!speech) {
    ui.read.disabled = true;
    ui.read.textContent = _("Read aloud (not available in this browser)");
  }

  // ---------- loading (first Play only) ----------
  function loadScript(url) {
    return new Promise((resolve, reject) => {
      if (window.gsap) {
        resolve();
        return;
      }
      const s = document.createElement("script");
      s.src = url;
      s.onload = () => resolve();
      s.onerror = () => reject(new Error(`could not load ${url}`));
      document.head.append(s);
    });
  }

  function attachTracks() {
    // Setting a track's mode only schedules its fetch: the request starts in a
    // later task. The returned promise settles once each track has fired load
    // or error, so "loaded" (below) means every file of the first Play arrived.
    const add = (kind, src, label, srclang, isDefault) => {
      const tr = document.createElement("track");
      tr.kind = kind;
      tr.src = new URL(src, document.baseURI).href;
      tr.srclang = srclang;
      tr.label = label;
      tr.default = Boolean(isDefault);
      const settled = new Promise((resolve) => {
        tr.addEventListener("load", () => resolve(true), { once: true });
        tr.addEventListener("error", () => resolve(false), { once: true });
      });
      ui.video.append(tr);
      tr.track.mode = "hidden"; // load the cues; the player draws captions itself
      return settled;
    };
    // one captions track per language, each labelled in its own language: the
    // page's first and default, then the chapters (in the page's language),
    // then the other languages' captions
    let tracks = [];
    try {
      tracks = JSON.parse(root.dataset.tracks || "[]");
    } catch {
      tracks = [];
    }
    if (!tracks.length) tracks = [{ src: null, srclang: lang, label: lang, default: true }];
    const captions = (t) =>
      add("captions", t.src ? root.dataset.media + t.src : root.dataset.captions, t.label, t.srclang, t.default);
    const [own, ...others] = tracks;
    return Promise.all([
      captions(own),
      add("chapters", root.dataset.chapters, root.dataset.chaptersLabel || _("Chapters"), lang, true),
      ...others.map(captions),
    ]);
  }

  function load() {
    if (!st.loading) {
      st.loading = (async () => {
        const base = document.baseURI;
        const [film, mod] = await Promise.all([
          fetch(new URL(root.dataset.film, base)).then((r) => {
            if (!r.ok) throw new Error(`media/film.json: HTTP ${r.status}`);
            return r.json();
          }),
          import("./scenes.js"),
          // GSAP sits at the site's root, whichever language's folder the page is in
          loadScript(new URL("../../../vendor/gsap/gsap.min.js", import.meta.url).href),
        ]);
        st.film = film;
        // the film plays at once; the tracks (for the browser's own caption
        // and chapter lists) finish loading alongside
        attachTracks().then(() => {
          st.tracksSettled = true;
        });
        st.scenes = mod.createFilm(ui.host, film, window.gsap);
        if (st.record) st.scenes.setGuess(guessText(st.record));
        ui.poster.hidden = true;
        ui.host.hidden = false;
        root.classList.add("is-loaded");
        draw();
      })().catch((err) => {
        st.loading = null;
        say(
          _("The film could not load: {error}. Reload the page to try again; the transcript below has every line.", {
            error: err.message,
          }),
        );
        throw err;
      });
    }
    return st.loading;
  }

  // ---------- time and drawing ----------
  function cueAt(t) {
    if (!st.film) return null;
    const cues = st.film.cues;
    for (let i = 0; i < cues.length; i += 1) {
      if (cues[i].start_s <= t && t < cues[i].end_s) return cues[i];
    }
    return null;
  }

  function stillTime(t) {
    // reduced motion: one settled frame per caption, the frame just before the next caption starts
    const cues = st.film.cues;
    let i = cues.findIndex((c) => c.start_s > t);
    if (i === -1) return runtime;
    if (i === 0) i = 1;
    return Math.max(0, cues[i].start_s - 0.05);
  }

  function say(text) {
    ui.status.textContent = text;
  }

  function showCaption(cue) {
    if (cue === st.cue) return;
    st.cue = cue;

    ui.caption.replaceChildren();
    if (cue) {
      const span = document.createElement("span");
      span.textContent = cue.text;
      span.dataset.cue = cue.id;
      ui.caption.append(span);
      // Screen readers hear each caption once, through one polite region. The
      // question's caption is not sent there: the question panel takes focus
      // and its label says it.
      if (st.captions && !st.read && cue.id !== st.film.question.cue && st.announced !== cue.id) {
        st.announced = cue.id;
        ui.sr.textContent = cue.text;
      }
      if (st.read && st.playing) speak(cue);
    }
    for (const li of document.querySelectorAll(".transcript-line.is-current")) li.classList.remove("is-current");
    if (cue) document.getElementById(`line-${cue.id}`)?.classList.add("is-current");
  }

  function speak(cue) {
    if (!speech || st.spoken === cue.id) return;
    st.spoken = cue.id;
    window.speechSynthesis.cancel();
    const u = new SpeechSynthesisUtterance(cue.text);
    u.rate = st.rate;
    u.lang = lang;
    const voice = pickVoice(window.speechSynthesis.getVoices(), lang);
    if (voice) u.voice = voice;
    window.speechSynthesis.speak(u);
  }

  function draw() {
    const t = st.t;
    ui.seek.value = String(t);
    ui.seek.setAttribute("aria-valuetext", _("{now} of {total}", { now: clock(t), total: clock(runtime) }));
    ui.now.textContent = clock(t);
    if (!st.film) return;
    st.scenes.render(reduced.matches ? stillTime(t) : t);
    showCaption(cueAt(t));
    // the drawing's text alternative names what the frame of the caption at t
    // (or, between captions, the one just before) shows: a function of t alone
    const cues = st.film.cues;
    let lc = cues[0];
    for (const c of cues) if (c.start_s <= t + 1e-6) lc = c;
    if (st.described !== lc.id) {
      st.described = lc.id;
      st.scenes.svg.setAttribute("aria-label", _("Drawing: {what}", { what: st.scenes.describe(lc.id) }));
    }
    const chapters = st.film.chapters;
    let ch = 0;
    for (let i = 0; i < chapters.length; i += 1) if (chapters[i].start_s <= t + 1e-6) ch = i;
    if (ui.chapter.selectedIndex !== ch && document.activeElement !== ui.chapter) ui.chapter.selectedIndex = ch;
    if (st.chapter !== undefined && st.chapter !== ch) say(""); // old notes end with their chapter
    st.chapter = ch;
  }

  function setTime(t) {
    st.t = Math.min(runtime, Math.max(0, t));
    draw();
  }

  function frame(now) {
    if (!st.playing) return;
    const dt = Math.min(0.25, Math.max(0, (now - st.last) / 1000));
    st.last = now;
    let t = st.t + dt * st.rate;
    if (!st.answered && st.t <= stop && t >= stop) {
      // never play past the question unanswered, at any speed
      setTime(stop);
      pause();
      openQuestion();
      return;
    }
    if (t >= runtime) {
      t = runtime;
      setTime(t);
      pause();
      say(_("The film has ended. Press Play to watch it again."));
      return;
    }
    setTime(t);
    st.raf = requestAnimationFrame(frame);
  }

  async function play() {
    await load();
    if (!st.answered && st.open) {
      say(_("The film is waiting for your answer. Type a number, or choose Show me."));
      ui.input.focus();
      return;
    }
    if (st.t >= runtime) setTime(0);
    if (!st.answered && Math.abs(st.t - stop) < 1e-6) {
      openQuestion();
      return;
    }
    st.playing = true;
    ui.play.textContent = _("Pause");
    root.classList.add("is-playing");
    st.last = performance.now();
    cancelAnimationFrame(st.raf);
    st.raf = requestAnimationFrame(frame);
  }

  function pause() {
    st.playing = false;
    cancelAnimationFrame(st.raf);
    ui.play.textContent = _("Play");
    root.classList.remove("is-playing");
    if (speech) window.speechSynthesis.cancel();
    st.spoken = null;
  }

  function toggle() {
    if (st.playing) pause();
    else play();
  }

  async function seek(target) {
    await load();
    let t = Math.min(runtime, Math.max(0, target));
    // the slider's steps (0.1 s) leave its far right, and End, a fraction short of the
    // runtime: within one step of the end is the end
    if (runtime - t < Number(ui.seek.step || 0)) t = runtime;
    const q = st.film.question;
    if (!st.answered && t >= stop && t < q.resume_s) {
      // landing on the question (its caption, or a step of the arrow keys): ask it
      setTime(stop);
      pause();
      openQuestion();
      return;
    }
    if (st.open) closeQuestion();
    const over = !st.answered && st.t < q.resume_s && t >= q.resume_s;
    setTime(t);
    if (over) skip();
  }

  // A jump (the slider, a chapter, a transcript line, a link) may pass the
  // question: it is kept for later, and playing into it again still stops there.
  function skip() {
    st.skipped = true;
    ui.later.hidden = false;
    say(
      _("You skipped the question at {clock}. It is kept for you: choose “Take the question” whenever you like.", {
        clock: clock(stop),
      }),
    );
  }

  // ---------- the question ----------
  function openQuestion() {
    if (st.open) {
      focusAnswer();
      return;
    }
    st.open = true;
    ui.panel.hidden = false;
    ui.feedback.textContent = "";
    ui.feedback.className = "film-q-feedback";
    ui.rewatch.hidden = true;
    ui.input.value = "";
    focusAnswer();
  }

  function focusAnswer() {
    // Whatever opened the question (playing, the slider, a chapter, a
    // transcript line, a key), the answer box gets the focus; its label is the
    // question, so it is announced once, by focus. A click handler that runs
    // after this (a transcript line) must not move focus away: see below.
    ui.input.focus({ preventScroll: true });
    // Bring the whole question into view (its prompt sits above the input).
    const box = ui.panel.getBoundingClientRect();
    if (box.top < 0 || box.bottom > window.innerHeight) ui.panel.scrollIntoView({ block: "nearest" });
  }

  function closeQuestion() {
    st.open = false;
    ui.panel.hidden = true;
  }

  function guessText(rec) {
    if (rec.guess !== null && rec.guess !== undefined) return _("your guess: {guess}", { guess: num(rec.guess) });
    return rec.how === "shown" ? _("you chose Show me") : _("your guess: not given");
  }

  function revealTranscript() {
    for (const li of document.querySelectorAll(".transcript-line.is-answer")) {
      li.querySelector(".t-text")?.removeAttribute("hidden");
      for (const n of li.querySelectorAll(".t-later, .t-reveal")) n.hidden = true;
    }
  }

  function applyRecord(rec) {
    st.record = rec;
    st.answered = true;
    st.skipped = false;
    ui.later.hidden = true;
    if (st.scenes) st.scenes.setGuess(guessText(rec));
    st.described = null; // the answer's text alternative now names the guess
    revealTranscript();
  }

  function finish(how, guess, message) {
    const rec = { state: "answered", how, guess };
    remember(rec);
    applyRecord(rec);
    closeQuestion();
    // always on from the answer's caption, where the count and the guess are
    // drawn side by side (never back into the question's own caption)
    setTime(st.film.question.resume_s);
    say(message);
    ui.play.focus();
    play();
  }

  function check() {
    const q = st.film.question;
    const read = readAnswer(ui.input.value);
    if (!read.ok) {
      ui.feedback.className = "film-q-feedback is-wrong";
      if (read.reason === "ambiguous") ui.feedback.textContent = read.message;
      else if (read.reason === "empty") ui.feedback.textContent = _("Type a number, or choose Show me.");
      else
        ui.feedback.textContent = _("Type a number, such as {whole} or {decimal}, or choose Show me.", {
          whole: num(3),
          decimal: num(2.5, 1),
        });
      ui.input.focus();
      return;
    }
    const value = read.value;
    st.lastGuess = value;
    if (Math.abs(value - q.answer) <= q.tolerance * q.answer) {
      finish("right", value, q.right);
      return;
    }
    ui.feedback.className = "film-q-feedback is-wrong";
    ui.feedback.textContent = q.hint;
    ui.rewatch.hidden = false;
    ui.input.select();
  }

  function showMe() {
    finish("shown", st.lastGuess, st.film.question.reveal);
  }

  function takeLater() {
    load().then(() => {
      setTime(stop);
      pause();
      openQuestion();
    });
  }

  ui.form.addEventListener("submit", (e) => {
    e.preventDefault();
    check();
  });
  ui.show.addEventListener("click", showMe);
  ui.later.addEventListener("click", takeLater);
  ui.forget.addEventListener("click", () => {
    forget();
    st.answered = false;
    st.record = null;
    if (st.scenes) st.scenes.setGuess(guessText({ how: null, guess: null }));
    ui.remembered.hidden = true;
    say(_("Your answer is forgotten: the film will ask its question again."));
  });
  ui.rewatch.addEventListener("click", () => {
    closeQuestion();
    setTime(st.film.question.rewatch_s);
    ui.play.focus();
    play();
  });

  // ---------- controls ----------
  ui.play.addEventListener("click", toggle);
  // the poster and its own button play the film (then focus moves to the
  // controls' Play, as the poster's button goes away)
  const playFromPoster = () => {
    play().then(() => ui.play.focus({ preventScroll: true }));
  };
  ui.poster.addEventListener("click", playFromPoster);
  ui.posterPlay.addEventListener("click", playFromPoster);
  ui.seek.addEventListener("input", () => seek(Number(ui.seek.value)));
  ui.chapter.addEventListener("change", () => seek(Number(ui.chapter.value)));
  ui.speed.addEventListener("change", () => {
    st.rate = Number(ui.speed.value);
  });
  function toggleCaptions() {
    st.captions = !st.captions;
    ui.cc.setAttribute("aria-pressed", String(st.captions));
    ui.caption.classList.toggle("is-off", !st.captions);
  }
  ui.cc.addEventListener("click", toggleCaptions);
  ui.read.addEventListener("click", () => {
    if (!speech) return;
    st.read = !st.read;
    ui.read.setAttribute("aria-pressed", String(st.read));
    if (!st.read) {
      window.speechSynthesis.cancel();
      st.spoken = null;
    }
    say(
      st.read
        ? _("Read aloud is on: a synthetic voice from your browser reads each caption.")
        : _("Read aloud is off."),
    );
  });

  root.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    if (st.open && e.key === "Escape") {
      e.preventDefault();
      showMe();
      return;
    }
    const tgt = e.target;
    if (ui.panel.contains(tgt) || tgt.tagName === "SELECT" || (tgt.tagName === "INPUT" && tgt.type !== "range")) return;
    switch (e.key) {
      case " ":
        if (tgt.tagName === "BUTTON") return; // the button's own action
        e.preventDefault();
        toggle();
        break;
      case "k":
      case "K":
        e.preventDefault();
        toggle();
        break;
      case "ArrowLeft":
        e.preventDefault();
        seek(st.t - 5);
        break;
      case "ArrowRight":
        e.preventDefault();
        seek(st.t + 5);
        break;
      case "c":
      case "C":
        e.preventDefault();
        toggleCaptions();
        break;
      default:
    }
  });

  // transcript lines seek the film (and bring it into view, ready to play)
  document.addEventListener("click", (e) => {
    const btn = e.target.closest?.(".transcript-seek");
    if (!btn) return;
    seek(Number(btn.dataset.start) + 0.001).then(() => {
      root.scrollIntoView({ block: "nearest" });
      // if the seek stopped at the question, its answer box keeps the focus
      if (st.open) ui.input.focus({ preventScroll: true });
      else ui.play.focus({ preventScroll: true });
    });
  });

  reduced.addEventListener?.("change", () => draw());

  const remembered = recall();
  if (remembered) {
    applyRecord(remembered);
    ui.rememberedText.textContent =
      remembered.guess !== null && remembered.guess !== undefined
        ? _("You answered the film’s question before ({guess}), so it will not stop for it.", {
            guess: guessText(remembered),
          })
        : _("You saw the answer to the film’s question before, so it will not stop for it.");
    ui.remembered.hidden = false;
  }

  // A link to a moment of the film: #t=3:31 (or #t=211). It moves the film
  // there, paused, past the question if need be (which then counts as skipped).
  function fromHash() {
    const m = /^#t=(?:(\d{1,2}):)?(\d{1,4}(?:\.\d+)?)$/.exec(window.location.hash);
    if (!m) return;
    const t = (m[1] ? Number(m[1]) * 60 : 0) + Number(m[2]);
    root.scrollIntoView({ block: "start" });
    seek(t).then(() => {
      if (st.open) ui.input.focus({ preventScroll: true });
      else ui.play.focus({ preventScroll: true });
    });
  }
  window.addEventListener("hashchange", fromHash);
  fromHash();

  document.addEventListener("click", (e) => {
    const btn = e.target.closest?.(".t-reveal");
    if (btn) revealTranscript();
  });

  // A small hook for tests and for the curious (read-only state, and the same
  // seek the controls use).
  window.canneryFilm = {
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
    load,
    seek,
    play,
    pause,
    frame: () => (st.scenes ? st.scenes.svg.outerHTML : ""),
  };
}

const root = document.getElementById("film-player");
if (root) setup(root);
