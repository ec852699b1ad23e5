"""The lab in the page: Count and Check through the Pyodide worker, in Chromium.

One page is shared by the module so Pyodide boots once.
"""
from __future__ import annotations

import json

import pytest

from emulator import api
from test_emulator import CASES, dig

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def lab(browser, server_url):
    ctx = browser.new_context(viewport={"width": 1200, "height": 900})
    page = ctx.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.console_errors = errors
    page.goto(server_url + "#lab")
    yield page
    ctx.close()


def press(page, button, n=None, d=None, kernel=None):
    if kernel:
        page.select_option("#kernel", kernel)
    if n is not None:
        page.fill("#n", str(n))
    if d is not None:
        page.fill("#d", str(d))
    page.click(button)


def wait_idle(page):
    page.wait_for_function("() => document.getElementById('lab-form').getAttribute('aria-busy') !== 'true'", timeout=120_000)


def test_count_shows_the_reference_figures(lab, artifacts):
    press(lab, "#count-button", n=4096, d=16, kernel="fused")
    lab.wait_for_selector("#count-total", timeout=120_000)
    wait_idle(lab)
    assert lab.inner_text("#count-plain") == "285,736,960"
    assert lab.inner_text("#count-fused") == "17,301,504"
    assert lab.inner_text("#count-total") == "17,301,504 bytes"
    assert lab.inner_text("#count-ratio") == "16.5"
    assert "kernel=fused" in lab.url and "n=4096" in lab.url
    lab.locator("#count-result").screenshot(path=str(artifacts / "lab-count.png"))
    press(lab, "#count-button", n=4096, d=64)
    lab.wait_for_function("() => document.getElementById('count-plain').textContent === '538,968,064'")
    assert lab.inner_text("#count-fused") == "270,532,608"


@pytest.mark.parametrize("kernel,passed", [("fused", True), ("fused-no-rescale", False)])
def test_check_at_256_by_64(lab, kernel, passed):
    press(lab, "#check-button", n=256, d=64, kernel=kernel)
    wait_idle(lab)
    verdict = lab.inner_text("#check-verdict")
    assert verdict == ("Passed" if passed else "Failed")
    body = lab.inner_text("#check-body")
    assert "all 256 rows" in body
    if not passed:
        assert "First failing row" in body


def test_bad_input_keeps_the_previous_result(lab):
    press(lab, "#count-button", n=100, d=16, kernel="plain")
    wait_idle(lab)
    before = lab.inner_text("#count-total")
    press(lab, "#count-button", n="-5")
    lab.wait_for_function("() => document.getElementById('n-error').textContent.length > 0")
    wait_idle(lab)
    assert "at least 1" in lab.inner_text("#n-error")
    assert lab.get_attribute("#n", "aria-invalid") == "true"
    assert lab.inner_text("#count-total") == before
    assert "at least 1" in lab.inner_text("#lab-status")
    press(lab, "#count-button", n=100)
    lab.wait_for_function("() => document.getElementById('n-error').textContent === ''")
    assert not [e for e in lab.console_errors if "favicon" not in e]


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_shared_case_in_pyodide_equals_cpython(lab, case):
    reply = lab.evaluate(
        "([op, params]) => window.cannery.lab.client.request(op, params)",
        [case["request"]["op"], case["request"]["params"]])
    for path, expected in case["expect"].items():
        assert dig(reply, path) == expected, (path, reply)
    # Same digits in Python 3.14 (Pyodide) as in CPython 3.11.
    here = json.loads(api.handle_json(json.dumps(case["request"])))
    for r in (reply, here):
        if r.get("result"):
            r["result"].pop("seconds", None)
    assert reply == here
