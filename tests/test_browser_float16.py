"""The lab's float16 card in Chromium (SwiftShader WebGPU), in English and in Brazilian
Portuguese (issue 25 §3).

What is held here:
* nothing of the card (its module, its data) loads before its button is pressed;
* pressed, it shows the CPU mirror's result on the held-out rows: the rows lost without
  the max subtraction equal facts.json's count (overflow.held_out.float16), none with it;
* and the GPU's, where the adapter has shader-f16 (SwiftShader has not: the card then
  says "not on this GPU" and shows no GPU columns), row for row against the mirror;
* a data file that does not load gets a message and leaves the card as it was;
* 0 axe violations on the card, light and dark; in pt-BR every word translated and every
  number written the Brazilian way.
One page per language, shared by its tests (Pyodide starts once per page).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import expect
from test_browser_a11y import AXE, TAGS

from i18n import numbers

pytestmark = [pytest.mark.browser, pytest.mark.gpu]

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = json.loads((ROOT / "facts" / "facts.json").read_text("utf-8"))["overflow"]["held_out"]["float16"]
RIGHT, BROKEN = "fused-f16", "fused-f16-no-max"
PYTHON = 240_000  # ms: Pyodide's first start, then the mirror, on a shared CPU


def _open(browser, url, width=1280):
    ctx = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)  # for axe only
    page = ctx.new_page()
    page.requests = []
    page.console_errors = []
    page.on("request", lambda r: page.requests.append(r.url))
    page.on("console", lambda m: page.console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.console_errors.append(str(e)))
    page.goto(url)
    page.wait_for_function("() => window.cannery && window.cannery.lab")
    return ctx, page


def _run(page):
    """Press the card's button and wait until every head's result is shown."""
    before = list(page.requests)
    page.locator("#f16-button").click()
    expect(page.locator("#f16-body .f16-head")).to_have_count(len(SUMMARY["heads"]), timeout=PYTHON)
    expect(page.locator("#f16-button")).to_be_enabled(timeout=PYTHON)
    return before


def _probe(page):
    return page.evaluate("async () => (await import('/static/js/gpu/index.js')).probeGpu()")


@pytest.fixture(scope="module")
def card(browser, server_url):
    ctx, page = _open(browser, server_url + "#lab")
    page.before = _run(page)
    yield page
    ctx.close()


@pytest.fixture(scope="module")
def card_pt(browser, server_url):
    ctx, page = _open(browser, server_url + "pt-BR/index.html#lab")
    page.before = _run(page)
    yield page
    ctx.close()


def test_nothing_of_the_card_loads_before_it_is_pressed(card, server_url):
    early = [u for u in card.before if "float16" in u or "held_out_f16" in u]
    assert early == [], early
    later = [u[len(server_url):] for u in card.requests]
    assert "py/facts/held_out_f16.json" in later and "static/js/lab/float16.js" in later
    assert all(u.startswith(server_url) for u in card.requests), "a request left the origin"


def test_the_card_shows_the_mirrors_lost_rows_as_facts_json_counts_them(card):
    group = numbers("en").group
    lost = SUMMARY["rows_lost"]
    assert card.inner_text("#f16-cpu-broken") == group(lost[BROKEN])
    assert card.inner_text("#f16-cpu-right") == group(lost[RIGHT]) == "0"
    assert card.inner_text("#f16-lost") == group(lost[BROKEN])
    assert card.inner_text("#f16-over") == group(SUMMARY["overflowing_scores"])
    rows = card.locator("#f16-table tbody tr")
    expect(rows).to_have_count(len(SUMMARY["heads"]))
    for i, head in enumerate(SUMMARY["heads"]):
        cells = rows.nth(i).inner_text()
        assert f"layer {head['layer']}, head {head['head']}" in cells
        assert group(head["rows_lost"][BROKEN]) in cells
    # the picture marks exactly the lost rows, one mark per row of every head
    assert card.locator(".f16-strip span.lost").count() == lost[BROKEN]
    assert card.locator(".f16-strip .f16-line span").count() == SUMMARY["rows"]
    assert "With it, none do." in card.inner_text("#f16-headline")
    assert card.console_errors == []


def test_the_gpu_runs_the_kernels_where_it_has_shader_f16_and_says_so_where_not(card):
    probe = _probe(card)
    note = card.locator("#f16-gpu-note")
    group = numbers("en").group
    if probe["ok"] and probe["features"]["f16"]:
        expect(note).to_have_attribute("data-state", "ok")
        assert card.inner_text("#f16-gpu-broken") == card.inner_text("#f16-cpu-broken")
        assert card.inner_text("#f16-gpu-right") == "0"
        assert "row for row" in card.inner_text("#f16-agree")
    else:
        expect(note).to_have_attribute("data-state", "no-f16" if probe["ok"] else "none")
        if probe["ok"]:
            assert "Not on this GPU" in note.inner_text() and "shader-f16" in note.inner_text()
        assert card.locator("#f16-gpu-broken, #f16-gpu-right, #f16-agree").count() == 0
        # the mirror's result is there all the same
        assert card.inner_text("#f16-cpu-broken") == group(SUMMARY["rows_lost"][BROKEN])


def _axe(page, scheme):
    page.emulate_media(color_scheme=scheme)
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    return page.evaluate(
        """async (tags) => (await axe.run({include: ['#f16-card']}, {runOnly: {type: 'tag', values: tags},
             rules: {'target-size': {enabled: true}}, resultTypes: ['violations']}))
             .violations.map((v) => ({id: v.id, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' '))}))""",
        TAGS)


@pytest.mark.parametrize("lang", ["en", "pt-BR"])
def test_axe_finds_no_violations_on_the_card(card, card_pt, lang, artifacts):
    page = card if lang == "en" else card_pt
    if not AXE.exists():
        pytest.skip("node_modules/axe-core missing: run `npm ci`")
    found = {scheme: _axe(page, scheme) for scheme in ("light", "dark")}
    page.emulate_media(color_scheme="light")
    page.locator("#f16-card").screenshot(path=str(artifacts / f"lab-float16-{lang}.png"))
    assert found == {"light": [], "dark": []}


def test_the_card_in_pt_br_has_its_words_and_numbers(card_pt):
    group = numbers("pt-BR").group
    lost = SUMMARY["rows_lost"]
    assert card_pt.inner_text("#f16-cpu-broken") == group(lost[BROKEN])
    assert card_pt.inner_text("#f16-over") == group(SUMMARY["overflowing_scores"])
    assert group(SUMMARY["rows"]) in card_pt.inner_text("#f16-headline")
    text = card_pt.inner_text("#f16-card")
    for english in ("Without the", "rows", "head ", "CPU mirror", "Run in float16", "the edge"):
        assert english not in text, english
    for words in ("Rodar em float16", "espelho em CPU", "camada 0, cabeça"):
        assert words in text, words
    probe = _probe(card_pt)
    if probe["ok"] and not probe["features"]["f16"]:
        assert "Não nesta GPU" in card_pt.inner_text("#f16-gpu-note")
    assert card_pt.console_errors == []


def test_a_data_file_that_does_not_load_gets_a_message_and_nothing_is_lost(browser, server_url):
    ctx, page = _open(browser, server_url + "#lab")
    try:
        page.route("**/py/facts/held_out_f16.json", lambda route: route.fulfill(status=404, body="gone"))
        page.locator("#f16-button").click()
        expect(page.locator("#f16-alert")).to_contain_text("Could not load the held-out sentences: HTTP 404")
        expect(page.locator("#f16-button")).to_be_enabled()
        assert page.inner_text("#f16-body") == ""
        assert "The kernels run on your GPU" in page.inner_text("#f16-card")
    finally:
        ctx.close()
