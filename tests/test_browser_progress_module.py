"""On the module page: Import progress refuses a file that does
not follow the schema (site/static/js/exercise/progress-schema.js) with a
message that names the field, and replaces nothing stored until a file
validates; stored text that is no progress file is set aside and the page
still works. The learner's optional name goes into the exported file.

One page for the whole file.
"""
from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect
from test_browser_exercise import TOTAL, open_page

pytestmark = pytest.mark.browser

KEY = "cannery.progress.v1"
KEPT = {"version": 1, "steps": {"online-softmax/predict": {"passed": True, "answer": {"plain_bytes": "1"}},
                                "online-softmax/scratch": {"passed": True, "code": "# mine\n"}}}


@pytest.fixture(scope="module")
def page(browser, server_url):
    ctx, pg = open_page(browser, server_url + "module/index.html", shared=False)  # kept for the module
    expect(pg.locator("#progress-line")).to_be_visible()
    yield pg
    ctx.close()


def with_progress(page, text):
    page.evaluate("([key, text]) => { localStorage.clear(); localStorage.setItem(key, text); }", [KEY, text])
    page.reload()
    expect(page.locator("#progress-line")).to_be_visible()


def stored(page):
    return json.loads(page.evaluate("(key) => localStorage.getItem(key)", KEY) or "null")


# (file name, its text, the status the page shows)
REFUSED = [
    ("steps-list.json", json.dumps({"version": 1, "steps": []}),
     "Could not import steps-list.json: steps should be a table of step records keyed by step id, not a list. "
     "Your progress is unchanged."),
    ("version-text.json", json.dumps({"version": "1", "steps": {}}),
     'Could not import version-text.json: version should be a whole number, 0 or more, not text ("1"). '
     "Your progress is unchanged."),
    ("version-negative.json", json.dumps({"version": -1, "steps": {}}),
     "Could not import version-negative.json: version should be a whole number, 0 or more, not a number (-1). "
     "Your progress is unchanged."),
    ("bad.json", "{this is not json",
     "Could not import bad.json: the file is not JSON. Your progress is unchanged."),
    ("code-number.json", json.dumps({"version": 1, "steps": {"online-softmax/scratch": {"code": 5}}}),
     'Could not import code-number.json: steps["online-softmax/scratch"].code should be text, not a number (5). '
     "Your progress is unchanged."),
]


@pytest.mark.parametrize("name,text,status", REFUSED, ids=[r[0] for r in REFUSED])
def test_a_bad_file_is_refused_naming_the_field_and_nothing_stored_changes(page, tmp_path, name, text, status):
    with_progress(page, json.dumps(KEPT))
    expect(page.locator("#progress-line")).to_have_text(f"Progress: 2 of {TOTAL} steps")
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    page.set_input_files("#progress-import", str(path))
    expect(page.locator("#progress-status")).to_have_text(status)
    expect(page.locator("#progress-line")).to_have_text(f"Progress: 2 of {TOTAL} steps")
    assert stored(page) == KEPT
    assert page.console_errors == []


def test_stored_text_that_is_no_progress_is_set_aside_and_the_page_still_works(page, tmp_path):
    with_progress(page, '{"version": 1, "steps": {"online-softmax/predict": {"passed": tr')
    expect(page.locator("#progress-notice")).to_contain_text("Your saved progress could not be read "
                                                             "(it is not JSON)")
    expect(page.locator("#progress-line")).to_have_text(f"Progress: 0 of {TOTAL} steps")
    good = tmp_path / "good.json"
    good.write_text(json.dumps(KEPT), encoding="utf-8")
    page.set_input_files("#progress-import", str(good))
    expect(page.locator("#progress-status")).to_have_text("Imported: 2 steps passed.")
    expect(page.locator("#progress-line")).to_have_text(f"Progress: 2 of {TOTAL} steps")
    aside = json.loads(page.evaluate("(key) => localStorage.getItem(key)", KEY + ".set-aside"))
    assert aside[0]["step"] is None and aside[0]["data"].startswith('{"version": 1')


def test_the_name_goes_into_the_exported_file(page, tmp_path):
    with_progress(page, json.dumps(KEPT))
    page.fill("#progress-name", "  Ana Souza ")
    page.locator("#progress-name").blur()
    with page.expect_download() as info:
        page.click("#progress-export")
    path = tmp_path / "progress.json"
    info.value.save_as(path)
    # the file is named for the learner, so a teacher can tell the files apart
    assert info.value.suggested_filename == "cannery-progress-ana-souza.json"
    expect(page.locator("#progress-status")).to_have_text("Exported to cannery-progress-ana-souza.json.")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["name"] == "Ana Souza" and data["steps"] == KEPT["steps"]
    page.reload()
    expect(page.locator("#progress-name")).to_have_value("Ana Souza")


# Import asks (merge or replace), and what it replaced can be restored.
OTHER = {"version": 2, "steps": {"online-softmax/compose": {"passed": True, "code": "# theirs\n"},
                                 "online-softmax/scratch": {"code": "# theirs, unfinished\n"}}}


def test_import_asks_merge_or_replace_and_the_replaced_progress_can_be_restored(page, tmp_path):
    with_progress(page, json.dumps(KEPT))
    path = tmp_path / "other.json"
    path.write_text(json.dumps(OTHER), encoding="utf-8")
    dialog, restore = page.locator("#import-dialog"), page.locator("#progress-restore")
    expect(restore).to_be_hidden()
    page.set_input_files("#progress-import", str(path))
    expect(dialog).to_be_visible()
    expect(page.locator("#import-what")).to_contain_text("other.json holds 1 passed steps; this browser holds 2.")
    assert stored(page) == KEPT  # nothing changes until the teacher or learner chooses
    page.keyboard.press("Escape")
    expect(page.locator("#progress-status")).to_have_text("Nothing imported. Your progress is unchanged.")
    assert stored(page) == KEPT
    # merge, by keyboard: every step of both, and for scratch the record that passed
    page.set_input_files("#progress-import", str(path))
    page.locator("#import-merge").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#progress-status")).to_have_text("Merged other.json: 3 steps passed now.")
    expect(page.locator("#progress-line")).to_have_text(f"Progress: 3 of {TOTAL} steps")
    compose = OTHER["steps"]["online-softmax/compose"]
    assert stored(page)["steps"] == {**KEPT["steps"], "online-softmax/compose": compose}
    expect(restore).to_be_visible()
    expect(restore).to_have_accessible_name("Undo the import")
    restore.click()
    expect(page.locator("#progress-status")).to_have_text("Restored: 2 steps passed, as before the import.")
    assert stored(page)["steps"] == KEPT["steps"]
    expect(restore).to_be_hidden()
    # replace: the file's progress alone, and undone the same way
    page.set_input_files("#progress-import", str(path))
    page.click("#import-replace")
    expect(page.locator("#progress-status")).to_have_text("Replaced with other.json: 1 step passed.")
    assert stored(page)["steps"] == OTHER["steps"]
    page.reload()  # the record kept survives a reload
    page.click("#progress-restore")
    expect(page.locator("#progress-line")).to_have_text(f"Progress: 2 of {TOTAL} steps")
    assert stored(page)["steps"] == KEPT["steps"]
    assert page.console_errors == []


def test_a_file_too_large_is_refused_before_it_is_read(page, tmp_path):
    with_progress(page, json.dumps(KEPT))
    huge = tmp_path / "huge.json"
    huge.write_bytes(b" " * (5 * 1024 * 1024))
    page.set_input_files("#progress-import", str(huge))
    expect(page.locator("#progress-status")).to_have_text(
        "Could not import huge.json: it is 5.0 MiB, and a progress file is at most 4 MiB. Your progress is unchanged.")
    assert stored(page) == KEPT
