"""The film in Brazilian Portuguese, in Chromium: /pt-BR/ plays
with its own captions track, asks its question in Portuguese, takes "16,5",
answers with numbers written the Brazilian way, and its transcript, drawings
and read-aloud follow the page's language. Screenshots of a caption frame and
the question frame at 1280 and 390 px go to test-artifacts/film-pt/.

Waits use locators and expect (the page's CSP blocks Playwright's string
wait_for_function); page.evaluate reads state through window.canneryFilm.
"""
from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

import i18n

pytestmark = pytest.mark.browser

PT = "pt-BR"


@pytest.fixture(scope="module")
def pt_data(built_site) -> dict:
    return json.loads((built_site / "media" / "film.pt-BR.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def en_data(built_site) -> dict:
    return json.loads((built_site / "media" / "film.json").read_text(encoding="utf-8"))


@pytest.fixture
def pt_url(server_url) -> str:
    return f"{server_url}{i18n.language(PT).prefix}"


def cue(data, cid):
    return next(c for c in data["cues"] if c["id"] == cid)


def seek(page, t):
    page.evaluate(f"window.canneryFilm.seek({t})")


def until(page, condition: str):
    """Wait, in the page, until ``condition`` (a JS expression) holds; a promise
    polled by evaluate, since the CSP blocks string wait_for_function."""
    page.evaluate(f"() => new Promise(ok => {{ const f = () => ({condition}) ? ok() : setTimeout(f, 50); f(); }})")


def ready(page):
    until(page, "window.canneryFilm !== undefined")


def loaded(page):
    # the player's own flag: film.json, scenes, GSAP and every track arrived
    expect(page.locator(".film-player.is-loaded")).to_be_visible()
    until(page, "window.canneryFilm.loaded")


# A speechSynthesis stand-in (headless Chromium has no voices): it offers an
# English and a European Portuguese voice and records what it is asked to say.
FAKE_SPEECH = """
(() => {
  window.__spoken = [];
  const voices = [{ name: "English voice", lang: "en-US" }, { name: "Voz portuguesa", lang: "pt-PT" }];
  class Utterance { constructor(text) { this.text = text; this.lang = ""; this.voice = null; this.rate = 1; } }
  Object.defineProperty(window, "SpeechSynthesisUtterance", { value: Utterance, configurable: true });
  Object.defineProperty(window, "speechSynthesis", { configurable: true, value: {
    getVoices: () => voices, cancel: () => {},
    speak: (u) => window.__spoken.push({ text: u.text, lang: u.lang, voice: u.voice && u.voice.name }),
  } });
})();
"""


def test_the_pt_br_film_plays_with_pt_br_captions_takes_16_5_and_answers_in_portuguese(
        page, pt_url, pt_data, en_data):
    q = pt_data["question"]
    page.goto(pt_url)
    expect(page.locator("html")).to_have_attribute("lang", PT)
    expect(page.locator(".film-play")).to_have_text("Reproduzir")
    ready(page)
    page.locator(".film-play").click()
    loaded(page)
    # the page's captions track comes first, in its own language, with the same cue ids as English
    tracks = page.evaluate("""() => [...document.querySelector('.film-tracks').textTracks].map(t => ({
        kind: t.kind, lang: t.language, label: t.label, mode: t.mode,
        cues: t.cues ? [...t.cues].map(c => ({ id: c.id, start: c.startTime, text: c.text })) : [] }))""")
    captions = [t for t in tracks if t["kind"] == "captions"]
    assert [t["lang"] for t in captions] == [PT, "en"]
    assert captions[0]["label"] == i18n.language(PT).name and captions[1]["label"] == "English"
    assert [c["text"] for c in captions[0]["cues"]] == [c["text"] for c in pt_data["cues"]]
    assert [c["id"] for c in captions[0]["cues"]] == [c["id"] for c in captions[1]["cues"]]
    assert [c["start"] for c in captions[0]["cues"]] == [c["start"] for c in captions[1]["cues"]]
    chapters = next(t for t in tracks if t["kind"] == "chapters")
    assert [c["text"] for c in chapters["cues"]] == [c["title"] for c in pt_data["chapters"]]
    # playing: the first caption shows, in Portuguese
    first = pt_data["cues"][0]
    expect(page.locator(".film-caption span")).to_have_text(first["text"], timeout=first["start_s"] * 1000 + 8000)
    assert first["text"] != en_data["cues"][0]["text"]
    expect(page.locator(".film-play")).to_have_text("Pausar")
    # on to the question: play into it from just before, and it stops there
    page.evaluate("window.canneryFilm.pause()")
    seek(page, q["stop_s"] - 1.0)
    expect(page.locator(".film-caption span")).to_have_text(cue(pt_data, "recipe")["text"])
    page.locator(".film-play").click()
    panel = page.locator(".film-question")
    expect(panel).to_be_visible(timeout=8000)
    expect(page.locator(".film-caption span")).to_have_text(cue(pt_data, "question")["text"])
    expect(page.locator("#film-q-title")).to_have_text("Sua vez")
    expect(page.locator(".film-q-prompt")).to_have_text(q["prompt"])
    assert "4.096" in q["prompt"]
    expect(page.locator("#film-q-input")).to_be_focused()
    # a wrong answer: the hint, in Portuguese
    page.locator("#film-q-input").fill("3")
    page.locator("#film-player").get_by_role("button", name="Conferir").click()
    expect(page.locator(".film-q-feedback")).to_have_text(q["hint"])
    expect(page.locator(".film-q-rewatch")).to_contain_text("Rever “A contagem”")
    # "16,5", the Brazilian way, is right
    page.locator("#film-q-input").fill("16,5")
    page.locator("#film-player").get_by_role("button", name="Conferir").click()
    expect(panel).to_be_hidden()
    status = page.locator(".film-status")
    expect(status).to_have_text(q["right"])
    right = status.inner_text()
    assert right.startswith("Isso!")
    assert "285.736.960" in right and "17.301.504" in right and "16,52" in right
    assert not re.search(r"\d,\d{3}\b|\d\.\d{1,2}\b", right), right
    # the answer's caption, and the guess drawn beside the count, in pt-BR numbers
    expect(page.locator(".film-caption span")).to_have_text(cue(pt_data, q["answer_cue"])["text"])
    page.evaluate("window.canneryFilm.pause()")
    seek(page, cue(pt_data, q["answer_cue"])["end_s"] - 0.2)
    expect(page.locator(".film-guess")).to_have_text("seu palpite: 16,5")
    drawing = page.locator(".film-canvas-host svg")
    expect(drawing).to_have_attribute("aria-label", re.compile(r"^Desenho: .*contagem: 16,52× menos"))
    expect(drawing).to_have_attribute("aria-label", re.compile("seu palpite: 16,5"))
    # the transcript is the Portuguese one, its answer line now shown
    expect(page.locator("#transcript-title")).to_have_text("Tudo o que o filme diz")
    lines = page.locator(".transcript-line .t-text")
    expect(lines).to_have_count(len(pt_data["cues"]))
    expect(lines.first).to_have_text(first["text"])
    expect(page.locator(f"#line-{q['answer_cue']} .t-text")).to_have_text(cue(pt_data, q["answer_cue"])["text"])
    expect(page.locator(f"#line-{q['answer_cue']} .t-text")).to_be_visible()
    expect(page.locator("#sources-title")).to_have_text("Fontes")
    assert page.console_errors == []


def test_the_pt_br_drawings_speak_portuguese_and_write_brazilian_numbers(page, pt_url, pt_data):
    page.goto(pt_url)
    ready(page)
    page.evaluate("window.canneryFilm.load()")
    loaded(page)
    page.evaluate("window.canneryFilm.pause()")
    svg = page.locator(".film-canvas-host svg")
    seek(page, cue(pt_data, "door")["end_s"] - 0.1)
    label = svg.get_attribute("aria-label")
    assert "a tabela passou quatro vezes: 256 MiB" in label, label
    assert "o armazém: memória global (HBM), fora do chip" in label
    seek(page, cue(pt_data, "check")["end_s"] - 0.1)
    label = svg.get_attribute("aria-label")
    assert "l = 1,553" in label and "linha inteira:" in label, label
    seek(page, cue(pt_data, "d64why")["end_s"] - 0.1)
    label = svg.get_attribute("aria-label")
    assert "514 MiB" in label and "258 MiB" in label and "K e V lidos 128 vezes" in label, label
    for shown in re.findall(r"(?<![\w.,])\d[\d.,]*\d(?![\w])", label):
        assert not re.fullmatch(r"\d{1,3}(,\d{3})+", shown), f"English grouping {shown!r} in {label!r}"
    assert page.console_errors == []


def test_read_aloud_picks_a_portuguese_voice_and_says_the_pt_br_captions(browser, server_url, pt_data):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.add_init_script(script=FAKE_SPEECH)
    page = ctx.new_page()
    try:
        page.goto(f"{server_url}{i18n.language(PT).prefix}")
        ready(page)
        read = page.get_by_role("button", name="Ler em voz alta")
        expect(read).to_be_enabled()
        read.click()
        expect(read).to_have_attribute("aria-pressed", "true")
        page.locator(".film-play").click()
        first = pt_data["cues"][0]
        expect(page.locator(".film-caption span")).to_have_text(first["text"], timeout=first["start_s"] * 1000 + 8000)
        spoken = page.evaluate("window.__spoken")
        # the voice first says that Read aloud is on (so a voice that cannot speak is found out), then the captions
        assert spoken[:2] == [{"text": "Leitura em voz alta ligada.", "lang": PT, "voice": "Voz portuguesa"},
                              {"text": first["text"], "lang": PT, "voice": "Voz portuguesa"}], spoken
    finally:
        ctx.close()


@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)])
def test_screenshots_of_the_pt_br_film_at(browser, server_url, pt_data, artifacts, width, height):
    out = artifacts / "film-pt"
    out.mkdir(parents=True, exist_ok=True)
    ctx = browser.new_context(viewport={"width": width, "height": height})
    page = ctx.new_page()
    try:
        page.goto(f"{server_url}{i18n.language(PT).prefix}")
        ready(page)
        page.evaluate("window.canneryFilm.load()")
        loaded(page)
        page.evaluate("window.canneryFilm.pause()")
        for cid in ("dim", "door", "check", "bench", "update", "same", "loops", "d64why", "recipe",
                    "tile2", "caught", "lucky", "model", "heldout", "arith", "sum"):
            c = cue(pt_data, cid)
            seek(page, c["end_s"] - 0.1)
            expect(page.locator(".film-caption span")).to_have_text(c["text"])
            page.locator(".film-player").screenshot(path=str(out / f"{width}-{cid}.png"))
        seek(page, pt_data["question"]["stop_s"])
        expect(page.locator(".film-question")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.locator(".film-player").screenshot(path=str(out / f"{width}-question.png"))
    finally:
        ctx.close()


# ---------- layout: the question's panel and the film's place on a phone ----------

@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)], ids=["1280", "390"])
def test_the_pt_br_question_with_its_hint_fits_its_panel_and_rewatch_is_whole(browser, pt_url, pt_data,
                                                                               width, height):
    """The longest state of the panel (the Portuguese hint and "Rever “A
    contagem”…") is drawn whole: no scroll area inside the panel, nothing of
    it past the film's screen, the Rewatch button inside the panel."""
    ctx = browser.new_context(viewport={"width": width, "height": height})
    try:
        page = ctx.new_page()
        page.goto(pt_url)
        ready(page)
        page.evaluate("window.canneryFilm.load()")
        until(page, "window.canneryFilm.loaded")
        page.evaluate("window.canneryFilm.pause()")
        seek(page, pt_data["question"]["stop_s"])
        page.locator("#film-q-input").fill("3")
        page.locator("#film-q-input").press("Enter")
        expect(page.locator(".film-q-rewatch")).to_be_visible()
        box = page.evaluate("""() => {
          const r = (s) => document.querySelector(s).getBoundingClientRect();
          const p = document.querySelector('.film-question');
          const [panel, screen, rewatch] = [r('.film-question'), r('.film-screen'), r('.film-q-rewatch')];
          return { inner: p.scrollHeight - p.clientHeight, wide: p.scrollWidth - p.clientWidth,
                   past: panel.bottom - screen.bottom,
                   out: Math.max(panel.left - rewatch.left, rewatch.right - panel.right,
                                 rewatch.bottom - panel.bottom) };
        }""")
        assert box["inner"] <= 1 and box["wide"] <= 1, box
        assert box["past"] <= 1, box
        assert box["out"] <= 0, box
    finally:
        ctx.close()


@pytest.mark.parametrize("lang", ["en", PT])
def test_on_a_phone_the_film_and_its_play_button_are_on_the_first_screen(browser, server_url, lang):
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    try:
        page = ctx.new_page()
        page.goto(server_url + ("" if lang == "en" else i18n.language(lang).prefix))
        ready(page)
        where = page.evaluate("""() => ({
          stage: document.querySelector('.film-stage').getBoundingClientRect().toJSON(),
          play: document.querySelector('.film-poster-play').getBoundingClientRect().toJSON(),
          meta: document.querySelector('.film-meta').getBoundingClientRect().top,
        })""")
        assert where["stage"]["bottom"] <= 844, where
        assert where["play"]["bottom"] <= 844, where
        assert where["meta"] > where["stage"]["bottom"], "the film's description comes after it on a phone"
    finally:
        ctx.close()


@pytest.mark.parametrize("typed, key", [
    ("272,5/16,5", "right"), ("285.736.960 ÷ 17.301.504", "right"),
    ("16,3", "nearly"), ("17", "close"), ("0,06", "inverted"), ("5", "hint"),
])
def test_the_pt_br_answer_box_reads_divisions_and_names_the_slip_in_portuguese(page, pt_url, pt_data, typed, key):
    q = pt_data["question"]
    page.goto(pt_url)
    ready(page)
    page.evaluate("window.canneryFilm.load()")
    loaded(page)
    page.evaluate("window.canneryFilm.pause()")
    seek(page, q["stop_s"])
    page.locator("#film-q-input").fill(typed)
    page.keyboard.press("Enter")
    if key == "right":
        expect(page.locator(".film-status")).to_have_text(q["right"])
    else:
        expect(page.locator(".film-q-feedback")).to_have_text(q[key])
        assert re.search(r"[ãçéõ]", q[key]), q[key]
