"""Exercise 2 (the backward pass with recomputation) in Chromium, the same
pattern as exercise 1: for each step a correct solution passes, a typical
wrong one shows the failing test with its input, an answer with every number
right but without the skill fails only the test that sees it, with that test's
message: the causal skip done by masking, or D formed in every tile, by the
rows they read; tiles walked in the fused order only to gather a strip of
scores or a table of P, by the memory they hold (measured in the page's own
Python, whose bytes differ from CPython's: the shape named is the same); an
import of the project's own modules under a name built at run time is refused
in every test; and a loop that never ends is stopped while the page recovers. Run shows the given forward's NaN; the
module page ticks the backward objectives; axe finds nothing; no CSP
violation and no other origin.
"""
from __future__ import annotations

import re

import pytest
import wrong_expected
from playwright.sync_api import expect
from test_browser_a11y import AXE, assert_no_violations
from test_browser_exercise import LONG, LOOP, PASSED, WIDTHS, check, open_page, type_code

from exercises import content, runner

pytestmark = pytest.mark.browser

SLUG = "flash-backward"
EXERCISE = f"module/{SLUG}/index.html"
STEPS = [st["id"] for st in content.load(SLUG)["steps"]]


def _read(step, name):
    return content.read(content.step(SLUG, step), name)


def _wrong(step, name):
    return content.wrong_answers(content.step(SLUG, step))[name]


@pytest.fixture(scope="module")
def exercise(browser, server_url):
    ctx, page = open_page(browser, server_url + EXERCISE, shared=False)  # kept for the module
    expect(page.locator("#step-harden .cm-editor")).to_be_visible()
    yield page
    ctx.close()


def test_run_shows_the_given_forward_turning_an_empty_row_into_nan(exercise):
    page = exercise
    section = page.locator("#step-harden")
    section.locator(".run-button").click()
    expect(section.locator(".printed")).to_contain_text("nan", timeout=LONG)


# The answers whose entry in their step's wrong/expected.toml has `page` (tests/wrong_expected.py):
# typical wrong numbers, the causal skip done by masking, D formed in every tile, and a strip of
# scores or a table of P gathered tile by tile. What the page must say is written there, once.
IN_PAGE = [(step, name, e) for step in STEPS
           for name, e in wrong_expected.load(content.step(SLUG, step))[1].items() if "page" in e]


@pytest.mark.parametrize("step,name,exp", IN_PAGE, ids=[f"{s}-{n[:-3]}" for s, n, _ in IN_PAGE])
def test_a_wrong_answer_fails_in_the_page_the_tests_it_fails_in_python_saying_what_it_did(exercise, step, name, exp):
    page = exercise
    source = _wrong(step, name)
    report = runner.check(SLUG, step, source)
    failed = [r for r in report["results"] if not r["ok"]]
    assert [r["name"] for r in failed] == exp["fails"]
    assert any(exp["page"] in r["message"] for r in failed), (exp["page"], [r["message"] for r in failed])
    type_code(page, step, source)
    section = check(page, step)
    expect(section.locator(".step-status")).to_have_text(f"{report['passed']} of {report['total']} tests pass.")
    failing = section.locator(".test-result.fail")
    expect(failing).to_have_count(len(failed))
    for i, r in enumerate(failed):
        row = failing.nth(i)
        expect(row).to_contain_text(r["title"])
        expect(row.locator(".result-values")).to_contain_text(r["input"])
        if "your code held " in r["message"]:  # the bytes held are the page's Python's own
            expect(row.locator(".result-message")).to_contain_text(f"{r['input']}: your code held ")
            expect(row.locator(".result-values")).to_contain_text("memory held: ")
        else:
            expect(row.locator(".result-message")).to_have_text(r["message"])
            expect(row.locator(".result-values")).to_contain_text(r["expected"])
    expect(failing.filter(has_text=exp["page"])).to_have_count(1)
    expect(section.locator(".step-state")).to_have_text("not passed yet")


def test_an_import_of_the_projects_backward_by_a_built_name_is_refused_in_every_test(exercise):
    page, step = exercise, "scratch"
    source = _wrong(step, "dynamic_import.py")
    type_code(page, step, source)
    section = check(page, step)
    report = runner.check(SLUG, step, source)
    assert report["passed"] == 0
    expect(section.locator(".step-status")).to_have_text(f"0 of {report['total']} tests pass.")
    failing = section.locator(".test-result.fail")
    expect(failing).to_have_count(report["total"])
    expect(failing.first.locator(".result-message")).to_have_text(report["results"][0]["message"])
    expect(failing.first.locator(".result-message")).to_contain_text(
        "emulator.backward_reference.reference: this step runs your code without the project's own modules")


def test_a_loop_that_never_ends_is_stopped_and_the_page_recovers(exercise):
    # One step: the 10 s limit is the runner's, the same for every step's request.
    page, step = exercise, "harden"
    name = content.step(SLUG, step)["names"][0]
    type_code(page, step, LOOP.format(name=name))
    section = check(page, step)
    expect(section.locator(".step-status")).to_contain_text("Stopped after 10 s", timeout=LONG)
    expect(section.locator(".cm-content")).to_contain_text("while True")
    type_code(page, step, _read(step, "solution.py"))
    check(page, step)
    expect(section.locator(".step-status")).to_have_text(PASSED, timeout=LONG)


@pytest.mark.parametrize("step", STEPS)
def test_the_correct_solution_passes_and_the_step_is_marked(exercise, step):
    page = exercise
    section = page.locator(f"#step-{step}")
    type_code(page, step, _read(step, "solution.py"))
    check(page, step)
    expect(section.locator(".step-status")).to_have_text(PASSED)
    expect(section.locator(".step-state")).to_have_text("passed")
    expect(section.locator(".solution")).to_be_visible()
    expect(section.locator(".solution .after")).to_be_visible()
    expect(page.locator(f'.ladder-state[data-step="{SLUG}/{step}"]')).to_have_text("(passed)")


def test_the_module_page_ticks_the_backward_objectives(exercise, server_url):
    page = exercise
    # Self-contained (xdist may run this apart from the tests that pass the steps):
    # both steps passed, as progress.js stores them.
    page.evaluate("""(steps) => {
        const key = "cannery.progress.v1";
        const state = JSON.parse(localStorage.getItem(key) || '{"version": 1, "steps": {}}');
        for (const step of steps) {
            state.steps[step] = { ...(state.steps[step] || {}), passed: true };
        }
        localStorage.setItem(key, JSON.stringify(state));
    }""", [f"{SLUG}/{step}" for step in STEPS])
    page.goto(server_url + "module/index.html")
    row = page.locator("#exercises-table tbody tr", has_text="backward pass by recomputation")
    expect(row.locator(".ex-status")).to_have_text("Done")
    for text in ("Differentiate by recomputation", "Masks hardened against padding"):
        expect(page.locator(".objective", has_text=text).locator(".objective-state")).to_have_text("(Done)")
    page.goto(server_url + EXERCISE)
    expect(page.locator("#step-scratch .cm-editor")).to_be_visible()
    assert page.evaluate("window.__csp") == [] and page.offsite == [] and page.console_errors == []


def test_axe_finds_no_violations_in_either_colour_scheme(browser, server_url, artifacts):
    if not AXE.exists():
        pytest.skip("node_modules/axe-core missing: run `npm ci`")
    ctx, page = open_page(browser, server_url + EXERCISE, bypass_csp=True)
    try:
        expect(page.locator("#step-scratch .cm-editor")).to_be_visible()
        type_code(page, "scratch", _wrong("scratch", "d_left_out.py"))
        check(page, "scratch")
        expect(page.locator("#step-scratch .test-result.fail").first).to_be_visible(timeout=LONG)
        page.locator("#step-harden .hint-button").click()
        assert_no_violations(page, SLUG, artifacts, full_page=True)
    finally:
        ctx.close()


def test_the_page_fits_a_phone_and_a_laptop_without_sideways_scrolling(browser, server_url, artifacts):
    ctx, page = open_page(browser, server_url + EXERCISE, viewport=(WIDTHS[0], 900))
    try:
        expect(page.locator("#step-harden .cm-editor")).to_be_visible()
        assert re.search(r"Module progress: 0 of \d+ steps", page.locator("#progress-line").inner_text())
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            assert page.evaluate("document.documentElement.scrollWidth") <= width, width
            page.screenshot(path=str(artifacts / f"module-{SLUG}-{width}.png"), full_page=True)
    finally:
        ctx.close()
