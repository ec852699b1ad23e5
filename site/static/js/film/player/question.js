// The film's question: the panel that stops the film, the answer box read
// through the site's one number parser, Show me, Take the question later,
// and the answer remembered in this browser.
import { parseNumber } from "../../parse-number.js";
import { _, num } from "../../i18n.js";

// The answer box reads numbers through the site's one parser; a ratio may
// also carry its unit ("16.5x", "×16.5", "16.5 times", "16,5 vezes"), which is set aside first.
function readAnswer(text) {
  const bare = String(text)
    .trim()
    .replace(/^[x×]\s*/i, "")
    .replace(/\s*(x|×|times|vezes)$/i, "");
  return parseNumber(bare, { integer: false, fraction: true });
}

/** Which of the question's words a wrong guess gets (film.toml [question]):
 *  "close" for a whole number near the answer (d = 16 read as the answer, or
 *  the ratio rounded), "nearly" for any other guess near it, "inverted" for
 *  the ratio the other way round (fused ÷ plain), else the "hint". */
export function hintFor(q, value) {
  const off = Math.abs(value - q.answer);
  if (off <= q.near) return Number.isInteger(value) ? "close" : "nearly";
  if (value > 0 && Math.abs(1 / value - q.answer) <= q.near) return "inverted";
  return "hint";
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

/** The words the drawing shows beside the count for an answer record. */
function guessText(rec) {
  if (rec.how === "shown") return _("you chose Show me");
  if (rec.guess !== null && rec.guess !== undefined) return _("your guess: {guess}", { guess: num(rec.guess) });
  return _("your guess: not given");
}

/** The answer's lines of the transcript, hidden until the question is answered. */
function revealTranscript() {
  for (const li of document.querySelectorAll(".transcript-line.is-answer")) {
    li.querySelector(".t-text")?.removeAttribute("hidden");
    for (const n of li.querySelectorAll(".t-later, .t-reveal")) n.hidden = true;
  }
}

// Whatever opened the question (playing, the slider, a chapter, a
// transcript line, a key), the answer box gets the focus; its label is the
// question, so it is announced once, by focus. A click handler that runs
// after this (a transcript line) must not move focus away: see links.js.
function focusAnswer({ ui }) {
  ui.input.focus({ preventScroll: true });
  // Bring the whole question into view (its prompt sits above the input).
  const box = ui.panel.getBoundingClientRect();
  if (box.top < 0 || box.bottom > window.innerHeight) ui.panel.scrollIntoView({ block: "nearest" });
}

function openQuestion(p) {
  const { ui, st } = p;
  if (st.open) {
    focusAnswer(p);
    return;
  }
  st.open = true;
  ui.panel.hidden = false;
  ui.feedback.textContent = "";
  ui.feedback.className = "film-q-feedback";
  ui.rewatch.hidden = true;
  ui.input.value = "";
  focusAnswer(p);
}

function closeQuestion({ ui, st }) {
  st.open = false;
  ui.panel.hidden = true;
}

// the question counts as answered: the drawing names the guess, the transcript shows the answer
function applyRecord({ ui, st }, rec) {
  st.record = rec;
  st.answered = true;
  st.skipped = false;
  ui.later.hidden = true;
  if (st.scenes) st.scenes.setGuess(guessText(rec));
  st.described = null; // the answer's text alternative now names the guess
  revealTranscript();
}

function finish(p, how, guess, message) {
  const rec = { state: "answered", how, guess };
  remember(rec);
  applyRecord(p, rec);
  closeQuestion(p);
  // always on from the answer's caption, where the count and the guess are
  // drawn side by side (never back into the question's own caption)
  p.setTime(p.st.film.question.resume_s);
  p.say(message);
  p.ui.play.focus();
  p.play();
}

function wrong({ ui }, text) {
  ui.feedback.className = "film-q-feedback is-wrong";
  ui.feedback.textContent = text;
}

function check(p) {
  const { ui, st } = p;
  const q = st.film.question;
  const read = readAnswer(ui.input.value);
  if (!read.ok) {
    if (read.reason === "ambiguous" || read.reason === "zero-division") wrong(p, read.message);
    else if (read.reason === "empty") wrong(p, _("Type a number, or choose Show me."));
    else
      wrong(
        p,
        _("Type a number, such as {whole} or {decimal}, or choose Show me.", { whole: num(3), decimal: num(2.5, 1) }),
      );
    ui.input.focus();
    return;
  }
  const value = read.value;
  // right only within q.within of the answer (so 16.5, not 16 or 17); a near
  // miss or a likely slip is told what it may be (hintFor)
  if (Math.abs(value - q.answer) <= q.within) {
    finish(p, "right", value, q.right);
    return;
  }
  wrong(p, q[hintFor(q, value)]);
  ui.rewatch.hidden = false;
  ui.input.select();
}

// Show me reveals the answer: the drawing says so, not the last wrong guess
const showMe = (p) => finish(p, "shown", null, p.st.film.question.reveal);

// the panel's form and buttons
function wirePanel(p) {
  const { ui, st } = p;
  ui.form.addEventListener("submit", (e) => {
    e.preventDefault();
    check(p);
  });
  ui.show.addEventListener("click", p.showMe);
  ui.later.addEventListener("click", () => {
    p.load().then(() => {
      p.setTime(p.stop);
      p.pause();
      openQuestion(p);
    });
  });
  ui.forget.addEventListener("click", () => {
    forget();
    st.answered = false;
    st.record = null;
    if (st.scenes) st.scenes.setGuess(guessText({ how: null, guess: null }));
    ui.remembered.hidden = true;
    p.say(_("Your answer is forgotten: the film will ask its question again."));
  });
  ui.rewatch.addEventListener("click", () => {
    closeQuestion(p);
    p.setTime(st.film.question.rewatch_s);
    ui.play.focus();
    p.play();
  });
}

// an answer remembered from an earlier visit: the film will not stop for the question
function applyRemembered(p) {
  const remembered = recall();
  if (!remembered) return;
  applyRecord(p, remembered);
  p.ui.rememberedText.textContent =
    remembered.how !== "shown" && remembered.guess !== null && remembered.guess !== undefined
      ? _("You answered the film’s question before ({guess}), so it will not stop for it.", {
          guess: guessText(remembered),
        })
      : _("You saw the answer to the film’s question before, so it will not stop for it.");
  p.ui.remembered.hidden = false;
}

/** p.openQuestion(), p.closeQuestion(), p.showMe(), p.guessText(rec),
 *  p.revealTranscript(); the panel's form and buttons; a remembered answer applied. */
export function installQuestion(p) {
  p.guessText = guessText;
  p.revealTranscript = revealTranscript;
  p.openQuestion = () => openQuestion(p);
  p.closeQuestion = () => closeQuestion(p);
  p.showMe = () => showMe(p);
  wirePanel(p);
  applyRemembered(p);
}
