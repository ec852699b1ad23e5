"""In Chromium: the exercise page's harness against
learner code that attacks it from inside Pyodide.

- A Run that rewrites the step's tests.py, the checker's modules or adds files
  in Pyodide's file system changes nothing a later Check runs (the worker puts
  the shipped files back before every request).
- Replies forged with js.postMessage, or by patching the worker's JSON.parse,
  never become the verdict (replies come through a MessagePort held in the
  worker's closure).
- Deleted builtins (all, len, every one) leave the next Check of the solution
  passing.
- After js.close() the next press is answered within the time limit, timed from
  the press, and the press after that works.
- KeyboardInterrupt, SystemExit, a BaseException subclass or a value the tests
  cannot convert each get the checker's sentence, as CPython words it.
"""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from test_browser_exercise import LONG, PASSED, SLUG, _read, open_page, type_code
from test_browser_exercise import check as press_check

from exercises import content, runner

pytestmark = pytest.mark.browser

EXERCISE = f"module/{SLUG}/index.html"
STEP = "scratch"
STARTER = _read(STEP, "starter.py")
SOLUTION = _read(STEP, "solution.py")
TOTAL = len(runner.load_tests(content.step(SLUG, STEP)))


@pytest.fixture(scope="module")
def page(browser, server_url):
    ctx, pg = open_page(browser, server_url + EXERCISE, shared=False)  # kept for the module
    expect(pg.locator(f"#step-{STEP} .cm-editor")).to_be_visible()
    yield pg
    ctx.close()


def section(page):
    return page.locator(f"#step-{STEP}")


def run(page, code):
    type_code(page, STEP, code)
    section(page).locator(".run-button").click()
    expect(section(page).locator(".run-button")).to_be_enabled(timeout=LONG)


def status_of_check(page, code):
    type_code(page, STEP, code)
    press_check(page, STEP)
    return section(page).locator(".step-status")


def expected_status(source):
    report = runner.check(SLUG, STEP, source)
    return f"{report['passed']} of {report['total']} tests pass.", report


REWRITE = """import glob, os
tests = glob.glob('/cannery/**/online-softmax/scratch/tests.py', recursive=True)
for path in tests + glob.glob('/cannery/exercises/testing.py'):
    with open(path, 'w') as f:
        f.write('def test_forged(mod):\\n    pass\\n')
os.makedirs('/cannery/extra', exist_ok=True)
with open('/cannery/json.py', 'w') as f:
    f.write('raise ImportError("fake json")\\n')
print('rewrote', len(tests))
"""


def test_a_run_that_rewrites_the_tests_in_pythons_files_changes_nothing_a_check_runs(page):
    run(page, REWRITE)
    expect(section(page).locator(".printed")).to_have_text("rewrote 1\n")
    want, report = expected_status(STARTER)
    assert report["total"] == TOTAL > 1
    expect(status_of_check(page, STARTER)).to_have_text(want, timeout=LONG)
    expect(section(page).locator(".results-list")).not_to_contain_text("forged")
    run(page, "import os\nprint(os.path.exists('/cannery/json.py'), os.path.exists('/cannery/extra'))\n")
    expect(section(page).locator(".printed")).to_have_text("False False\n")
    expect(status_of_check(page, SOLUTION)).to_have_text(PASSED, timeout=LONG)


FORGE = """
try:
    import js
    from pyodide.ffi import to_js
    forged = {"ok": True, "result": {"ok": True, "passed": 9, "total": 9, "output": "", "error": None,
              "touched": [], "results": [{"name": "t", "title": "forged", "ok": True, "message": "",
              "input": "", "expected": "", "got": "", "traceback": ""}]}}
    for i in range(1, 300):
        js.postMessage(to_js({"type": "reply", "id": i, "reply": forged}, dict_converter=js.Object.fromEntries))
        js.postMessage(to_js({"type": "started", "id": i}, dict_converter=js.Object.fromEntries))
    js.JSON.parse = lambda *args: to_js(forged, dict_converter=js.Object.fromEntries)
except ImportError:
    pass
"""


@pytest.mark.parametrize("where", ["run", "check"])
def test_a_reply_forged_from_learner_code_is_never_the_verdict(page, where):
    if where == "run":
        run(page, FORGE + "print('posted')\n")
        source = STARTER
    else:
        source = STARTER + FORGE
    want, _ = expected_status(source)
    status = status_of_check(page, source)
    expect(status).to_have_text(want, timeout=LONG)
    expect(section(page).locator(".results-list")).not_to_contain_text("forged")
    expect(status_of_check(page, SOLUTION)).to_have_text(PASSED, timeout=LONG)


DELETE = {
    "all": "del builtins.all",
    "len": "del builtins.len",
    "every builtin": "for k in list(vars(builtins)):\n        delattr(builtins, k)",
}


@pytest.mark.parametrize("what", list(DELETE))
def test_deleted_builtins_leave_the_next_check_of_the_solution_passing(page, what):
    """Run is where code reaches Python's own builtins (a Check refuses `import builtins`,
    exercises.guard; tests/test_exercises_sandbox.py checks that): deleted there, they
    are put back, and the next Checks of the solution pass."""
    run(page, "import builtins\nif True:\n    " + DELETE[what] + "\n")
    for _ in range(2):
        expect(status_of_check(page, SOLUTION)).to_have_text(PASSED, timeout=LONG)


def test_after_js_close_the_next_press_is_answered_within_the_limit(page):
    run(page, "import js\njs.close()\n")
    type_code(page, STEP, "print('after close')\n")
    section(page).locator(".run-button").click()
    expect(section(page).locator(".step-status")).to_have_text(re.compile(
        r"^(Python stopped answering \(code that calls js\.close\(\) ends it\)|Stopped after 10 s)"), timeout=30_000)
    section(page).locator(".run-button").click()
    expect(section(page).locator(".printed")).to_have_text("after close\n", timeout=LONG)


WAYS_OUT = ["raise KeyboardInterrupt", "raise SystemExit(0)", "import sys; sys.exit(3)", "import os; os._exit(0)",
            "raise Stop()", "raise GeneratorExit", "return 10**400, 10**400", "return 10**5000, 1.0"]


@pytest.mark.parametrize("body", WAYS_OUT)
def test_every_way_out_of_a_learners_function_gets_the_checkers_sentence(page, body):
    code = SOLUTION + f"\n\nclass Stop(BaseException):\n    pass\n\n\ndef online_softmax(scores, block):\n    {body}\n"
    want, report = expected_status(code)
    first = next(r for r in report["results"] if not r["ok"])
    status = status_of_check(page, code)
    expect(status).to_have_text(want, timeout=LONG)
    failing = section(page).locator(".test-result.fail").first
    expect(failing.locator(".result-message")).to_have_text(first["message"])
    assert "Traceback" not in status.inner_text()


# Public bug reports tried in the page: pyodide/pyodide#5959 (functools.partial in an endless
# recursion kills Pyodide with RangeError instead of RecursionError) and pyodide/pyodide#742
# (posting a PyProxy from a worker throws DataCloneError).

PARTIAL = """from functools import partial


def f(obj, *, unrelated=1):
    recur = partial(f, unrelated=1)
    for x in obj:
        recur(x)


a = []
a.append(a)
f(a)
"""


def test_an_endless_recursion_through_partial_is_stopped_and_the_next_check_passes(page):
    type_code(page, STEP, PARTIAL)
    section(page).locator(".run-button").click()
    expect(section(page).locator(".run-button")).to_be_enabled(timeout=LONG)
    said = section(page).locator(".step-status").inner_text() + section(page).locator(".step-output").inner_text()
    assert "Python ran out of stack" in said or "RecursionError" in said, said
    expect(status_of_check(page, SOLUTION)).to_have_text(PASSED, timeout=LONG)


def test_a_pyproxy_posted_by_learner_code_is_the_learners_error_and_the_page_goes_on(page):
    run(page, "import js\nfrom pyodide.ffi import create_proxy\njs.postMessage(create_proxy({'a': 1}))\n")
    expect(section(page).locator(".printed .error-text")).to_contain_text("DataCloneError")
    expect(status_of_check(page, SOLUTION)).to_have_text(PASSED, timeout=LONG)
