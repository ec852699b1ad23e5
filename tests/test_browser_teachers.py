"""In Chromium: the teachers' page.

A film moment's link (#t=…, the start of a cue in site/content/film.toml) opens
the lesson's film at that cue; axe finds nothing on the page in either language
or colour scheme; printed, it drops the page's controls and shows the solutions
that the screen keeps folded. One page for the whole file (its context bypasses
the CSP only so that axe can be injected).
"""
from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect
from test_browser_a11y import AXE, run_axe

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(browser):
    if not AXE.exists():
        pytest.skip("node_modules/axe-core missing: run `npm ci`")
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    pg = ctx.new_page()
    pg.console_errors = []
    pg.on("pageerror", lambda e: pg.console_errors.append(str(e)))
    yield pg
    ctx.close()


@pytest.fixture(scope="module")
def film(built_site) -> dict:
    return json.loads((built_site / "media" / "film.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("prefix", ["", "pt-BR/"])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_axe_finds_nothing_on_the_teachers_page(page, server_url, prefix, scheme):
    page.goto(server_url + prefix + "teachers/index.html")
    page.locator("details.solution-code").first.evaluate("(d) => { d.open = true; }")
    assert run_axe(page, scheme) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280


@pytest.mark.parametrize("prefix", ["", "pt-BR/"])
def test_on_a_phone_nothing_scrolls_sideways(page, server_url, artifacts, prefix):
    page.set_viewport_size({"width": 390, "height": 900})
    try:
        page.goto(server_url + prefix + "teachers/index.html")
        for details in page.locator("details.solution-code").all():
            details.evaluate("(d) => { d.open = true; }")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        page.screenshot(path=str(artifacts / f"teachers-{prefix.strip('/') or 'en'}-390.png"))
    finally:
        page.set_viewport_size({"width": 1280, "height": 900})


def test_printed_the_controls_go_and_the_solutions_show(page, server_url):
    page.goto(server_url + "teachers/index.html")
    code = page.locator("details.solution-code pre").first
    expect(code).to_be_hidden()  # folded on screen
    page.emulate_media(media="print")
    try:
        expect(page.locator(".language-switch")).to_be_hidden()
        expect(code).to_be_visible()
    finally:
        page.emulate_media(media="screen")


@pytest.mark.parametrize("prefix,cue", [("", "door"), ("pt-BR/", "rerun")])
def test_a_film_moment_opens_the_film_at_its_cue(page, server_url, film, prefix, cue):
    start = next(c["start_s"] for c in film["cues"] if c["id"] == cue)
    page.goto(server_url + prefix + "teachers/index.html")
    link = page.locator(f"#plan-short a.moment[data-cue='{cue}']")
    expect(link).to_have_attribute("href", f"../{prefix}index.html#t={start}".replace("../pt-BR/", "../../pt-BR/"))
    link.click()
    page.wait_for_url(f"**/{prefix}index.html#t={start}")
    page.wait_for_function("() => window.canneryFilm !== undefined && window.canneryFilm.loaded")
    page.wait_for_function("(t) => Math.abs(window.canneryFilm.time - t) < 0.01", arg=start)
    state = page.evaluate("() => ({time: window.canneryFilm.time, cue: window.canneryFilm.cue, "
                          "playing: window.canneryFilm.playing})")
    assert state["time"] == pytest.approx(start, abs=0.01)
    assert state["cue"] == cue and not state["playing"]
    assert page.console_errors == []
