// Time and drawing: the clock that advances t while playing, seeking, and the
// one draw() that shows the frame, caption, text alternative and chapter of t.
// The film is a pure function of time: the frame at t is scenes.render(t).
import { _ } from "../../i18n.js";

/** m:ss of a time in seconds. */
export function clock(s) {
  const whole = Math.max(0, Math.floor(s + 1e-6));
  return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, "0")}`;
}

// reduced motion: one settled frame per caption, the frame just before the next caption starts
function stillTime(p, t) {
  const cues = p.st.film.cues;
  let i = cues.findIndex((c) => c.start_s > t);
  if (i === -1) return p.runtime;
  if (i === 0) i = 1;
  return Math.max(0, cues[i].start_s - 0.05);
}

// the chapter menu follows t (unless the learner is choosing in it)
function showChapter(p, t) {
  const { ui, st } = p;
  const chapters = st.film.chapters;
  let ch = 0;
  for (let i = 0; i < chapters.length; i += 1) if (chapters[i].start_s <= t + 1e-6) ch = i;
  if (ui.chapter.selectedIndex !== ch && document.activeElement !== ui.chapter) ui.chapter.selectedIndex = ch;
  if (st.chapter !== undefined && st.chapter !== ch) p.say(""); // old notes end with their chapter
  st.chapter = ch;
}

function draw(p) {
  const { ui, st, runtime } = p;
  const t = st.t;
  ui.seek.value = String(t);
  ui.seek.setAttribute("aria-valuetext", _("{now} of {total}", { now: clock(t), total: clock(runtime) }));
  ui.now.textContent = clock(t);
  if (!st.film) return;
  st.scenes.render(p.reduced.matches ? stillTime(p, t) : t);
  p.showCaption(p.cueAt(t));
  p.describeFrame(t);
  showChapter(p, t);
}

// one animation frame while playing: t advances by the time since the last one, at the chosen speed
function frame(p, now) {
  const { st, runtime, stop } = p;
  if (!st.playing) return;
  const dt = Math.min(0.25, Math.max(0, (now - st.last) / 1000));
  st.last = now;
  let t = st.t + dt * st.rate;
  if (!st.answered && st.t <= stop && t >= stop) {
    // never play past the question unanswered, at any speed
    p.setTime(stop);
    p.pause();
    p.openQuestion();
    return;
  }
  if (t >= runtime) {
    t = runtime;
    p.setTime(t);
    p.pause();
    p.say(_("The film has ended. Press Play to watch it again."));
    return;
  }
  p.setTime(t);
  st.raf = requestAnimationFrame(p.frame);
}

async function play(p) {
  const { root, ui, st, runtime, stop } = p;
  await p.load();
  if (!st.answered && st.open) {
    p.say(_("The film is waiting for your answer. Type a number, or choose Show me."));
    ui.input.focus();
    return;
  }
  if (st.t >= runtime) p.setTime(0);
  if (!st.answered && Math.abs(st.t - stop) < 1e-6) {
    p.openQuestion();
    return;
  }
  st.playing = true;
  ui.play.textContent = _("Pause");
  root.classList.add("is-playing");
  st.last = performance.now();
  cancelAnimationFrame(st.raf);
  st.raf = requestAnimationFrame(p.frame);
}

function pause(p) {
  const { root, ui, st } = p;
  st.playing = false;
  cancelAnimationFrame(st.raf);
  ui.play.textContent = _("Play");
  root.classList.remove("is-playing");
  p.hush();
}

async function seek(p, target) {
  const { ui, st, runtime, stop } = p;
  await p.load();
  let t = Math.min(runtime, Math.max(0, target));
  // the slider's steps (0.1 s) leave its far right, and End, a fraction short of the
  // runtime: within one step of the end is the end
  if (runtime - t < Number(ui.seek.step || 0)) t = runtime;
  const q = st.film.question;
  if (!st.answered && t >= stop && t < q.resume_s) {
    // landing on the question (its caption, or a step of the arrow keys): ask it
    p.setTime(stop);
    p.pause();
    p.openQuestion();
    return;
  }
  if (st.open) p.closeQuestion();
  const over = !st.answered && st.t < q.resume_s && t >= q.resume_s;
  p.setTime(t);
  if (over) p.skip();
}

// A jump (the slider, a chapter, a transcript line, a link) may pass the
// question: it is kept for later, and playing into it again still stops there.
function skip(p) {
  p.st.skipped = true;
  p.ui.later.hidden = false;
  p.say(
    _("You skipped the question at {clock}. It is kept for you: choose “Take the question” whenever you like.", {
      clock: clock(p.stop),
    }),
  );
}

/** p.draw(), p.setTime(t), p.play(), p.pause(), p.toggle(), p.seek(t), p.skip(). */
export function installTransport(p) {
  p.draw = () => draw(p);
  p.setTime = (t) => {
    p.st.t = Math.min(p.runtime, Math.max(0, t));
    draw(p);
  };
  p.frame = (now) => frame(p, now);
  p.play = () => play(p);
  p.pause = () => pause(p);
  p.toggle = () => (p.st.playing ? pause(p) : play(p));
  p.seek = (target) => seek(p, target);
  p.skip = () => skip(p);
}
