"""The film's player in Chromium: loading, captions, seeking, the question,
keyboard use, screen-reader regions, reduced motion and screenshots.

Tests drive the player through its controls (and, to avoid waiting minutes,
through window.canneryFilm.seek, the same seek the slider and chapter menu
use). Screenshots go to test-artifacts/film/.
"""
from __future__ import annotations

import json
import math
import time

import pytest
from playwright.sync_api import expect as see

import i18n

pytestmark = pytest.mark.browser

HEAVY = ("media/", "scenes.js", "vendor/gsap", "vendor/pyodide", ".wasm", "py/bundle.json")


@pytest.fixture(scope="module")
def film_data(built_site) -> dict:
    return json.loads((built_site / "media" / "film.json").read_text(encoding="utf-8"))


def cue(film_data, cid):
    return next(c for c in film_data["cues"] if c["id"] == cid)


def open_film(page, url, play=False):
    page.goto(url)
    page.wait_for_function("() => window.canneryFilm !== undefined")
    if play:
        page.click(".film-play")
    else:
        page.evaluate("window.canneryFilm.load()")
    page.wait_for_function("() => window.canneryFilm.loaded")
    if not play:
        page.evaluate("window.canneryFilm.pause()")


def seek(page, t):
    page.evaluate(f"window.canneryFilm.seek({t})")


def state(page) -> dict:
    return page.evaluate("""() => { const f = window.canneryFilm; return {
        time: f.time, playing: f.playing, open: f.questionOpen, answered: f.answered, skipped: f.skipped,
        cue: f.cue }; }""")


def visible_svg_text(page) -> str:
    """Text of the SVG labels that are drawn right now (not hidden by their scene or by a fade)."""
    return page.evaluate("""() => {
      const out = [];
      for (const t of document.querySelectorAll('.film-canvas-host svg text')) {
        let n = t, shown = true;
        while (n && n.tagName !== 'svg') {
          const cs = getComputedStyle(n);
          if (cs.visibility === 'hidden' || cs.display === 'none' || Number(cs.opacity) < 0.5) { shown = false; break; }
          n = n.parentNode;
        }
        if (shown) out.push(t.textContent);
      }
      return out.join(' | ');
    }""")


# ---------- loading ----------

def test_nothing_of_the_film_loads_before_play_and_the_runtime_is_shown(page, server_url, film_data):
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(server_url)
    page.wait_for_load_state("networkidle")
    time.sleep(0.5)
    before = [r[len(server_url):] for r in requests if r.startswith(server_url)]
    assert all(r.startswith(server_url) for r in requests), "a request left the origin"
    assert not [r for r in before if any(h in r for h in HEAVY)], before
    assert "static/js/film/player.js" in before
    assert page.locator(".film-poster").is_visible()
    runtime = film_data["runtime_s"]
    assert page.locator(".film-runtime").inner_text() == f"{int(runtime) // 60}:{int(runtime) % 60:02d}"
    assert page.locator(".film-total").inner_text() == page.locator(".film-runtime").inner_text()
    page.click(".film-play")
    # "loaded" means every file of the first Play has arrived, the tracks
    # included (their fetch starts a task after the track's mode is set): the
    # page's captions, its chapters, and every other language's captions
    page.wait_for_function("() => window.canneryFilm.loaded")
    tracks = page.evaluate("""() => [...document.querySelector('.film-tracks').textTracks]
        .map(t => t.cues ? t.cues.length : 0)""")
    assert len(tracks) == 1 + len(i18n.languages()) and min(tracks) > 0, tracks
    after = [r[len(server_url):] for r in requests]
    for needed in ("media/film.json", "static/js/film/scenes.js", "vendor/gsap/gsap.min.js",
                   "media/captions.vtt", "media/chapters.vtt"):
        assert needed in after
    assert not [r for r in after if "pyodide" in r]
    assert page.console_errors == []


def test_chromiums_parsed_cues_equal_the_transcript_lines(page, server_url):
    open_film(page, server_url)
    page.wait_for_function("""() => { const t = document.querySelector('.film-tracks').textTracks;
        return t.length >= 2 && t[0].cues && t[0].cues.length > 0 && t[1].cues && t[1].cues.length > 0; }""")
    cues = page.evaluate("""() => [...document.querySelector('.film-tracks').textTracks[0].cues]
        .map(c => ({ id: c.id, start: c.startTime, end: c.endTime, text: c.text }))""")
    lines = page.evaluate("""() => [...document.querySelectorAll('.transcript-line')].map(li => ({
        id: li.dataset.cue, start: Number(li.querySelector('.transcript-seek').dataset.start),
        text: li.querySelector('.t-text').textContent }))""")
    assert len(cues) == len(lines) >= 40
    for c, line in zip(cues, lines, strict=True):
        assert c["id"] == line["id"]
        assert c["start"] == pytest.approx(line["start"], abs=1e-3)
        assert c["text"] == line["text"]
    chapters = page.evaluate("""() => [...document.querySelector('.film-tracks').textTracks[1].cues]
        .map(c => c.text)""")
    menu = page.evaluate("""() => [...document.querySelectorAll('.film-chapter option')].map(o => o.textContent)""")
    assert len(chapters) == len(menu) == 10
    assert all(m.endswith(c) for m, c in zip(menu, chapters, strict=True))


def test_the_film_works_under_a_subpath(page, subpath_url):
    open_film(page, subpath_url, play=True)
    page.wait_for_function("() => window.canneryFilm.time > 0.2")
    assert page.console_errors == []


# ---------- playing, captions and seeking ----------

def test_play_starts_the_film_and_the_first_caption_appears(page, server_url, film_data):
    first = film_data["cues"][0]
    open_film(page, server_url, play=True)
    assert page.locator(".film-play").inner_text() == "Pause"
    page.wait_for_function(f"() => window.canneryFilm.time > {first['start_s'] + 0.1}", timeout=8000)
    page.wait_for_function("() => document.querySelector('.film-caption span') !== null")
    assert page.locator(".film-caption").inner_text() == first["text"]
    assert state(page)["playing"]
    assert page.locator(".film-now").inner_text() != "0:00"
    assert page.console_errors == []


@pytest.mark.parametrize("cid", ["size", "tile2", "recipe", "edge"])
def test_transcript_line_seeks_the_film_to_its_cue(page, server_url, film_data, cid):
    open_film(page, server_url)
    if cid == "edge":  # past the question: answer it first
        seek(page, film_data["question"]["stop_s"])
        page.keyboard.press("Escape")
        page.evaluate("window.canneryFilm.pause()")
    page.click(f"#line-{cid} .transcript-seek")
    page.wait_for_function(f"() => window.canneryFilm.cue === '{cid}'")
    c = cue(film_data, cid)
    assert state(page)["time"] == pytest.approx(c["start_s"], abs=0.01)
    assert page.locator(".film-caption").inner_text() == c["text"]
    assert page.evaluate("document.activeElement.classList.contains('film-play')")
    assert page.locator(f"#line-{cid}").get_attribute("class").split().count("is-current") == 1


def test_seeking_to_t_draws_the_same_frame_as_playing_to_t(page, server_url, film_data):
    open_film(page, server_url)
    seek(page, 104.0)
    page.select_option(".film-speed", "1.5")
    page.click(".film-play")
    time.sleep(2.0)
    page.click(".film-play")  # pause
    t = state(page)["time"]
    assert 105.0 < t < 110.0
    played = page.evaluate("window.canneryFilm.frame()")
    seek(page, 20.0)
    assert page.evaluate("window.canneryFilm.frame()") != played
    seek(page, t)
    assert page.evaluate("window.canneryFilm.frame()") == played
    # between two captions too (the text alternative once kept whichever caption came last)
    a, b = cue(film_data, "rescale"), cue(film_data, "byhand")
    gap = (a["end_s"] + b["start_s"]) / 2
    seek(page, a["start_s"] + 0.5)
    seek(page, gap)
    from_before = page.evaluate("window.canneryFilm.frame()")
    seek(page, 20.0)
    seek(page, gap)
    assert page.evaluate("window.canneryFilm.frame()") == from_before


# ---------- the question ----------

def test_question_stops_playback_at_1_5x_within_a_quarter_second_and_takes_focus(page, server_url, film_data):
    q = film_data["question"]
    open_film(page, server_url)
    seek(page, q["stop_s"] - 1.5)
    page.select_option(".film-speed", "1.5")
    page.click(".film-play")
    page.wait_for_function("() => window.canneryFilm.questionOpen", timeout=5000)
    s = state(page)
    assert abs(s["time"] - q["stop_s"]) <= 0.25
    assert abs(s["time"] - cue(film_data, "question")["start_s"]) <= 0.25
    assert not s["playing"]
    assert page.evaluate("document.activeElement.id") == "film-q-input"
    assert page.locator(".film-q-prompt").inner_text() == q["prompt"]
    # it never advances on its own, and Play does not skip it
    time.sleep(1.0)
    page.click(".film-play")
    time.sleep(0.5)
    s2 = state(page)
    assert s2["time"] == s["time"] and not s2["playing"] and s2["open"]
    assert page.evaluate("document.activeElement.id") == "film-q-input"


def test_right_answer_confirms_and_the_film_goes_on_from_the_answer(page, server_url, film_data):
    q = film_data["question"]
    open_film(page, server_url)
    seek(page, q["stop_s"] + 1.0)  # onto the question's caption: it is asked
    assert state(page)["open"]
    page.fill("#film-q-input", f"{q['answer'] + 0.08:.2f}")  # to one decimal: 16.6
    page.keyboard.press("Enter")
    page.wait_for_function("() => window.canneryFilm.playing")
    s = state(page)
    assert s["answered"] and not s["open"]
    assert page.locator(".film-status").inner_text() == q["right"]
    assert s["cue"] == q["answer_cue"] and s["time"] >= q["resume_s"]


def test_wrong_answer_gives_a_hint_and_offers_to_rewatch_the_count(page, server_url, film_data):
    q = film_data["question"]
    open_film(page, server_url)
    seek(page, q["stop_s"])
    page.fill("#film-q-input", f"{q['answer'] + q['near'] + 0.5:.2f}")  # far off, not a near miss
    page.keyboard.press("Enter")
    assert page.locator(".film-q-feedback").inner_text() == q["hint"]
    assert page.locator(".film-q-rewatch").is_visible()
    inner = page.locator(".film-question").evaluate("p => [p.scrollHeight, p.clientHeight]")
    assert inner[0] <= inner[1] + 1, "the hint and Rewatch fit the panel without a scroll area"
    s = state(page)
    assert s["open"] and not s["playing"] and not s["answered"]
    page.fill("#film-q-input", "sixteen")
    page.keyboard.press("Enter")
    assert "Type a number" in page.locator(".film-q-feedback").inner_text()
    page.click(".film-q-rewatch")
    s = state(page)
    assert s["time"] == pytest.approx(q["rewatch_s"], abs=0.5) and s["playing"] and not s["open"]
    assert page.locator(".film-chapter option:checked").inner_text().endswith("The count")
    # coming back round, it stops at the question again
    page.evaluate("window.canneryFilm.pause()")
    seek(page, q["stop_s"] - 0.3)
    page.click(".film-play")
    page.wait_for_function("() => window.canneryFilm.questionOpen", timeout=4000)


def test_escape_is_show_me_it_reveals_the_answer_and_resumes(page, server_url, film_data):
    q = film_data["question"]
    open_film(page, server_url)
    seek(page, q["stop_s"])
    page.keyboard.press("Escape")
    page.wait_for_function("() => window.canneryFilm.playing")
    assert page.locator(".film-status").inner_text() == q["reveal"]
    assert state(page)["answered"]
    assert page.evaluate("document.activeElement.classList.contains('film-play')")


def test_tab_can_leave_the_question_without_answering_it(page, server_url, film_data):
    open_film(page, server_url)
    seek(page, film_data["question"]["stop_s"])
    for _ in range(6):
        page.keyboard.press("Tab")
    inside = page.evaluate("document.querySelector('.film-question').contains(document.activeElement)")
    assert not inside
    assert state(page)["open"] and not state(page)["answered"]


def test_keyboard_only_play_seek_answer_and_resume(page, server_url, film_data):
    q = film_data["question"]
    page.goto(server_url)
    page.wait_for_function("() => window.canneryFilm !== undefined")
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.classList.contains('film-play')"):
            break
    else:
        pytest.fail("Tab never reached the Play button")
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none", "focus is not visible on Play"
    page.keyboard.press("Space")
    page.wait_for_function("() => window.canneryFilm.playing && window.canneryFilm.time > 0.2")
    page.keyboard.press("k")
    assert not state(page)["playing"]
    t0 = state(page)["time"]
    page.keyboard.press("ArrowRight")
    page.wait_for_function(f"() => window.canneryFilm.time > {t0 + 4.9}")
    assert state(page)["time"] == pytest.approx(t0 + 5, abs=0.01)
    page.keyboard.press("ArrowLeft")
    assert state(page)["time"] == pytest.approx(t0, abs=0.01)
    page.keyboard.press("c")
    assert page.locator(".film-cc").get_attribute("aria-pressed") == "false"
    page.keyboard.press("c")
    assert page.locator(".film-cc").get_attribute("aria-pressed") == "true"
    # seek forward by keys until the question stops the film
    for _ in range(int(q["stop_s"] / 5) + 2):
        page.keyboard.press("ArrowRight")
        if state(page)["open"]:
            break
    assert state(page)["open"] and state(page)["time"] == pytest.approx(q["stop_s"], abs=1e-6)
    page.keyboard.type(f"{q['answer']:.1f}")
    page.keyboard.press("Enter")
    page.wait_for_function("() => window.canneryFilm.playing")
    assert page.evaluate("document.activeElement.classList.contains('film-play')")
    page.keyboard.press("Space")
    assert not state(page)["playing"]
    page.keyboard.press("Space")
    assert state(page)["playing"]


def test_slider_end_goes_past_the_question_and_keeps_it_for_later(page, server_url, film_data):
    open_film(page, server_url)
    page.focus(".film-seek")
    page.keyboard.press("End")
    page.wait_for_function("() => window.canneryFilm.skipped")
    s = state(page)
    assert not s["open"] and not s["answered"]
    assert s["time"] == pytest.approx(film_data["runtime_s"])
    assert page.locator(".film-q-later").is_visible()
    assert "skipped the question" in page.locator(".film-status").inner_text()


def test_chapter_menu_past_the_question_skips_it_and_it_can_be_taken_later(page, server_url, film_data):
    q = film_data["question"]
    open_film(page, server_url)
    page.select_option(".film-chapter", index=8)
    page.wait_for_function("() => window.canneryFilm.skipped")
    s = state(page)
    assert not s["open"] and s["time"] == pytest.approx(film_data["chapters"][8]["start_s"])
    page.click(".film-q-later")
    page.wait_for_function("() => window.canneryFilm.questionOpen")
    assert state(page)["time"] == pytest.approx(q["stop_s"])
    assert page.evaluate("document.activeElement.id") == "film-q-input"
    page.keyboard.type(f"{q['answer']:.1f}")
    page.keyboard.press("Enter")
    page.wait_for_function("() => window.canneryFilm.answered")
    s = state(page)
    # a right answer goes on from the answer, not back into the question's caption
    assert s["cue"] == q["answer_cue"] and not s["skipped"]
    assert page.locator(".film-q-later").is_hidden()


def test_playing_into_a_skipped_question_still_stops_there(page, server_url, film_data):
    q = film_data["question"]
    open_film(page, server_url)
    page.select_option(".film-chapter", index=8)
    page.wait_for_function("() => window.canneryFilm.skipped")
    seek(page, q["stop_s"] - 0.4)
    page.click(".film-play")
    page.wait_for_function("() => window.canneryFilm.questionOpen", timeout=4000)


def test_a_link_to_a_moment_past_the_question_goes_there_and_skips_it(page, server_url, film_data):
    later = film_data["chapters"][7]
    clock = f"{int(later['start_s']) // 60}:{int(later['start_s']) % 60:02d}"
    page.goto(server_url + f"#t={clock}")
    page.wait_for_function("() => window.canneryFilm !== undefined && window.canneryFilm.loaded")
    page.wait_for_function("() => window.canneryFilm.skipped")
    s = state(page)
    assert s["time"] == pytest.approx(int(later["start_s"]), abs=0.01) and not s["open"] and not s["playing"]
    # the lab leaves the film's link alone (it neither reads it nor says so)
    assert "from your link" not in page.locator("#lab-status").inner_text()


# ---------- answers as people type them, and what is remembered ----------

@pytest.mark.parametrize("typed", ["16.5", "16,5", "16.52", "16.4", " 16.5 ", "16.5x", "×16.5", "16.5 times"])
def test_the_answer_box_takes_numbers_as_people_type_them(page, server_url, film_data, typed):
    q = film_data["question"]
    open_film(page, server_url)
    seek(page, q["stop_s"])
    page.fill("#film-q-input", typed)
    page.keyboard.press("Enter")
    page.wait_for_function("() => window.canneryFilm.answered")
    assert page.locator(".film-status").inner_text() == q["right"]


@pytest.mark.parametrize("typed", ["16", "17", "17x"])
def test_a_near_miss_is_not_right_and_is_told_what_it_may_have_misread(page, server_url, film_data, typed):
    q = film_data["question"]
    open_film(page, server_url)
    seek(page, q["stop_s"])
    page.fill("#film-q-input", typed)
    page.keyboard.press("Enter")
    feedback = page.locator(".film-q-feedback")
    assert feedback.inner_text() == q["close"]
    assert "misread" in q["close"]
    assert page.locator(".film-q-rewatch").is_visible()
    s = state(page)
    assert s["open"] and not s["answered"]


@pytest.mark.parametrize("typed, key", [
    ("16.3", "nearly"), ("16.7", "nearly"), ("15.6", "nearly"),  # near, not whole: d was not misread
    ("0.06", "inverted"), ("0.0605", "inverted"), ("17301504/285736960", "inverted"),  # fused ÷ plain
    ("5", "hint"), ("0.5", "hint"), ("-16.5", "hint"),
])
def test_each_wrong_guess_gets_the_words_that_fit_it(page, server_url, film_data, typed, key):
    q = film_data["question"]
    assert len({q["close"], q["nearly"], q["inverted"], q["hint"]}) == 4
    open_film(page, server_url)
    seek(page, q["stop_s"])
    page.fill("#film-q-input", typed)
    page.keyboard.press("Enter")
    assert page.locator(".film-q-feedback").inner_text() == q[key]
    assert page.locator(".film-q-rewatch").is_visible()
    assert state(page)["open"] and not state(page)["answered"]


@pytest.mark.parametrize("typed", ["272.5/16.5", "272.5 / 16.5", "285,736,960 ÷ 17,301,504"])
def test_the_answer_box_takes_the_division_the_learner_did(page, server_url, film_data, typed):
    q = film_data["question"]
    open_film(page, server_url)
    seek(page, q["stop_s"])
    page.fill("#film-q-input", typed)
    page.keyboard.press("Enter")
    page.wait_for_function("() => window.canneryFilm.answered")
    assert page.locator(".film-status").inner_text() == q["right"]


def test_show_me_after_a_wrong_guess_says_show_me_not_the_guess(page, server_url, film_data):
    q = film_data["question"]
    open_film(page, server_url)
    seek(page, q["stop_s"])
    page.fill("#film-q-input", "5")
    page.keyboard.press("Enter")
    assert page.locator(".film-q-feedback").inner_text() == q["hint"]
    page.click(".film-q-show")
    page.wait_for_function("() => window.canneryFilm.answered")
    page.evaluate("window.canneryFilm.pause()")
    seek(page, cue(film_data, q["answer_cue"])["end_s"] - 0.2)
    drawn = visible_svg_text(page)
    assert "you chose Show me" in drawn and "your guess" not in drawn
    page.reload()
    page.wait_for_function("() => window.canneryFilm !== undefined")
    assert "saw the answer" in page.locator(".film-q-remembered").inner_text()


@pytest.mark.parametrize("typed, says", [
    ("1/0", "divides by zero"),
    ("16.5/", "Type a number"),
    ("1,650", "could be 1.65 or 1650"),
    ("sixteen", "Type a number"),
    ("", "Type a number"),
    ("1.2.3", "Type a number"),
])
def test_the_answer_box_asks_back_what_it_cannot_read(page, server_url, film_data, typed, says):
    q = film_data["question"]
    open_film(page, server_url)
    seek(page, q["stop_s"])
    page.fill("#film-q-input", typed)
    page.keyboard.press("Enter")
    assert says in page.locator(".film-q-feedback").inner_text()
    s = state(page)
    assert s["open"] and not s["answered"]
    assert page.locator(".film-q-rewatch").is_hidden()  # not a wrong answer: a question back


def test_an_answered_question_is_remembered_on_reload_and_can_be_asked_again(page, server_url, film_data):
    q = film_data["question"]
    open_film(page, server_url)
    seek(page, q["stop_s"])
    page.fill("#film-q-input", "16.4")
    page.keyboard.press("Enter")
    page.wait_for_function("() => window.canneryFilm.answered")
    page.evaluate("window.canneryFilm.pause()")
    seek(page, cue(film_data, q["answer_cue"])["end_s"] - 0.2)
    assert "your guess: 16.4" in visible_svg_text(page)
    page.reload()
    page.wait_for_function("() => window.canneryFilm !== undefined")
    assert page.evaluate("window.canneryFilm.answered")
    assert "your guess: 16.4" in page.locator(".film-q-remembered").inner_text()
    assert page.locator(f"#line-{q['answer_cue']} .t-text").is_visible()
    page.evaluate("window.canneryFilm.load()")
    page.wait_for_function("() => window.canneryFilm.loaded")
    seek(page, q["stop_s"] - 0.3)
    page.click(".film-play")
    page.wait_for_function(f"() => window.canneryFilm.time > {q['stop_s'] + 0.3}", timeout=4000)
    assert not state(page)["open"]
    page.click(".film-play")
    page.click(".film-q-forget")
    assert not page.evaluate("window.canneryFilm.answered")
    page.reload()
    page.wait_for_function("() => window.canneryFilm !== undefined")
    assert not page.evaluate("window.canneryFilm.answered")
    key = page.evaluate("Object.keys(localStorage)")
    assert key == [], key


# ---------- screen readers ----------

def test_caption_region_is_polite_never_assertive_and_reads_each_caption_once(page, server_url, film_data):
    q = film_data["question"]
    open_film(page, server_url)
    assert page.locator(".film-sr-caption").get_attribute("aria-live") == "polite"
    assert page.locator(".film-caption").get_attribute("aria-hidden") == "true"
    assert page.locator("#film [aria-live=assertive], #film [role=alert]").count() == 0
    page.evaluate("""() => { window.__said = []; const r = document.querySelector('.film-sr-caption');
        new MutationObserver(() => window.__said.push(r.textContent))
          .observe(r, { childList: true, characterData: true, subtree: true }); }""")
    c = cue(film_data, "d16")
    seek(page, c["start_s"] + 0.1)
    seek(page, c["start_s"] + 0.5)   # same cue: not read again
    seek(page, c["start_s"] + 0.9)
    page.keyboard.press("c")
    page.keyboard.press("c")          # captions off and on: not read again
    seek(page, q["stop_s"])           # the question: announced by focus, not by the caption region
    said = page.evaluate("window.__said")
    assert said.count(c["text"]) == 1
    assert cue(film_data, "question")["text"] not in said
    assert page.evaluate("document.activeElement.id") == "film-q-input"
    label = page.evaluate("document.getElementById('film-q-input').labels[0].textContent")
    assert label == q["prompt"]


def test_read_aloud_is_off_by_default_and_says_it_is_a_synthetic_voice(page, server_url):
    page.goto(server_url)
    btn = page.locator(".film-read")
    assert btn.get_attribute("aria-pressed") == "false" or btn.is_disabled()
    assert "synthetic voice" in page.locator("#film-read-note").inner_text()


# A stand-in for the browser's speech synthesis: every utterance either starts
# (a voice that works) or fails as Debian's Chromium with no voices does.
FAKE_SPEECH = """(() => {
  const mode = %r;
  window.__spoken = [];
  const fake = {
    speaking: false, pending: false, paused: false, onvoiceschanged: null,
    getVoices: () => [], cancel() {}, pause() {}, resume() {},
    addEventListener() {}, removeEventListener() {},
    speak(u) {
      window.__spoken.push(u.text);
      setTimeout(() => {
        const e = new Event(mode === 'fail' ? 'error' : 'start');
        if (mode === 'fail') e.error = 'synthesis-failed';
        u.dispatchEvent(e);
      }, 0);
    },
  };
  Object.defineProperty(window, 'speechSynthesis', { value: fake, configurable: true });
})();"""


@pytest.fixture
def speech_page(browser, server_url, request):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.add_init_script(FAKE_SPEECH % request.param)
    page = ctx.new_page()
    open_film(page, server_url)
    yield page
    ctx.close()


@pytest.mark.parametrize("speech_page", ["speak"], indirect=True)
def test_read_aloud_says_it_is_on_once_the_voice_speaks_and_keeps_the_caption_region_quiet(
        speech_page, film_data):
    page = speech_page
    btn = page.locator(".film-read")
    btn.click()
    assert btn.get_attribute("aria-pressed") == "true"
    see(page.locator(".film-status")).to_contain_text("synthetic voice")
    before = page.locator(".film-sr-caption").inner_text()
    seek(page, cue(film_data, "tile1")["start_s"] + 0.1)
    assert page.locator(".film-sr-caption").inner_text() == before  # the voice reads it, not the screen reader too
    btn.click()
    assert btn.get_attribute("aria-pressed") == "false"
    assert page.locator(".film-status").inner_text() == "Read aloud is off."


@pytest.mark.parametrize("speech_page", ["fail"], indirect=True)
def test_read_aloud_with_no_working_voice_says_so_and_the_captions_stay_announced(speech_page, film_data):
    """Debian's Chromium has speechSynthesis but no voice: each utterance fails
    with synthesis-failed. The page must not claim Read aloud is on, and the
    screen readers' caption region goes on carrying every caption."""
    page = speech_page
    btn = page.locator(".film-read")
    c = cue(film_data, "tile1")
    seek(page, c["start_s"] + 0.1)
    btn.click()
    status = page.locator(".film-status")
    see(status).to_contain_text("synthesis-failed")
    assert "cannot speak" in status.inner_text() and "is on" not in status.inner_text()
    assert btn.get_attribute("aria-pressed") == "false"
    assert page.locator(".film-sr-caption").inner_text() == c["text"]
    nxt = film_data["cues"][film_data["cues"].index(c) + 1]
    seek(page, nxt["start_s"] + 0.1)
    assert page.locator(".film-sr-caption").inner_text() == nxt["text"]
    # it fails while the film plays, too: the caption being spoken is announced instead
    btn.click()
    page.evaluate("window.canneryFilm.play()")
    see(status).to_contain_text("cannot speak")
    page.evaluate("window.canneryFilm.pause()")
    assert btn.get_attribute("aria-pressed") == "false"
    assert page.locator(".film-sr-caption").inner_text() == cue(film_data, state(page)["cue"])["text"]


# ---------- reduced motion ----------

def test_reduced_motion_shows_one_still_frame_per_caption(browser, server_url, film_data):
    ctx = browser.new_context(reduced_motion="reduce", viewport={"width": 1200, "height": 900})
    try:
        page = ctx.new_page()
        open_film(page, server_url)
        c = cue(film_data, "tile2")
        seek(page, c["start_s"] + 0.05)
        a = page.evaluate("window.canneryFilm.frame()")
        seek(page, c["end_s"] - 0.05)
        b = page.evaluate("window.canneryFilm.frame()")
        assert a == b
        nxt = film_data["cues"][film_data["cues"].index(c) + 1]
        seek(page, nxt["start_s"] + 0.05)
        assert page.evaluate("window.canneryFilm.frame()") != a
    finally:
        ctx.close()


# ---------- screenshots: the drawing says what the caption says ----------

SHOTS = [
    # (cue id, figure keys whose display text must be drawn)
    ("size", lambda F: [f"= {F['table']['mib']} MiB", F["N"]]),
    ("cross", lambda F: [f"{F['cross']['mib']} MiB"]),
    ("check", lambda F: [f"l = {F['ex']['l']}", "m = " + F["ex"]["m"], F["ex"]["full"]]),
    ("answer", lambda F: [f"{F['d16']['plain_mib']} MiB", f"{F['d16']['fused_mib']} MiB", F["d16"]["ratio2"]]),
    ("rerun", lambda F: [f"l = {F['ex']['broken_l']}", f"l = {F['ex']['l']}"]),
    ("edge", lambda F: [F["fp16"]["ln_edge"], F["fp16"]["edge"]]),
]


def test_screenshots_at_six_points_show_what_the_captions_say(page, server_url, film_data, artifacts):
    out = artifacts / "film"
    out.mkdir(parents=True, exist_ok=True)
    F = film_data["figures"]
    open_film(page, server_url)
    seek(page, film_data["question"]["stop_s"])
    page.keyboard.press("Escape")
    page.evaluate("window.canneryFilm.pause()")
    for i, (cid, expect) in enumerate(SHOTS):
        c = cue(film_data, cid)
        seek(page, c["end_s"] - 0.1)
        assert state(page)["cue"] == cid
        drawn = visible_svg_text(page)
        for text in expect(F):
            assert text in drawn, f"{cid}: the drawing lacks {text!r}; it shows {drawn!r}"
        page.locator(".film-player").screenshot(path=str(out / f"{i + 1:02d}-{cid}.png"))
    assert page.console_errors == []


# ---------- phones, focus, and what the question keeps off screen ----------

def phone_page(browser, width, height=844):
    ctx = browser.new_context(viewport={"width": width, "height": height})
    return ctx, ctx.new_page()


def no_page_overflow(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@pytest.mark.parametrize("width", [320, 390])
def test_on_a_phone_the_controls_fit_playing_and_with_the_question_open(browser, server_url, film_data, width):
    ctx, page = phone_page(browser, width)
    try:
        open_film(page, server_url, play=True)
        page.wait_for_function("() => window.canneryFilm.time > 0.3")
        assert no_page_overflow(page)
        right = page.evaluate("""() => Math.max(...[
            ...document.querySelectorAll('.film-controls > *, .film-controls select')]
            .map(e => e.getBoundingClientRect().right))""")
        assert right <= width
        page.evaluate("window.canneryFilm.pause()")
        seek(page, film_data["question"]["stop_s"])
        assert state(page)["open"]
        assert no_page_overflow(page)
    finally:
        ctx.close()


def test_on_a_phone_the_question_shows_prompt_input_check_and_show_me_without_scrolling_inside(
        browser, server_url, film_data):
    ctx, page = phone_page(browser, 390)
    try:
        open_film(page, server_url)
        seek(page, film_data["question"]["stop_s"])
        panel = page.locator(".film-question")
        inner = panel.evaluate("p => [p.scrollHeight, p.clientHeight]")
        assert inner[0] <= inner[1] + 1  # no scroll area inside the panel
        stage = page.locator(".film-stage").bounding_box()
        box = panel.bounding_box()
        assert box["y"] >= stage["y"] + stage["height"] - 1  # below the drawing, not over it
        for sel in (".film-q-prompt", "#film-q-input", ".film-q-check", ".film-q-show"):
            b = page.locator(sel).bounding_box()
            assert b["x"] >= 0 and b["x"] + b["width"] <= 390, sel
            assert box["y"] <= b["y"] and b["y"] + b["height"] <= box["y"] + box["height"], sel
        page.locator(".film-q-show").scroll_into_view_if_needed()
        assert page.locator(".film-q-prompt").is_visible() and page.locator(".film-q-show").is_visible()
    finally:
        ctx.close()


def test_on_a_phone_the_drawings_labels_are_at_least_eleven_pixels_tall(browser, server_url, film_data):
    ctx, page = phone_page(browser, 390)
    try:
        open_film(page, server_url)
        for cid in ("dim", "tile2", "update", "recipe"):
            seek(page, cue(film_data, cid)["end_s"] - 0.1)
            sizes = page.evaluate("""() => {
              const svg = document.querySelector('.film-canvas-host svg');
              const k = svg.getBoundingClientRect().width / 960;
              return [...svg.querySelectorAll('text.film-label, text.film-text, text.film-big')]
                .filter(t => t.getBoundingClientRect().width > 0)
                .map(t => parseFloat(getComputedStyle(t).fontSize) * k); }""")
            assert sizes and min(sizes) >= 11, (cid, min(sizes))
    finally:
        ctx.close()


def test_a_transcript_line_past_the_question_skips_it_and_focuses_play(page, server_url, film_data):
    q = film_data["question"]
    later = next(c for c in film_data["cues"] if c["start_s"] > q["stop_s"] + 30)
    open_film(page, server_url)
    page.click(f"#line-{later['id']} .transcript-seek")
    page.wait_for_function("() => window.canneryFilm.skipped")
    page.wait_for_timeout(200)  # after the click handler's own focus step
    assert page.evaluate("document.activeElement.classList.contains('film-play')")
    assert state(page)["time"] == pytest.approx(later["start_s"], abs=0.01)


def page_text(page) -> str:
    """What a reader sees on the whole page: rendered text (innerText skips hidden and closed parts) and the stage."""
    return page.evaluate("document.body.innerText") + " | " + visible_svg_text(page)


def test_the_question_cannot_be_answered_from_the_screen(page, server_url, film_data):
    q = film_data["question"]
    F = film_data["figures"]["d16"]
    secret = [F["ratio"], F["ratio2"], f"{F['plain_mib']} MiB", F["plain_bytes"], F["fused_bytes"]]
    page.goto(server_url)
    text = page.evaluate("document.body.innerText")
    assert not [x for x in secret if x in text], "the page states the answer before the film has asked"
    open_film(page, server_url)
    # every frame from the d = 16 count to the question, in half seconds
    t = cue(film_data, "d16")["start_s"]
    while t <= q["stop_s"]:
        seek(page, t)
        shown = page_text(page)
        assert not [x for x in secret if x in shown], (t, [x for x in secret if x in shown])
        t += 0.5
    seek(page, q["stop_s"])
    assert not [x for x in secret if x in page_text(page)]
    assert state(page)["open"]
    # what the learner reasons from is not hidden under the question's panel
    under = page.evaluate("""() => { const p = document.querySelector('.film-question').getBoundingClientRect();
        return [...document.querySelectorAll('.film-canvas-host svg text')].filter((t) => {
          const r = t.getBoundingClientRect(); let n = t;
          while (n && n.tagName !== 'svg') { const cs = getComputedStyle(n);
            if (cs.display === 'none' || cs.visibility === 'hidden' || Number(cs.opacity) < 0.3) return false;
            n = n.parentNode; }
          return r.width > 0 && r.right > p.left && r.left < p.right && r.bottom > p.top && r.top < p.bottom;
        }).map((t) => t.textContent); }""")
    assert under == [], under
    # a wrong answer's hint teaches what crosses the door; it gives no total away
    page.fill("#film-q-input", "3")
    page.keyboard.press("Enter")
    hint = page.locator(".film-q-feedback").inner_text()
    assert hint == q["hint"]
    assert not [x for x in secret if x in page_text(page)]
    assert "query tiles" in hint and "once" in hint and "table" in hint
    # Rewatch goes to the count, which explains it
    assert q["rewatch_title"] == "The count"


def test_after_the_answer_the_film_shows_the_count_and_the_guess_beside_it(page, server_url, film_data):
    q = film_data["question"]
    F = film_data["figures"]["d16"]
    open_film(page, server_url)
    seek(page, q["stop_s"])
    page.fill("#film-q-input", "16,6")
    page.keyboard.press("Enter")
    page.wait_for_function("() => window.canneryFilm.playing")
    s = state(page)
    assert s["cue"] == q["answer_cue"] and s["time"] >= q["resume_s"]
    page.evaluate("window.canneryFilm.pause()")
    seek(page, cue(film_data, q["answer_cue"])["end_s"] - 0.2)
    drawn = visible_svg_text(page)
    assert F["ratio2"] in drawn and "your guess: 16.6" in drawn
    assert f"{F['plain_mib']} MiB" in drawn and f"{F['fused_mib']} MiB" in drawn
    assert page.locator(f"#line-{q['answer_cue']} .t-text").is_visible()


def test_the_head_dimension_names_every_d_the_count_and_the_question_use(page, server_url, film_data):
    F = film_data["figures"]
    open_film(page, server_url)
    seek(page, cue(film_data, "dim")["end_s"] - 0.1)
    drawn = visible_svg_text(page)
    assert f"d = {F['d16']['d']} numbers" in drawn
    assert f"the count takes {F['d64']['d']}, then {F['d16']['d']}" in drawn, drawn


def test_the_online_softmax_labels_follow_the_step_on_screen(page, server_url, film_data):
    F = film_data["figures"]
    open_film(page, server_url)
    seek(page, cue(film_data, "byhand")["start_s"] + 1.0)
    assert "m = −∞" in visible_svg_text(page)
    seek(page, cue(film_data, "tile2")["end_s"] - 0.1)
    drawn = visible_svg_text(page)
    assert f"l = {F['ex']['l']}" in drawn
    assert "shrunk" not in drawn and F["ex"]["l2_terms"] in drawn


def test_the_checker_grid_numbers_layers_from_zero_like_facts_json(page, server_url, film_data):
    grid = film_data["figures"]["model"].get("grid_layers")
    if not grid:
        pytest.skip("no checker grid in facts.json")
    open_film(page, server_url)
    seek(page, film_data["question"]["stop_s"])
    page.keyboard.press("Escape")
    page.evaluate("window.canneryFilm.pause()")
    seek(page, cue(film_data, "caught")["end_s"] - 0.1)
    drawn = visible_svg_text(page)
    assert "layer 0" in drawn and f"layer {grid[-1]}" in drawn and f"layer {grid[-1] + 1}" not in drawn


# ---------- every frame: nothing overlaps, nothing is cut, nothing too small ----------

# What a frame draws, as a viewer sees it: every <text>, box and filled shape
# with its opacity (the product of its ancestors', 0 when hidden) and its box
# on screen, in drawing order. Shared by the frame scan and the lag check.
STAGE_LOOK = """
  const svg = document.querySelector('.film-canvas-host svg');
  const alphaOf = (node) => {
    let n = node, a = 1;
    while (n && n !== svg) {
      const cs = getComputedStyle(n);
      if (cs.display === 'none' || cs.visibility === 'hidden') return 0;
      a *= Number(cs.opacity);
      n = n.parentNode;
    }
    return a;
  };
"""

# Problems of one frame. A text is drawn when at least 30% opaque, and still
# readable down to 5%: a new text over one still readable is an overlap too
# (a scene dimmed under a closing note must hide its words). A label on a tile
# (inside a filled shape, drawn after it) travels with the tile, so it may
# cross a box's edge as the tile moves; any other text that meets a filled
# shape without sitting wholly on it, or that a later shape is drawn over, is
# covered. A text that meets a box (bench, warehouse, card) lies wholly inside it.
FRAME_SCAN = """([minPx, EDGE, WIDER, GAP]) => {""" + STAGE_LOOK + """
  const drawing = svg.getBoundingClientRect();
  const k = drawing.width / 960;
  // A phone's system font may be wider than this one: a text, made WIDER times
  // as wide from its anchor, keeps EDGE units (of 960) from the left and right edges.
  const fits = (el, r) => {
    const grow = (WIDER - 1) * r.width;
    const anchor = getComputedStyle(el).textAnchor;
    const left = r.left - (anchor === 'end' ? grow : anchor === 'middle' ? grow / 2 : 0);
    const right = r.right + (anchor === 'start' ? grow : anchor === 'middle' ? grow / 2 : 0);
    return left >= drawing.left + EDGE * k && right <= drawing.right - EDGE * k
      && r.top >= drawing.top - 0.5 && r.bottom <= drawing.bottom + 0.5;
  };
  const texts = [], boxes = [], shapes = [];
  [...svg.querySelectorAll('text, rect')].forEach((el, order) => {
    const a = alphaOf(el);
    if (a < 0.05) return;
    const r = el.getBoundingClientRect();
    if (r.width < 0.5 || r.height < 0.5) return;
    const cs = getComputedStyle(el);
    if (el.tagName === 'text') {
      const text = el.textContent.trim();
      if (text) texts.push({ el, order, a, r, text, size: parseFloat(cs.fontSize) * k });
    } else if (el.classList.contains('film-box')) boxes.push({ a, r, name: el.getAttribute('class') });
    else if (cs.fill !== 'none' && !el.classList.contains('film-bg')) {
      shapes.push({ order, a, r, name: el.getAttribute('class') });
    }
  });
  const cut = (a, b) => [Math.min(a.right, b.right) - Math.max(a.left, b.left),
    Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top)];
  const meets = (a, b) => { const [w, h] = cut(a, b); return w > 1 && h > 1; };
  // two words on one line keep GAP px between them; two lines may touch, not overlap
  const crowds = (a, b) => { const [w, h] = cut(a, b); return w > -GAP && h > 0.01; };
  const within = (a, b) => a.left >= b.left - 0.5 && a.right <= b.right + 0.5
    && a.top >= b.top - 0.5 && a.bottom <= b.bottom + 0.5;
  const problems = [];
  for (const t of texts.filter((x) => x.a >= 0.3)) {
    if (!fits(t.el, t.r)) {
      problems.push(`cut by the drawing's edge, or would be in a font ${WIDER}× as wide: "${t.text}"`);
    }
    if (t.size < minPx - 0.01) problems.push(`${t.size.toFixed(1)} px: "${t.text}"`);
    const drawn = shapes.filter((s) => s.a >= 0.3);
    const carrier = drawn.filter((s) => s.order < t.order && within(t.r, s.r)).pop();
    if (!carrier) {
      for (const b of boxes) {
        if (b.a >= 0.3 && meets(t.r, b.r) && !within(t.r, b.r)) {
          problems.push(`crosses the edge of its box (${b.name}): "${t.text}"`);
        }
      }
    }
    for (const s of drawn) {
      if (!meets(t.r, s.r)) continue;
      if (s.order > t.order) problems.push(`covered by a shape drawn over it (${s.name}): "${t.text}"`);
      else if (!within(t.r, s.r) && !(carrier && s.order < carrier.order)) {
        problems.push(`half on a shape (${s.name}): "${t.text}"`);
      }
    }
  }
  for (let i = 0; i < texts.length; i += 1) {
    for (let j = i + 1; j < texts.length; j += 1) {
      const a = texts[i], b = texts[j];
      if (Math.max(a.a, b.a) < 0.3 || !crowds(a.r, b.r)) continue;
      if (Math.min(a.a, b.a) >= 0.3) problems.push(`overlap: "${a.text}" and "${b.text}"`);
      else {
        const [faint, over] = a.a < b.a ? [a, b] : [b, a];
        problems.push(`"${over.text}" drawn over "${faint.text}", still readable at opacity ${faint.a.toFixed(2)}`);
      }
    }
  }
  return problems;
}"""


# Words stay inside the drawing in a font 10% wider than this machine's, and
# EDGE units (of 960) from its left and right edges; two words side by side
# keep GAP CSS px apart ("258 MiB" once ran into "Q, K, V, O = 256 KiB each").
EDGE, WIDER, GAP = 8, 1.1, 3


def frame_times(film_data, reduced):
    """With motion, moments inside each cue: half a second in, then about every
    second (a tile that crosses a word on its way is caught), and settled, at
    least three in every cue; reduced motion shows one still per cue."""
    out = []
    for c in film_data["cues"]:
        s, e = c["start_s"], c["end_s"]
        if reduced:
            inside = [e - 0.1]
        else:
            steps = max(2, math.ceil(e - s - 0.6))
            inside = [s + 0.5 + (e - s - 0.6) * i / steps for i in range(steps + 1)]
        out += [(c["id"], t) for t in inside]
    return out


def film_frames(browser, url, width, height, reduced=False):
    """A context and a page at width × height with the film loaded and paused,
    its question not answered (a seek into the question's caption stops at it,
    and the answer draws "your guess: not given")."""
    ctx = browser.new_context(viewport={"width": width, "height": height},
                              reduced_motion="reduce" if reduced else "no-preference")
    page = ctx.new_page()
    open_film(page, url)
    return ctx, page


def scan_frames(page, times, min_px, found):
    for cid, t in times:
        seek(page, t)
        for p in page.evaluate(FRAME_SCAN, [min_px, EDGE, WIDER, GAP]):
            found.setdefault(f"{cid}: {p}", []).append(f"{int(t) // 60}:{t % 60:04.1f}")


@pytest.mark.parametrize("lang", ["en", "pt-BR"])
@pytest.mark.parametrize("reduced", [False, True], ids=["motion", "reduced"])
@pytest.mark.parametrize("width, height, min_px", [(1280, 900, 12), (390, 844, 11)], ids=["1280", "390"])
def test_every_cue_frame_has_no_overlap_no_cut_and_no_tiny_text(
        browser, server_url, built_site, width, height, min_px, reduced, lang):
    """Inside every cue (see frame_times), with the question unanswered; then
    the answer's frames again with each way of answering: a typed guess, and Show me."""
    if reduced and lang != "en":
        pytest.skip("reduced motion shows a subset of the frames with motion; one language is enough")
    prefix = "" if lang == "en" else f"{i18n.language(lang).prefix}"
    data = json.loads((built_site / "media" / ("film.json" if lang == "en" else f"film.{lang}.json")).read_text())
    q = data["question"]
    times = frame_times(data, reduced)
    answer = [(cid, t) for cid, t in times if cid == q["answer_cue"]]
    ctx, page = film_frames(browser, server_url + prefix, width, height, reduced)
    try:
        found: dict[str, list[str]] = {}
        scan_frames(page, times, min_px, found)
        for how in ("typed", "shown"):
            page.evaluate("document.querySelector('.film-q-forget').click()")
            seek(page, q["stop_s"])
            if how == "typed":
                page.fill("#film-q-input", f"{q['answer']:.2f}".replace(".", "," if lang == "pt-BR" else "."))
                page.keyboard.press("Enter")
            else:
                page.keyboard.press("Escape")
            page.wait_for_function("() => window.canneryFilm.answered")
            page.evaluate("window.canneryFilm.pause()")
            scan_frames(page, [(f"{cid} ({how})", t) for cid, t in answer], min_px, found)
        assert found == {}, "\n".join(f"{' '.join(ts)} {p}" for p, ts in found.items())
    finally:
        ctx.close()


# Each caption's picture starts with it. Half a second after a cue starts, the
# stage shows a word that the previous caption's settled frame did not, or a
# shape has appeared, gone, moved, grown or begun to be drawn (a curve drawn
# by its dash offset); and a caption that adds words to the picture has drawn
# the first of them within a second.
LAG_SCAN = """async (cues) => {""" + STAGE_LOOK + """
  const f = window.canneryFilm;
  const look = () => {
    const words = new Set();
    const shapes = new Map();
    [...svg.querySelectorAll('text, rect, path, line, circle')].forEach((el, i) => {
      if (alphaOf(el) < 0.3) return;
      if (el.tagName === 'text') {
        if (el.textContent.trim()) words.add(`${i}:${el.textContent.trim()}`);
        return;
      }
      const r = el.getBoundingClientRect();
      shapes.set(i, [...[r.x, r.y, r.width, r.height].map((v) => Math.round(v / 2)),
        el.getAttribute('stroke-width'), el.getAttribute('stroke-dashoffset')].join(','));
    });
    return { words, shapes };
  };
  const late = [];
  let before = null;
  for (const c of cues) {
    if (before !== null) {
      const added = (now) => [...now.words].filter((w) => !before.words.has(w));
      await f.seek(c.start_s + 0.5);
      const soon = look();
      const moved = [...soon.shapes].some(([i, v]) => before.shapes.get(i) !== v)
        || [...before.shapes.keys()].some((i) => !soon.shapes.has(i));
      await f.seek(c.start_s + 1.0);
      const second = added(look());
      await f.seek(c.end_s - 0.1);
      const fresh = added(look()).map((w) => w.replace(/^\\d+:/, ''));
      if (!added(soon).length && !moved) late.push(`${c.id} (${c.start_s.toFixed(2)} s): nothing new 0.5 s in`);
      else if (fresh.length && !second.length) {
        const words = JSON.stringify(fresh.slice(0, 3));
        late.push(`${c.id} (${c.start_s.toFixed(2)} s): none of its words 1 s in: ${words}`);
      }
    }
    await f.seek(c.end_s - 0.1);
    before = look();
  }
  return late;
}"""


def test_every_captions_picture_starts_within_half_a_second_of_it(browser, server_url, film_data):
    ctx, page = film_frames(browser, server_url, 1280, 900)
    try:
        seek(page, film_data["question"]["stop_s"])
        page.keyboard.press("Escape")  # answered, so that every seek lands where it is sent
        page.evaluate("window.canneryFilm.pause()")
        cues = [c for c in film_data["cues"] if c["id"] != film_data["question"]["cue"]]
        late = page.evaluate(LAG_SCAN, cues)
        assert late == [], "\n".join(late)
    finally:
        ctx.close()


# ---------- pictures that say what the captions say ----------

def test_every_caption_changes_the_picture_and_its_text_alternative_names_its_numbers(page, server_url, film_data):
    F = film_data["figures"]
    open_film(page, server_url)
    seek(page, film_data["question"]["stop_s"])
    page.keyboard.press("Escape")
    page.evaluate("window.canneryFilm.pause()")
    frames, labels = {}, {}
    for c in film_data["cues"]:
        seek(page, c["end_s"] - 0.1)
        frames[c["id"]] = page.evaluate("window.canneryFilm.frame()")
        labels[c["id"]] = page.locator(".film-canvas-host svg").get_attribute("aria-label")
    ids = [c["id"] for c in film_data["cues"]]
    same = [(a, b) for a, b in zip(ids, ids[1:], strict=False) if frames[a] == frames[b]]
    assert same == [], f"captions whose picture does not change: {same}"
    assert f"{F['table']['mib']} MiB" in labels["size"]
    assert f"l = {F['ex']['l']}" in labels["check"]
    assert F["d16"]["ratio2"] in labels[film_data["question"]["answer_cue"]]
    assert F["d16"]["ratio2"] not in labels["question"]
    assert len(set(labels.values())) >= len(labels) - 3, "text alternatives repeat across captions"


def test_the_stage_is_never_blank_while_the_film_runs(page, server_url, film_data):
    open_film(page, server_url)
    seek(page, film_data["question"]["stop_s"])
    page.keyboard.press("Escape")
    page.evaluate("window.canneryFilm.pause()")
    blank = []
    t = 0.0
    while t < film_data["runtime_s"]:
        seek(page, t)
        shown = page.evaluate("""() => [...document.querySelectorAll('.film-canvas-host svg text')].some((el) => {
            let n = el, a = 1;
            while (n && n.tagName !== 'svg') { const cs = getComputedStyle(n);
              if (cs.display === 'none' || cs.visibility === 'hidden') return false;
              a *= Number(cs.opacity); n = n.parentNode; }
            return a >= 0.3 && el.textContent.trim() !== ''; })""")
        if not shown:
            blank.append(round(t, 1))
        t += 0.5
    assert blank == [], f"blank stage at {blank}"


def test_clicking_the_poster_plays_and_play_is_in_view_at_1280_by_900(browser, server_url):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = ctx.new_page()
        page.goto(server_url)
        box = page.locator(".film-poster-play").bounding_box()
        assert box and box["y"] >= 0 and box["y"] + box["height"] <= 900, box
        assert page.locator(".film-poster-play").inner_text().startswith("▶ Play")
        page.locator(".film-poster").click(position={"x": 40, "y": 40})
        page.wait_for_function("() => window.canneryFilm.playing")
        assert page.locator(".film-poster-play").is_hidden()
        assert page.evaluate("document.activeElement.classList.contains('film-play')")
    finally:
        ctx.close()


def test_a_skip_link_jumps_past_the_transcript_and_the_sources(page, server_url):
    page.goto(server_url)
    link = page.locator(".skip-past")
    assert link.get_attribute("href") == "#leaves-out"
    # it comes right before the transcript's first line in the tab order
    first_line = page.locator(".transcript-seek").first
    first_line.focus()
    for _ in range(3):
        page.keyboard.press("Shift+Tab")
        if page.evaluate("document.activeElement.classList.contains('skip-past')"):
            break
    assert page.evaluate("document.activeElement.classList.contains('skip-past')")
    assert link.is_visible()  # shown while it has the focus
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    where = page.evaluate("""() => { const a = document.activeElement;
        return { transcript: !!a.closest('#transcript'), sources: !!a.closest('#sources'), tag: a.tagName }; }""")
    assert not where["transcript"] and not where["sources"], where


@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)], ids=["1280", "390"])
def test_screenshots_of_every_chapter_for_people_to_look_at(browser, server_url, film_data, artifacts, width, height):
    out = artifacts / "film" / f"chapters-{width}"
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.png"):  # only this run's pictures are judged
        old.unlink()
    ctx = browser.new_context(viewport={"width": width, "height": height})
    shots: dict[str, bytes] = {}
    boxes: dict[str, dict] = {}
    try:
        page = ctx.new_page()
        open_film(page, server_url)
        player = page.locator(".film-player")

        def shoot(name):
            boxes[name] = player.bounding_box()
            shots[name] = player.screenshot(path=str(out / name))

        seek(page, film_data["question"]["stop_s"])
        shoot("00-question-asked.png")
        page.keyboard.press("Escape")
        page.evaluate("window.canneryFilm.pause()")
        for i, ch in enumerate(film_data["chapters"]):
            mine = [c for c in film_data["cues"] if c["chapter"] == ch["id"]]
            for c in (mine[0], mine[-1]):
                seek(page, c["end_s"] - 0.1)
                shoot(f"{i + 1:02d}-{ch['id']}-{c['id']}.png")
    finally:
        ctx.close()
    assert sorted(p.name for p in out.glob("*.png")) == sorted(shots)
    ends = []  # each chapter's last moment
    for i, ch in enumerate(film_data["chapters"]):
        mine = [c for c in film_data["cues"] if c["chapter"] == ch["id"]]
        assert {f"{i + 1:02d}-{ch['id']}-{c['id']}.png" for c in (mine[0], mine[-1])} <= set(shots)
        ends.append(shots[f"{i + 1:02d}-{ch['id']}-{mine[-1]['id']}.png"])
    for name, data in shots.items():
        # a PNG of the player's size (IHDR: width and height, big-endian, at bytes 16 to 24)
        assert data[:8] == b"\x89PNG\r\n\x1a\n", name
        w, h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        box = boxes[name]
        assert abs(w - box["width"]) < 2 and abs(h - box["height"]) < 2, (name, w, h, box)  # whole pixels
    # the stage moves: no two chapters end on the same picture
    assert len(set(ends)) == len(ends)
