"""Accessibility (WCAG 2.2 AA) in Chromium: axe-core in each state of the page,
in light and dark colour schemes; a keyboard-only journey; live regions; and
non-text contrast of chart marks and controls, which axe does not measure.

axe-core comes from node_modules (npm, pinned in package.json) and is injected
from that local copy. The axe tests that add it as a script tag use a context with
bypass_csp=True, because the CSP (rightly) refuses a script the site did not ship; the
keyboard journey adds it as an init script, which the CSP does not govern, and every other
test here runs under the real CSP.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect
from test_browser_hardening import open_page, press, wait_idle

import i18n

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
SCHEMES = ["light", "dark"]


@pytest.fixture
def axe_page(browser, server_url):
    """A page whose context bypasses CSP, for injecting axe-core only."""
    if not AXE.exists():
        pytest.skip("node_modules/axe-core missing: run `npm ci`")
    ctx = browser.new_context(viewport={"width": 1200, "height": 900}, bypass_csp=True)
    page = ctx.new_page()
    page.console_errors = []
    page.on("pageerror", lambda e: page.console_errors.append(str(e)))
    page.goto(server_url)
    page.wait_for_function("() => window.cannery && window.cannery.lab")
    yield page
    ctx.close()


def run_axe(page, scheme: str) -> list:
    """Violations (id, impact, targets, summary) under the given colour scheme."""
    page.emulate_media(color_scheme=scheme)
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    result = page.evaluate(
        """async (tags) => {
            const r = await axe.run(document, {
                runOnly: {type: 'tag', values: tags},
                rules: {'target-size': {enabled: true}},
                resultTypes: ['violations'],
            });
            return r.violations.map((v) => ({id: v.id, impact: v.impact,
                nodes: v.nodes.slice(0, 5).map((n) => ({target: n.target.join(' '), summary: n.failureSummary}))}));
        }""", TAGS)
    return result


def assert_no_violations(page, state: str, artifacts: Path, full_page: bool = False):
    """axe finds nothing on the page as it stands, in each colour scheme (SCHEMES, switched
    in place: the schemes differ only in CSS); a screenshot of each, a11y-STATE-SCHEME.png."""
    report = {}
    for scheme in SCHEMES:
        violations = run_axe(page, scheme)
        page.screenshot(path=str(artifacts / f"a11y-{state}-{scheme}.png"), full_page=full_page)
        if violations:
            report[scheme] = violations
    page.emulate_media(color_scheme="light")
    assert report == {}, json.dumps(report, indent=1, ensure_ascii=False)


def film_ready(page):
    return page.locator(".film-play").count() > 0 and page.evaluate("typeof window.canneryFilm !== 'undefined'")


# ---------------------------------------------------------------------------
# axe-core, four states here and the lab's results at the end of the keyboard journey,
# two colour schemes

def test_axe_finds_no_violations_on_the_initial_page(axe_page, artifacts):
    assert_no_violations(axe_page, "initial", artifacts)


def test_axe_finds_no_violations_while_the_film_plays(axe_page, artifacts):
    if not film_ready(axe_page):
        pytest.fail("the film player is missing")
    axe_page.click(".film-play")
    axe_page.wait_for_function("() => window.canneryFilm.playing && window.canneryFilm.time > 1", timeout=20_000)
    axe_page.locator("#film").scroll_into_view_if_needed()
    assert_no_violations(axe_page, "film-playing", artifacts)


def test_axe_finds_no_violations_with_the_question_open(axe_page, artifacts):
    if not film_ready(axe_page):
        pytest.fail("the film player is missing")
    stop = float(axe_page.get_attribute("#film-player", "data-question-stop"))
    axe_page.evaluate(f"window.canneryFilm.seek({stop})")
    axe_page.wait_for_function("() => window.canneryFilm.questionOpen")
    axe_page.locator("#film").scroll_into_view_if_needed()
    assert_no_violations(axe_page, "question-open", artifacts)
    axe_page.fill(".film-q-input", "3")
    axe_page.keyboard.press("Enter")          # a wrong answer: the hint and the rewatch button
    axe_page.wait_for_selector(".film-q-rewatch:not([hidden])")
    assert_no_violations(axe_page, "question-hint", artifacts)


def test_axe_finds_no_violations_with_errors_shown(axe_page, artifacts):
    press(axe_page, "#count-button", n=1024, d=16)
    press(axe_page, "#count-button", n="1.5", d="17")
    assert axe_page.inner_text("#n-error") and axe_page.inner_text("#d-error")
    # and a GPU failure in the alert, with its Retry button
    axe_page.evaluate("Object.defineProperty(Navigator.prototype, 'gpu', {configurable: true, get: () => undefined})")
    axe_page.fill("#n", "64")
    axe_page.fill("#d", "16")
    axe_page.click("#time-button")
    wait_idle(axe_page)
    assert "no WebGPU" in axe_page.inner_text("#lab-alert")
    press(axe_page, "#count-button", n="text")
    assert axe_page.inner_text("#n-error")
    axe_page.locator("#lab-form").scroll_into_view_if_needed()
    assert_no_violations(axe_page, "errors", artifacts)


# ---------------------------------------------------------------------------
# Keyboard only: no mouse at all

def tab_to(page, selector: str, limit: int = 80, key: str = "Tab"):
    """Press Tab until the focused element matches selector; returns presses used."""
    for i in range(limit):
        if page.evaluate("(s) => document.activeElement && document.activeElement.matches(s)", selector):
            return i
        page.keyboard.press(key)
    raise AssertionError(f"Tab never reached {selector}; focus is on "
                         + page.evaluate("document.activeElement.outerHTML.slice(0, 120)"))


def test_keyboard_only_journey_film_question_lab(browser, server_url, artifacts):
    """Play the film, answer its question, change N and d, press Count, Check and Time,
    all with the keyboard; focus is visible at each stop and never lost to <body>. Then,
    with the three results shown, axe finds nothing in either colour scheme (axe-core is
    injected as an init script, which the page's policy does not block, so the policy
    stays in force for the whole journey)."""
    if not AXE.exists():
        pytest.skip("node_modules/axe-core missing: run `npm ci`")
    ctx, page = open_page(browser, server_url, init=AXE.read_text(encoding="utf-8"))
    try:
        page.mouse.move(0, 0)  # (only to be sure the pointer hovers nothing)
        # film: play, then jump to the end with the slider; that skips the
        # question, and "Take the question" asks it
        tab_to(page, ".film-play")
        page.keyboard.press("Enter")
        page.wait_for_function("() => window.canneryFilm.playing", timeout=20_000)
        tab_to(page, ".film-seek")
        page.keyboard.press("End")
        page.wait_for_function("() => window.canneryFilm.skipped")
        tab_to(page, ".film-q-later")
        page.keyboard.press("Enter")
        page.wait_for_function("() => window.canneryFilm.questionOpen")
        assert page.evaluate("document.activeElement.id") == "film-q-input"
        page.keyboard.type("16.5")
        page.keyboard.press("Enter")
        page.wait_for_function("() => window.canneryFilm.answered")
        assert page.evaluate("document.activeElement.classList.contains('film-play')")
        # answering goes on from the answer, playing
        page.wait_for_function("() => window.canneryFilm.playing", polling=100)
        resume = page.evaluate("() => fetch(document.querySelector('[data-film]').dataset.film)"
                               ".then((r) => r.json()).then((f) => f.question.resume_s)")
        assert page.evaluate("window.canneryFilm.time") >= resume
        page.keyboard.press("Enter")           # pause
        page.wait_for_function("() => !window.canneryFilm.playing", polling=100)
        # the lab: N and d, then Count with Enter in the form
        tab_to(page, "#n")
        outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
        assert outline != "none", "focus must be visible"
        page.keyboard.press("Control+a")
        page.keyboard.type("300")
        tab_to(page, "#d")
        page.keyboard.press("Control+a")
        page.keyboard.type("32")
        page.keyboard.press("Enter")
        page.wait_for_selector("#count-total", timeout=120_000)
        wait_idle(page)
        assert "N = 300, d = 32" in page.inner_text("#count-body")
        # Check, then Time, each from the keyboard; focus stays on the button pressed
        tab_to(page, "#check-button")
        page.keyboard.press("Enter")
        assert page.evaluate("document.activeElement.id") == "check-button"
        page.wait_for_selector("#check-verdict", timeout=120_000)
        wait_idle(page)
        assert page.evaluate("document.activeElement.id") == "check-button"
        tab_to(page, "#time-button")
        page.keyboard.press("Space")
        page.wait_for_selector("#time-fused-ms", timeout=120_000)
        wait_idle(page)
        assert page.evaluate("document.activeElement.id") == "time-button"
        assert page.inner_text("#lab-status").startswith("Timed.")
        page.screenshot(path=str(artifacts / "a11y-keyboard-journey.png"))
        assert page.console_errors == []
        assert page.evaluate("window.__csp") == []
        page.locator("#lab .results").scroll_into_view_if_needed()
        assert_no_violations(page, "results", artifacts)
    finally:
        ctx.close()


def test_the_skip_link_is_the_first_stop_and_moves_focus_to_the_lab(browser, server_url):
    ctx, page = open_page(browser, server_url)
    try:
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.className") == "skip-link"
        assert page.locator(".skip-link").is_visible()
        page.keyboard.press("Enter")
        assert page.evaluate("location.hash") == "#lab"
        page.keyboard.press("Tab")
        assert page.evaluate("document.getElementById('lab').contains(document.activeElement)")
    finally:
        ctx.close()


# ---------------------------------------------------------------------------
# Live regions

def test_results_and_errors_are_announced_through_live_regions_and_none_is_assertive(browser, server_url):
    ctx, page = open_page(browser, server_url)
    try:
        status = page.locator("#lab-status")
        assert status.get_attribute("role") == "status" and status.get_attribute("aria-live") == "polite"
        assert page.get_attribute("#lab-alert", "role") == "alert"
        assert page.locator("[aria-live=assertive]").count() == 0
        # the film's caption region is polite (or not live), never assertive
        for live in page.locator(".film [aria-live]").all():
            assert live.get_attribute("aria-live") in ("polite", "off")
        press(page, "#count-button", n=4096, d=16, kernel="fused")
        assert page.inner_text("#lab-status") == "Counted: Fused, online softmax, 17,301,504 bytes."
        press(page, "#count-button", n=0)
        assert page.inner_text("#lab-status") == page.inner_text("#n-error")
        # results themselves sit outside the live region: one summary sentence is read, not a table
        assert page.locator("#lab-status table").count() == 0
    finally:
        ctx.close()


# ---------------------------------------------------------------------------
# Contrast that axe does not measure: chart marks, control borders, focus ring

CONTRAST_JS = """
() => {
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 1;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  function rgb(color) {
    ctx.clearRect(0, 0, 1, 1);
    ctx.fillStyle = '#000'; ctx.fillStyle = color; ctx.fillRect(0, 0, 1, 1);
    const [r, g, b] = ctx.getImageData(0, 0, 1, 1).data;
    return [r, g, b];
  }
  function lum([r, g, b]) {
    const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  }
  function ratio(a, b) {
    const [x, y] = [lum(rgb(a)), lum(rgb(b))].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  }
  const root = getComputedStyle(document.documentElement);
  const v = (name) => root.getPropertyValue(name).trim();
  const out = [];
  const bg = v('--bg'), raised = v('--bg-raised');
  for (const t of ['q', 'k', 'v', 's', 'p', 'o', 'm', 'l']) {
    // text in the concept's colour (tables, labels) on both backgrounds
    out.push({what: `text --c-${t} on --bg`, ratio: ratio(v('--c-' + t), bg), need: 4.5});
    out.push({what: `text --c-${t} on --bg-raised`, ratio: ratio(v('--c-' + t), raised), need: 4.5});
  }
  for (const t of ['q', 'k', 'v', 's', 'p', 'o']) {
    // the bar's own letter, drawn in --bg on the segment
    out.push({what: `bar label on --c-${t}`, ratio: ratio(bg, v('--c-' + t)), need: 4.5});
  }
  for (const [name, need] of [['--ink', 4.5], ['--ink-soft', 4.5], ['--error', 4.5], ['--ok', 4.5], ['--accent', 4.5],
                              ['--rule', 3], ['--focus', 3]]) {
    out.push({what: `${name} on --bg`, ratio: ratio(v(name), bg), need});
    out.push({what: `${name} on --bg-raised`, ratio: ratio(v(name), raised), need});
  }
  out.push({what: 'Count button text on --accent', ratio: ratio(bg, v('--accent')), need: 4.5});
  // what the browser actually paints: input borders and the bars' fills
  const input = document.getElementById('n');
  const cs = getComputedStyle(input);
  out.push({what: 'input border on its background', ratio: ratio(cs.borderTopColor, raised), need: 3});
  return out;
}
"""


@pytest.mark.parametrize("scheme", SCHEMES)
def test_text_chart_and_control_colours_meet_contrast_in_the(scheme, browser, server_url):
    ctx = browser.new_context(color_scheme=scheme)
    page = ctx.new_page()
    try:
        page.goto(server_url)
        # the site follows prefers-color-scheme
        bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
        assert bg == ("rgb(251, 250, 247)" if scheme == "light" else "rgb(21, 23, 28)")
        failing = [f"{r['what']}: {r['ratio']:.2f} < {r['need']}"
                   for r in page.evaluate(CONTRAST_JS) if r["ratio"] < r["need"]]
        assert failing == []
    finally:
        ctx.close()


def test_axe_is_not_blind_it_reports_a_planted_missing_alt_and_low_contrast(axe_page):
    axe_page.evaluate("""() => {
        const img = document.createElement('img'); img.src = 'static/favicon.svg'; document.body.appendChild(img);
        const p = document.createElement('p'); p.textContent = 'faint words';
        p.style.color = '#ddd'; p.style.background = '#fff';
        document.body.appendChild(p);
        const row = document.createElement('div');
        for (const t of ['a', 'b']) {
          const b = document.createElement('button'); b.textContent = t;
          b.style.cssText = 'min-width:0;min-height:0;width:10px;height:10px;padding:0;margin:0;font-size:6px;border:0';
          row.appendChild(b);
        }
        document.querySelector('#lab').appendChild(row);
    }""")
    ids = {v["id"] for v in run_axe(axe_page, "light")}
    assert {"image-alt", "color-contrast", "target-size"} <= ids


# ---------------------------------------------------------------------------
# Brazilian Portuguese (site/content/languages.toml): axe on the pt-BR lesson,
# module and an exercise page; the language switch by keyboard, keeping the lab's state

PT = "pt-BR/"
LAB_STATE = "#kernel=fused&n=4096&d=16&causal=0&M=16384"


def _axe_context(browser, url, width=1200):
    ctx = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)
    page = ctx.new_page()
    page.console_errors = []
    page.on("pageerror", lambda e: page.console_errors.append(str(e)))
    page.goto(url)
    return ctx, page


def test_axe_finds_no_violations_on_the_pt_br_lesson_with_results_and_errors(browser, server_url, artifacts):
    if not AXE.exists():
        pytest.skip("node_modules/axe-core missing: run `npm ci`")
    ctx, page = _axe_context(browser, server_url + PT + "index.html")
    try:
        page.wait_for_function("() => window.cannery && window.cannery.lab")
        assert page.evaluate("document.documentElement.lang") == "pt-BR"
        assert_no_violations(page, "pt-BR-initial", artifacts)
        press(page, "#count-button", n=300, d=32, kernel="fused")
        press(page, "#count-button", n="1.5", d="17")
        assert page.inner_text("#n-error") and page.inner_text("#d-error")
        page.locator("#lab").scroll_into_view_if_needed()
        assert_no_violations(page, "pt-BR-results-errors", artifacts)
        assert page.console_errors == []
    finally:
        ctx.close()


@pytest.mark.parametrize("path", ["module/index.html", "module/online-softmax/index.html"])
def test_axe_finds_no_violations_on_the_pt_br_module_and_exercise(path, browser, server_url, artifacts):
    if not AXE.exists():
        pytest.skip("node_modules/axe-core missing: run `npm ci`")
    ctx, page = _axe_context(browser, server_url + PT + path)
    try:
        assert page.evaluate("document.documentElement.lang") == "pt-BR"
        if "online-softmax" in path:
            expect(page.locator("#step-scratch .cm-editor")).to_be_visible(timeout=60_000)
            page.locator("#step-scratch .hint-button").click()
            expect(page.locator("#step-scratch .hint-item").first).to_be_visible()
            page.locator("#step-probe .show-answer").click()
        assert_no_violations(page, "pt-BR-" + path.replace("/", "_"), artifacts)
        assert page.console_errors == []
    finally:
        ctx.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_the_language_switch_by_keyboard_keeps_the_labs_state_both_ways(width, browser, server_url, artifacts):
    """Tab from the top of the page: the skip link, then the switch; Enter follows it,
    and the lab in the other language opens with the same settings; and back."""
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    page = ctx.new_page()
    try:
        for start, target, name in (("", PT, "Português (Brasil)"), (PT, "", "English")):
            state = LAB_STATE if start == "" else "#kernel=plain&n=1024&d=64&causal=1&M=32768"
            page.goto(server_url + start + "index.html" + state)
            expect(page.locator("#n")).to_have_value(state.split("n=")[1].split("&")[0])
            if start == PT:  # a setting changed by hand after the page opened is carried too
                press(page, "#count-button", n=2048)
                state = state.replace("n=1024", "n=2048")
            if start == PT:  # focus is in the form now: start again from the skip link
                page.focus(".skip-link")
            else:  # a fresh page: the first Tab reaches the skip link
                page.keyboard.press("Tab")
            assert page.evaluate("document.activeElement.className") == "skip-link"
            page.keyboard.press("Tab")
            link = page.locator(".language-switch a[data-language-switch]")
            expect(link).to_be_focused()
            expect(link).to_have_text(name)
            expect(link).to_be_in_viewport()
            page.screenshot(path=str(artifacts / f"language-switch-{start.strip('/') or 'en'}-{width}.png"))
            page.keyboard.press("Enter")
            page.wait_for_url(re.compile("^" + re.escape(server_url + target + "index.html#") + ".+"))
            url = page.url
            assert url.startswith(server_url + target + "index.html#"), url
            lang = "pt-BR" if target else "en"
            assert page.evaluate("document.documentElement.lang") == lang
            want = dict(kv.split("=") for kv in state.lstrip("#").split("&"))
            got = dict(kv.split("=") for kv in url.split("#", 1)[1].split("&"))
            assert {k: got.get(k) for k in want} == want, url
            expect(page.locator("#kernel")).to_have_value(want["kernel"])
            expect(page.locator("#n")).to_have_value(want["n"])
            expect(page.locator("#d")).to_have_value(want["d"])
            expect(page.locator("#workgroup_bytes")).to_have_value(want["M"])
            if want["causal"] == "1":
                expect(page.locator("#causal")).to_be_checked()
            else:
                expect(page.locator("#causal")).not_to_be_checked()
            assert page.evaluate("document.documentElement.scrollWidth") <= width
    finally:
        ctx.close()


# Scrolling regions and page navigation on a phone: at 390 px the module
# page's code block scrolled sideways with no way in by keyboard, and the module's and
# teachers' contents ran off the right edge ("The episod…").
SCROLLERS_UNREACHABLE = """() => {
  const focusable = 'a[href], button, input, select, textarea, [tabindex]:not([tabindex="-1"])';
  return [...document.querySelectorAll('body *')].filter((el) => {
    const cs = getComputedStyle(el);
    if (cs.display === 'none' || cs.visibility === 'hidden' || !el.getClientRects().length) return false;
    const scrolls = (/(auto|scroll)/.test(cs.overflowX) && el.scrollWidth > el.clientWidth + 1)
      || (/(auto|scroll)/.test(cs.overflowY) && el.scrollHeight > el.clientHeight + 1);
    return scrolls && el.tabIndex < 0 && !el.querySelector(focusable);
  }).map((el) => el.tagName.toLowerCase() + (el.className ? '.' + el.className : ''));
}"""


def _phone_pages(built_site):
    """The module page, the teachers' page and every exercise page, as paths from the root."""
    slugs = sorted(p.parent.name for p in (built_site / "module").glob("*/index.html") if p.parent.name != "class")
    return ["module/index.html", "teachers/index.html", *[f"module/{s}/index.html" for s in slugs]]


@pytest.mark.parametrize("lang", ["en", "pt-BR"])
def test_at_390_every_scrolling_region_takes_the_keyboard_and_the_contents_fit(browser, server_url,
                                                                                built_site, lang):
    prefix = "" if lang == "en" else i18n.language(lang).prefix
    ctx = browser.new_context(viewport={"width": 390, "height": 844})
    page = ctx.new_page()
    found = {}
    try:
        for path in _phone_pages(built_site):
            page.goto(server_url + prefix + path)
            unreachable = page.evaluate(SCROLLERS_UNREACHABLE)
            cut = page.evaluate("""() => [...document.querySelectorAll('header nav a')].filter((a) => {
                const r = a.getBoundingClientRect(); return r.width > 0 && (r.right > innerWidth + 0.5 || r.left < 0);
              }).map((a) => a.textContent.trim())""")
            if unreachable or cut:
                found[path] = {"unreachable": unreachable, "cut": cut}
        assert found == {}, json.dumps(found, indent=1, ensure_ascii=False)
    finally:
        ctx.close()
