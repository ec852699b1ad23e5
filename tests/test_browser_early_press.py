"""A press that comes before the page's scripts are ready is kept, not lost.

On the pt-BR pages the modules wait for the language's catalog
(locale/pt-BR/page.json). Here that download is held back while the learner
presses Count (the lab) or Run (exercise 1); static/js/early-press.js must stop
the browser's own form submission (which would reload the page with the form in
its address) and replay the press once the module is ready.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

PYTHON = 120_000  # ms: Pyodide's first start on a shared CPU


def held_catalog(ctx):
    """Hold every request for the pt-BR catalog until the returned release() is called."""
    held, released = [], []

    def route(r):
        if released:
            r.continue_()
        else:
            held.append(r)
    ctx.route("**/locale/pt-BR/page.json", route)

    def release():
        released.append(True)
        for r in held:
            r.continue_()
    return held, release


def wait_until_held(page, held):
    """Playwright runs route handlers while the test waits on it: wait for the hold."""
    for _ in range(200):
        if held:
            return
        page.wait_for_timeout(50)
    raise AssertionError("the page never asked for its catalog")


def test_count_pressed_before_the_lab_is_ready_runs_once_it_is(browser, server_url):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    held, release = held_catalog(ctx)
    page = ctx.new_page()
    page.goto(server_url + "pt-BR/index.html#kernel=fused&n=4096&d=16&causal=0&M=16384", wait_until="commit")
    wait_until_held(page, held)
    page.locator("#count-button").click()  # the lab's module is still waiting for its catalog
    assert "?" not in page.url  # no plain form submission
    release()
    expect(page.locator("#count-total")).to_have_text("17.301.504 bytes", timeout=PYTHON)
    assert "?" not in page.url
    ctx.close()


def test_run_pressed_before_the_exercise_page_is_ready_runs_once_it_is(browser, server_url):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    held, release = held_catalog(ctx)
    page = ctx.new_page()
    page.goto(server_url + "pt-BR/module/online-softmax/index.html", wait_until="commit")
    wait_until_held(page, held)
    section = page.locator("#step-scratch")
    section.locator(".run-button").click()
    assert "?" not in page.url
    release()
    expect(section.locator(".step-status")).to_have_text("Executou sem erros.", timeout=PYTHON)
    assert "?" not in page.url
    ctx.close()
