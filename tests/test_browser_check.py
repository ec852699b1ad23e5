"""Check in chunks in the page: progress while it runs, a partial
result when cancelled, rows shared among workers, and the same report as
CPython's Check.
"""
from __future__ import annotations

import math

import pytest

import lab_api as api

pytestmark = pytest.mark.browser


@pytest.fixture()
def page(page, server_url):
    """conftest's page (the shared profile) at the lab."""
    page.goto(server_url + "#lab")
    return page


def fill(page, kernel, n, d):
    page.select_option("#kernel", kernel)
    page.fill("#n", str(n))
    page.fill("#d", str(d))


def wait_idle(page, timeout=240_000):
    page.wait_for_selector("#lab-form[aria-busy=false]", state="attached", timeout=timeout)


def test_progress_then_cancel_keeps_the_rows_done(page, artifacts):
    fill(page, "fused", 1024, 64)
    page.click("#check-button")
    # "Checking: 8 rows done, 1,016 to go." once the first chunk is back
    status = page.locator("#lab-status")
    status.filter(has_text="rows done").wait_for(timeout=120_000)
    page.wait_for_function("() => !/: 0 rows done/.test(document.getElementById('lab-status').textContent)",
                           timeout=120_000)
    text = status.inner_text()
    assert "to go" in text
    done = int(text.split("Checking: ")[1].split(" rows done")[0].replace(",", ""))
    to_go = int(text.split("rows done, ")[1].split(" to go")[0].replace(",", ""))
    assert done > 0 and done + to_go == 1024
    # the partial report is merged after each chunk; give it a moment to arrive
    page.wait_for_timeout(1500)
    # past 1 s the rows done show as a bar too, so a long check shows it is moving
    assert page.is_visible("#check-progress-box")
    bar = float(page.get_attribute("#check-progress", "value") or 0)
    assert 0 < bar < 100
    page.click("#cancel-button")
    wait_idle(page, timeout=10_000)
    assert page.is_hidden("#cancel-button")
    assert page.is_hidden("#check-progress-box")
    final = page.inner_text("#lab-status")
    assert final.startswith("Check cancelled after ") and final.endswith(
        "the result shown covers only those rows."
    ), final
    checked = int(final.split("after ")[1].split(" of ")[0].replace(",", ""))
    assert 0 < checked < 1024
    assert page.is_visible("#check-result")
    assert page.inner_text("#check-rows").startswith(f"{checked:,} of the 1,024 rows planned")
    assert page.inner_text("#check-verdict") == "Passed so far"  # the fused kernel passes on the rows done
    page.locator("#check-result").screenshot(path=str(artifacts / "check-partial.png"))
    # a fresh worker answers the next request
    fill(page, "fused", 65, 16)
    page.click("#check-button")
    page.locator("#check-rows", has_text="all 65 rows").wait_for(timeout=120_000)
    assert page.console_errors == []


def test_a_chunked_check_in_the_page_gives_cpythons_report(page):
    # Big enough (over 1.5 s) that a second worker joins where the machine has
    # two cores or more; the merged report must not depend on how rows were shared.
    fill(page, "fused-no-rescale", 1024, 16)
    result = page.evaluate("() => window.cannery.lab.doCheck()")
    assert result["complete"] is True and result["rows_planned"] == 1024
    params = {"kernel": "fused-no-rescale", "n": "1024", "d": "16", "seed": str(result["seed"])}
    here = api.handle({"op": "check", "params": params})["result"]
    assert result["passed"] is here["passed"] is False
    assert result["first_failing_row"] == here["first_failing_row"]
    assert result["rows_checked"] == here["rows_checked"] == 1024
    for key in ("max_abs_error", "bound", "max_bound", "plain_max_abs_error"):
        assert math.isclose(result[key], here[key], rel_tol=1e-9, abs_tol=1e-14), key
    cores = page.evaluate("navigator.hardwareConcurrency")
    assert 1 <= result["workers"] <= min(4, cores)
    assert "Took " in page.inner_text("#check-body")
    assert page.console_errors == []
