"""In Chromium: the exercise engine and the module page, under the
site's real CSP.

For each step of exercise 1: a correct solution typed into the editor passes,
a typical wrong one shows the failing test with its input, and a loop that
never ends is stopped while the page stays usable. Progress survives a
reload, and export → reset → import restores it. No CSP violation and no
request to another origin; axe finds nothing on the module and exercise pages.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import wrong_expected
from playwright.sync_api import expect
from test_browser_a11y import AXE, assert_no_violations
from test_browser_hardening import WATCH, watch_offsite

from exercises import content, runner

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent

SLUG = "online-softmax"
EXERCISE = f"module/{SLUG}/index.html"
CODE_STEPS = ["scratch", "compose", "probe"]
WRONG_FOR = {"scratch": "no_rescale.py", "compose": "off_by_one_last_tile.py", "probe": "floor_tiles.py"}
LOOP = "def {name}(*args, **kwargs):\n    while True:\n        pass\n"
PASSED = re.compile(r"^All \d+ tests pass\. Step passed\.$")
LONG = 120_000  # ms: Pyodide's first start on a busy two-core machine
# Steps on the progress line: every exercise's steps (or, run elsewhere, its ladder's rungs).
TOTAL = sum(len(content.load(s)["steps"]) or len(content.load(s).get("ladder", [])) for s in content.slugs())


def _read(step, name):
    return content.read(content.step(SLUG, step), name)


def _wrong(step, name):
    return content.wrong_answers(content.step(SLUG, step))[name]


def open_page(browser, url, *, bypass_csp=False, viewport=(1280, 900), shared=True):
    """An exercise page that records console errors, CSP violations and requests to
    another origin (test_browser_hardening.watch_offsite). ``shared``: in the worker's
    shared profile (conftest.SharedProfile), for a page that lives one test; a module's
    page, or one with ``bypass_csp``, gets a context of its own. Returns (context, page)."""
    if shared and not bypass_csp:
        ctx = browser.profile.lease(url)
        page = ctx.new_page(viewport)
    else:
        ctx = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}, bypass_csp=bypass_csp,
                                  accept_downloads=True)
        page = ctx.new_page()
    try:
        page.console_errors = []
        page.on("console", lambda m: page.console_errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: page.console_errors.append(f"pageerror: {e}"))
        watch_offsite(page, url, None if shared and not bypass_csp else ctx)
        page.add_init_script(WATCH)
        page.goto(url)
    except BaseException:
        ctx.close()   # the caller's try has not begun: give back the page (and a shared lease)
        raise
    return ctx, page


def type_code(page, step, code):
    """Replace the step's editor content as a learner pasting code would."""
    editor = page.locator(f"#step-{step} .cm-content")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(code)
    expect(page.locator(f"#step-{step} .cm-content")).to_contain_text(code.strip().splitlines()[-1].strip())


def check(page, step):
    section = page.locator(f"#step-{step}")
    section.locator(".check-button").click()
    expect(section.locator(".check-button")).to_be_enabled(timeout=LONG)
    return section


@pytest.fixture(scope="module")
def exercise(browser, server_url):
    ctx, page = open_page(browser, server_url + EXERCISE, shared=False)  # kept for the module
    expect(page.locator("#step-scratch .cm-editor")).to_be_visible()
    yield page
    ctx.close()


# ---------------------------------------------------------------------------
# Each step: correct passes, wrong names its input, a loop is stopped.

def test_predict_a_wrong_guess_fails_and_a_close_one_passes_then_the_reasoning_shows(exercise):
    page = exercise
    section = page.locator("#step-predict")
    page.fill("#predict-plain", "4,194,304")  # the score table once: a typical wrong guess
    page.fill("#predict-fused", "524288")
    check(page, "predict")
    expect(section.locator(".step-status")).to_have_text("0 of 2 tests pass.")
    expect(section.locator(".test-result.fail").first).to_contain_text("N = 1,024, d = 32, M = 16,384 B")
    expect(section.locator(".test-result.fail").first).to_contain_text("too low")
    expect(section.locator(".solution")).to_be_hidden()
    page.fill("#predict-plain", "21,000,000")   # within 10% of the emulator's 21,233,664
    page.fill("#predict-fused", "4,500,000")    # within 10% of 4,456,448
    check(page, "predict")
    # graded by the first whole prediction: the second guess, told "too low", passes late
    expect(section.locator(".step-status")).to_have_text(
        "All 2 tests pass. Step passed after the reveal: the grade is your first whole prediction, "
        "and that one missed.")
    expect(section.locator(".step-state")).to_have_text("passed after the reveal")
    record = json.loads(page.evaluate("localStorage.getItem('cannery.progress.v1')"))["steps"][f"{SLUG}/predict"]
    assert record["afterReveal"] is True and record["firstAnswer"] == {"plain_bytes": "4,194,304",
                                                                       "fused_bytes": "524288"}
    expect(section.locator(".solution .after")).to_be_visible()
    expect(section.locator(".solution .after")).to_contain_text("21,233,664")


@pytest.mark.parametrize("step", CODE_STEPS)
def test_a_typical_wrong_answer_shows_the_failing_test_with_its_input(exercise, step):
    page = exercise
    source = _wrong(step, WRONG_FOR[step])
    type_code(page, step, source)
    section = check(page, step)
    expect(section.locator(".step-status")).to_have_text(re.compile(r"^\d+ of \d+ tests pass\.$"))
    report = runner.check(SLUG, step, source)
    first = next(r for r in report["results"] if not r["ok"])
    failing = section.locator(".test-result.fail").first
    expect(failing.locator(".result-message")).to_have_text(first["message"])
    expect(failing.locator(".result-values")).to_contain_text(first["input"])
    if step == "scratch":
        expect(failing.locator(".result-message")).to_have_text(
            "scores [1, 2, 3, 0], block 2: expected l = 1.5530, got 2.4177")


# The answers whose entry in wrong/expected.toml has `page`: right numbers without the skill
# (a whole-row softmax, a copy of the scores, a strip of them) and the imports of our answer.
IN_PAGE = [(step, name, e) for step in CODE_STEPS
           for name, e in wrong_expected.load(content.step(SLUG, step))[1].items() if "page" in e]


@pytest.mark.parametrize("step,name,exp", IN_PAGE, ids=[f"{s}-{n[:-3]}" for s, n, _ in IN_PAGE])
def test_right_numbers_without_the_skill_or_an_import_of_the_answer_fail_in_the_page_saying_what_it_did(
        exercise, step, name, exp):
    # The case: a whole-row softmax that ignores block_rows and block_cols used to get
    # "All 5 tests pass" in Compose, and tick the objective "A tiled forward pass". The page
    # fails the tests the expectation lists, and one of them says what the code did or held.
    page = exercise
    type_code(page, step, _wrong(step, name))
    section = check(page, step)
    if exp["fails"] == []:  # refused as it loads: the traceback names the module
        expect(section.locator(".test-result.fail .traceback")).to_contain_text(exp["page"])
        return
    total = len(runner.check(SLUG, step, _wrong(step, name))["results"])
    expect(section.locator(".step-status")).to_have_text(f"{total - len(exp['fails'])} of {total} tests pass.")
    failing = section.locator(".test-result.fail")
    expect(failing).to_have_count(len(exp["fails"]))
    expect(failing.filter(has_text=exp["page"]).first).to_be_visible()
    expect(section.locator(".step-state")).to_have_text("not passed yet")


def test_a_loop_that_never_ends_is_stopped_and_the_page_recovers(exercise):
    # One step: the 10 s limit is the runner's, the same for every step's request.
    page, step = exercise, "compose"
    name = content.step(SLUG, step)["names"][0]
    type_code(page, step, LOOP.format(name=name))
    section = check(page, step)
    expect(section.locator(".step-status")).to_contain_text("Stopped after 10 s", timeout=LONG)
    expect(section.locator(".cm-content")).to_contain_text("while True")  # the code is kept
    type_code(page, step, _read(step, "solution.py"))
    check(page, step)
    expect(section.locator(".step-status")).to_have_text(PASSED, timeout=LONG)


@pytest.mark.parametrize("step", CODE_STEPS)
def test_the_correct_solution_passes_and_the_step_is_marked(exercise, step):
    page = exercise
    section = page.locator(f"#step-{step}")
    type_code(page, step, _read(step, "solution.py"))
    check(page, step)
    expect(section.locator(".step-status")).to_have_text(PASSED)
    expect(section.locator(".step-state")).to_have_text("passed")
    expect(section.locator(".solution")).to_be_visible()
    expect(page.locator(f'.ladder-state[data-step="{SLUG}/{step}"]')).to_have_text("(passed)")


def test_run_shows_prints_and_an_error_trimmed_to_the_learners_lines(exercise):
    page = exercise
    type_code(page, "scratch", "print('tiles', [1, 2])\nx = 1 / 0\n")
    section = page.locator("#step-scratch")
    section.locator(".run-button").click()
    expect(section.locator(".printed")).to_contain_text("tiles [1, 2]", timeout=LONG)
    expect(section.locator(".printed .error-text")).to_contain_text('File "your_code.py", line 2')
    expect(section.locator(".printed .error-text")).to_contain_text("ZeroDivisionError")
    expect(section.locator(".printed")).not_to_contain_text("exercises/runner.py")


def test_cancel_stops_a_run_at_once_and_the_next_check_works(exercise):
    page = exercise
    type_code(page, "scratch", LOOP.format(name="online_softmax") + "online_softmax()\n")
    section = page.locator("#step-scratch")
    section.locator(".run-button").click()
    expect(section.locator(".cancel-button")).to_be_visible()
    section.locator(".cancel-button").click()
    expect(section.locator(".step-status")).to_have_text(re.compile("^Cancelled"))
    expect(section.locator(".cancel-button")).to_be_hidden()
    type_code(page, "scratch", _read("scratch", "solution.py"))
    check(page, "scratch")
    expect(section.locator(".step-status")).to_contain_text("Step passed", timeout=LONG)


def test_hints_open_one_at_a_time_and_the_solution_is_offered_after_three_failed_checks(browser, server_url):
    ctx, page = open_page(browser, server_url + EXERCISE)
    try:
        section = page.locator("#step-compose")
        hints = section.locator(".hint-item")
        n = hints.count()
        assert n >= 3
        expect(hints.first).to_be_hidden()
        section.locator(".hint-button").click()
        expect(hints.nth(0)).to_be_visible()
        expect(hints.nth(1)).to_be_hidden()
        expect(section.locator(".hint-button")).to_have_text(f"Show a hint (2 of {n})")
        type_code(page, "compose", _wrong("compose", "no_rescale.py"))
        for _ in range(3):
            expect(section.locator(".solution")).to_be_hidden()
            check(page, "compose")
            expect(section.locator(".step-status")).to_contain_text("tests pass.", timeout=LONG)
        expect(section.locator(".solution")).to_be_visible()
        assert page.evaluate("window.__csp") == []
    finally:
        ctx.close()


def test_escape_then_tab_leaves_the_editor(exercise):
    page = exercise
    page.locator("#step-scratch .cm-content").click()
    page.keyboard.press("Tab")  # indents: the editor keeps focus
    assert page.evaluate("document.activeElement.classList.contains('editor-host')")
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.classList.contains('run-button')")


def test_the_exercise_page_broke_no_csp_rule_and_asked_no_other_origin(exercise):
    # after every test above has run Python, typed, checked and cancelled on this page
    assert exercise.evaluate("window.__csp") == []
    assert exercise.offsite == []
    assert exercise.console_errors == []
    # the editor's styles are constructable sheets in its shadow root, not <style> elements
    sheets = exercise.evaluate(
        "document.querySelector('#step-scratch .editor-host').shadowRoot.adoptedStyleSheets.length")
    assert sheets >= 1


def test_the_csp_listener_is_not_blind_to_a_style_element(exercise):
    exercise.evaluate("""() => { const s = document.createElement('style');
        s.textContent = 'body{}'; document.head.appendChild(s); }""")
    expect(exercise.locator("body")).to_be_visible()
    exercise.wait_for_timeout(200)
    violations = exercise.evaluate("window.__csp")
    assert violations and violations[0]["directive"].startswith("style-src")
    exercise.evaluate("window.__csp.length = 0")


# ---------------------------------------------------------------------------
# Progress: reload, export → reset → import, migration, the module page.

def test_progress_survives_reload_and_export_reset_import_restores_it(browser, server_url, tmp_path):
    ctx, page = open_page(browser, server_url + EXERCISE)
    try:
        type_code(page, "scratch", _read("scratch", "solution.py"))
        check(page, "scratch")
        expect(page.locator("#step-scratch .step-state")).to_have_text("passed", timeout=LONG)
        type_code(page, "compose", "# my work in progress\n")
        page.wait_for_timeout(500)  # autosave settles
        page.reload()
        expect(page.locator("#step-scratch .step-state")).to_have_text("passed")
        expect(page.locator("#step-compose .cm-content")).to_contain_text("my work in progress")
        expect(page.locator("#progress-line")).to_have_text(f"Module progress: 1 of {TOTAL} steps")
        with page.expect_download() as info:
            page.click("#progress-export")
        saved = tmp_path / "progress.json"
        info.value.save_as(saved)
        data = json.loads(saved.read_text())
        assert data["version"] == 2 and data["steps"][f"{SLUG}/scratch"]["passed"] is True
        page.click("#progress-reset")
        expect(page.locator("#reset-dialog")).to_be_visible()
        page.click("#reset-confirm")
        expect(page.locator("#progress-line")).to_have_text(f"Module progress: 0 of {TOTAL} steps")
        expect(page.locator("#step-scratch .step-state")).to_have_text("not passed yet")
        expect(page.locator("#step-compose .cm-content")).to_contain_text("def flash_forward")  # the starter again
        page.set_input_files("#progress-import", str(saved))
        expect(page.locator("#progress-status")).to_have_text("Imported: 1 step passed.")
        expect(page.locator("#progress-line")).to_have_text(f"Module progress: 1 of {TOTAL} steps")
        expect(page.locator("#step-compose .cm-content")).to_contain_text("my work in progress")
        page.reload()
        expect(page.locator("#step-scratch .step-state")).to_have_text("passed")
        # a file that is not progress is refused and changes nothing
        bad = tmp_path / "bad.json"
        bad.write_text("[1, 2, 3]")
        page.set_input_files("#progress-import", str(bad))
        expect(page.locator("#progress-status")).to_contain_text("Your progress is unchanged")
        expect(page.locator("#progress-line")).to_have_text(f"Module progress: 1 of {TOTAL} steps")
        assert page.evaluate("window.__csp") == [] and page.offsite == []
    finally:
        ctx.close()


def test_progress_from_an_older_unversioned_key_is_migrated(browser, server_url):
    ctx, page = open_page(browser, server_url + "module/index.html")
    try:
        page.evaluate("""() => { localStorage.clear(); localStorage.setItem('cannery.progress',
            JSON.stringify({passed: ['online-softmax/predict', 'online-softmax/scratch'],
                            code: {'online-softmax/compose': '# old'}})); }""")
        page.reload()
        expect(page.locator("#progress-line")).to_have_text(f"Progress: 2 of {TOTAL} steps")
        stored = json.loads(page.evaluate("localStorage.getItem('cannery.progress.v1')"))
        assert stored["version"] == 2 and stored["steps"]["online-softmax/compose"]["code"] == "# old"
        assert page.evaluate("localStorage.getItem('cannery.progress')") is None
    finally:
        ctx.close()


def test_the_module_page_fills_from_progress_and_downloads_the_passing_code(browser, server_url, tmp_path):
    ctx, page = open_page(browser, server_url + "module/index.html")
    try:
        expect(page.locator("#progress-line")).to_have_text(f"Progress: 0 of {TOTAL} steps")
        page.click("#download-code")
        expect(page.locator("#download-status")).to_have_text(re.compile("^Pass a step first"))
        steps = {f"{SLUG}/{s}": {"passed": True, "passedCode": _read(s, "solution.py"),
                                 "passedAt": "2026-11-30T18:00:00Z"}
                 for s in ("predict", "scratch", "compose")}
        page.evaluate("(s) => localStorage.setItem('cannery.progress.v1', JSON.stringify({version: 1, steps: s}))",
                      steps)
        page.reload()
        expect(page.locator("#progress-line")).to_have_text(f"Progress: 3 of {TOTAL} steps")
        expect(page.locator(".ex-status").first).to_have_text("3 / 4 steps passed")
        monoid = page.locator(".objective", has_text="a monoid")
        expect(monoid).to_have_class(re.compile(r"\bdone\b"))
        expect(monoid.locator(".objective-state")).to_have_text("(Done)")
        counter = page.locator(".objective", has_text="agrees with the emulator")
        expect(counter.locator(".objective-state")).to_have_text("(Not yet)")
        module_toml = tomllib.loads((ROOT / "site/content/module.toml").read_text(encoding="utf-8"))
        expect(page.locator(".ex-coming")).to_have_count(
            len([e for e in module_toml["exercises"] if e["slug"] not in content.slugs()]))
        expect(page.locator("#exercises-table tbody tr")).to_have_count(5)
        with page.expect_download() as info:
            page.click("#download-code")
        path = tmp_path / "mine.py"
        info.value.save_as(path)
        text = path.read_text()
        assert text.startswith("# Your code from Cannery's FlashAttention module")
        assert "def online_softmax" in text and "def flash_forward" in text and "def io_bytes" not in text
        assert "step Scratch" in text and "--step compose" in text
        # the file it writes passes the offline checker for both steps
        out = subprocess.run([sys.executable, "-m", "exercises", "check", SLUG, str(path)], capture_output=True,
                             text=True, cwd=str(ROOT))
        assert out.returncode == 0, out.stdout + out.stderr
        assert page.evaluate("window.__csp") == [] and page.offsite == [] and page.console_errors == []
    finally:
        ctx.close()


def test_a_lab_link_opens_the_lab_at_that_state(browser, server_url):
    ctx, page = open_page(browser, server_url + "module/index.html")
    try:
        page.locator(".lab-links a").nth(2).click()
        expect(page.locator("#kernel")).to_have_value("fused")
        expect(page.locator("#d")).to_have_value("64")
        expect(page.locator("#n")).to_have_value("4096")
    finally:
        ctx.close()


def test_an_exercise_checks_when_the_site_is_served_from_a_subpath(browser, subpath_url):
    ctx, page = open_page(browser, subpath_url + EXERCISE)
    try:
        type_code(page, "probe", _read("probe", "solution.py"))
        check(page, "probe")
        expect(page.locator("#step-probe .step-status")).to_contain_text("Step passed", timeout=LONG)
        assert page.evaluate("window.__csp") == [] and page.offsite == []
    finally:
        ctx.close()


# ---------------------------------------------------------------------------
# axe-core on the module and exercise pages (results and hints shown)

@pytest.mark.parametrize("path", ["module/index.html", EXERCISE])
def test_axe_finds_no_violations_in_either_colour_scheme(path, browser, server_url, artifacts):
    if not AXE.exists():
        pytest.skip("node_modules/axe-core missing: run `npm ci`")
    ctx, page = open_page(browser, server_url + path, bypass_csp=True)
    try:
        if path == EXERCISE:
            expect(page.locator("#step-scratch .cm-editor")).to_be_visible()
            type_code(page, "scratch", _wrong("scratch", "no_max_subtraction.py"))
            check(page, "scratch")
            expect(page.locator("#step-scratch .test-result.fail").first).to_be_visible(timeout=LONG)
            page.locator("#step-scratch .hint-button").click()
            page.locator("#step-probe .show-answer").click()
        assert_no_violations(page, path.replace("/", "_"), artifacts, full_page=True)
    finally:
        ctx.close()


# Opened on a phone, then widened (as a phone turned sideways or a window dragged wider).
WIDTHS = (390, 1280)


@pytest.mark.parametrize("path", ["module/index.html", EXERCISE])
def test_the_page_fits_a_phone_and_a_laptop_without_sideways_scrolling(path, browser, server_url, artifacts):
    ctx, page = open_page(browser, server_url + path, viewport=(WIDTHS[0], 900))
    try:
        if path == EXERCISE:
            expect(page.locator("#step-scratch .cm-editor")).to_be_visible()
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            assert page.evaluate("document.documentElement.scrollWidth") <= width, width
            page.screenshot(path=str(artifacts / f"module-{path.replace('/', '_')}-{width}.png"), full_page=True)
    finally:
        ctx.close()


def test_a_download_dropped_while_python_starts_is_reported_and_the_next_check_works(browser, server_url):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    dropped = []

    def drop_once(route):
        if not dropped:
            dropped.append(route.request.url)
            route.abort()
        else:
            route.continue_()
    ctx.route("**/py/exercises.json", drop_once)
    page = ctx.new_page()
    page.add_init_script(WATCH)
    try:
        page.goto(server_url + EXERCISE)
        type_code(page, "probe", _read("probe", "solution.py"))
        section = check(page, "probe")
        expect(section.locator(".step-status")).to_contain_text("Python could not start in this page", timeout=LONG)
        assert dropped
        check(page, "probe")
        expect(section.locator(".step-status")).to_have_text(PASSED, timeout=LONG)
    finally:
        ctx.close()


def test_python_dying_a_stopped_run_and_patched_builtins_leave_no_trace(exercise):
    """In the page: a repr of a list nested 100,000 deep kills
    Pyodide ("Maximum call stack size exceeded"); the page says so in words, clears the
    last run's output and starts a fresh Python. A cancelled endless loop clears it too.
    stderr is shown, and a Run that patches math.exp does not change the next Check."""
    page = exercise
    section = page.locator("#step-scratch")
    printed = section.locator(".printed")
    type_code(page, "scratch", "import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.stdout.close()\n")
    section.locator(".run-button").click()
    expect(printed).to_have_text("out\nerr\n", timeout=LONG)
    type_code(page, "scratch", "x = []\nfor _ in range(100_000):\n    x = [x]\nprint(len(repr(x)))\n")
    section.locator(".run-button").click()
    expect(section.locator(".step-status")).to_contain_text("Python ran out of stack", timeout=LONG)
    expect(section.locator(".step-output")).to_be_hidden()
    type_code(page, "scratch", "print('before the loop')\nwhile True:\n    pass\n")
    section.locator(".run-button").click()
    expect(printed).to_have_text("")  # Python restarted: nothing left from the last run
    expect(section.locator(".cancel-button")).to_be_visible(timeout=LONG)
    section.locator(".cancel-button").click()
    expect(section.locator(".step-output")).to_be_hidden()
    patch = "import math, builtins\nmath.exp = lambda x: 1.0\nbuiltins.len = lambda x: 0\nprint('ok')\n"
    type_code(page, "scratch", patch)
    section.locator(".run-button").click()
    expect(printed).to_have_text("ok\n", timeout=LONG)
    type_code(page, "scratch", _read("scratch", "solution.py"))
    check(page, "scratch")
    expect(section.locator(".step-status")).to_have_text(PASSED, timeout=LONG)
