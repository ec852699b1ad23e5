"""On an exercise page: a stored progress record that does not
follow the schema (site/static/js/exercise/progress-schema.js) never stops the
page from mounting. That step starts from its starter code, the record is set
aside under cannery.progress.v1.set-aside (as it was), and the learner is told,
naming the field; later saves are kept.

One page for the whole file: each case writes localStorage, then reloads. The
context bypasses the CSP only so that wait_for_function can wait for an autosave
(the page's own CSP is tested in test_browser_exercise.py).
"""
from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect
from test_browser_exercise import EXERCISE, LONG, PASSED, check, open_page, type_code

from exercises import content

pytestmark = pytest.mark.browser

KEY = "cannery.progress.v1"
ASIDE = KEY + ".set-aside"
SCRATCH = "online-softmax/scratch"
COMPOSE = "online-softmax/compose"
STARTER = content.read(content.step("online-softmax", "scratch"), "starter.py")


@pytest.fixture(scope="module")
def page(browser, server_url):
    ctx, pg = open_page(browser, server_url + EXERCISE, bypass_csp=True, shared=False)
    expect(pg.locator("#step-scratch .cm-editor")).to_be_visible()
    yield pg
    ctx.close()


def stored_then_reload(page, text):
    """Store ``text`` as this browser's progress (nothing set aside yet), then reload."""
    page.evaluate("([key, text]) => { localStorage.clear(); localStorage.setItem(key, text); }", [KEY, text])
    page.console_errors.clear()
    page.reload()
    expect(page.locator("#step-scratch .cm-editor")).to_be_visible()


def stored(page, key=KEY):
    return json.loads(page.evaluate("(key) => localStorage.getItem(key)", key) or "null")


def type_and_wait_for_the_save(page, step, key, text):
    editor = page.locator(f"#step-{step} .cm-content")
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.insert_text(text)
    page.wait_for_function("([k, key, text]) => ((JSON.parse(localStorage.getItem(k) || 'null') || {steps: {}})"
                           ".steps[key] || {}).code?.includes(text)", arg=[KEY, key, text])


def test_a_code_that_is_a_number_mounts_the_starter_and_is_set_aside(page):
    other = {"code": "# my compose\n", "passed": True}
    stored_then_reload(page, json.dumps({"version": 1, "steps": {SCRATCH: {"code": 5, "checks": 2},
                                                                 COMPOSE: other}}))
    expect(page.locator("#step-scratch .cm-content")).to_contain_text(STARTER.strip().splitlines()[0])
    expect(page.locator("#step-compose .cm-content")).to_contain_text("# my compose")  # the good record loads
    words = f'steps["{SCRATCH}"].code should be text, not a number (5)'
    expect(page.locator("#progress-notice")).to_be_visible()
    expect(page.locator("#progress-notice")).to_contain_text(words)
    expect(page.locator("#progress-notice")).to_contain_text(ASIDE)
    expect(page.locator("#step-scratch .step-status")).to_contain_text(words)
    (entry,) = stored(page, ASIDE)
    assert entry["from"] == KEY and entry["step"] == SCRATCH and entry["data"] == {"code": 5, "checks": 2}
    assert stored(page)["steps"] == {COMPOSE: other}
    assert page.console_errors == []


def test_a_record_that_is_a_string_does_not_throw_while_the_learner_types(page):
    stored_then_reload(page, json.dumps({"version": 1, "steps": {SCRATCH: "oops"}}))
    expect(page.locator("#step-scratch .step-status")).to_contain_text(f'steps["{SCRATCH}"] should be a table')
    type_and_wait_for_the_save(page, "scratch", SCRATCH, "# typed after the reload")
    assert stored(page, ASIDE)[0]["data"] == "oops"
    assert page.console_errors == []


def test_steps_stored_as_a_list_are_set_aside_and_later_saves_are_kept(page):
    stored_then_reload(page, json.dumps({"version": 1, "steps": []}))
    expect(page.locator("#progress-notice")).to_contain_text("steps should be a table of step records")
    type_and_wait_for_the_save(page, "compose", COMPOSE, "# kept this time")
    page.reload()
    expect(page.locator("#step-compose .cm-content")).to_contain_text("# kept this time")
    expect(page.locator("#progress-notice")).to_be_hidden()  # set aside once, then gone
    assert stored(page, ASIDE)[0]["data"] == json.dumps({"version": 1, "steps": []})
    assert page.console_errors == []


def test_storage_that_refuses_every_write_still_counts_a_pass_and_offers_the_export(page):
    """LocalStorage full, or refused as in a private window."""
    page.evaluate("() => localStorage.clear()")
    page.reload()
    expect(page.locator("#step-scratch .cm-editor")).to_be_visible()
    page.evaluate("() => { window.realSetItem = Storage.prototype.setItem;"
                  " Storage.prototype.setItem = () => { throw new DOMException('full', 'QuotaExceededError'); }; }")
    try:
        type_code(page, "scratch", content.read(content.step("online-softmax", "scratch"), "solution.py"))
        section = check(page, "scratch")
        expect(section.locator(".step-status")).to_have_text(PASSED, timeout=LONG)
        expect(section.locator(".step-state")).to_have_text("passed")
        expect(section.locator(".solution")).to_be_visible()
        expect(page.locator("#progress-line .progress-k")).to_have_text("1")
        notice = page.locator("#progress-notice .progress-unsaved")
        expect(notice).to_contain_text("does not let the page save your progress")
        with page.expect_download() as info:
            notice.get_by_role("button", name="Export progress (JSON)").click()
        exported = json.loads(open(info.value.path(), encoding="utf-8").read())
        assert exported["steps"][SCRATCH]["passed"] is True
        assert page.evaluate("(key) => localStorage.getItem(key)", KEY) is None
    finally:
        page.evaluate("() => { Storage.prototype.setItem = window.realSetItem; }")
        page.reload()
