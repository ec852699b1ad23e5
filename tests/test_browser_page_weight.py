"""Page weight before Play: what the home page transfers before the learner
asks for anything, in English and in Brazilian Portuguese, stays at 150 KB or less.

Every response is counted at its body's bytes gzip-compressed (level 6, what a static
host sends for text; the local test server sends bodies uncompressed), from navigation
until the network is idle; nothing is pressed. The uncompressed total is printed beside it
(with -s), not held to a budget. The float16 card's module and
data (facts/held_out_f16.json), the film and Pyodide must not be among them: they load
when the learner asks.
"""
from __future__ import annotations

import gzip

import pytest

pytestmark = pytest.mark.browser

LIMIT = 150 * 1024  # bytes
LATER = ("held_out_f16", "lab/float16.js", "gpu/float16.js", "pyodide", "film/player-data", ".vtt")


@pytest.mark.parametrize("path", ["", "pt-BR/index.html"])
def test_the_page_before_play_weighs_150_kb_or_less(browser, server_url, path):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = ctx.new_page()
        sizes: dict = {}

        def seen(response):
            try:
                body = response.body()
                sizes[response.url] = (len(gzip.compress(body, 6)), len(body))
            except Exception:  # a redirect or an aborted request has no body
                sizes.setdefault(response.url, (0, 0))

        page.on("response", seen)
        page.goto(server_url + path, wait_until="networkidle")
        total = raw = 0
        for packed, size in sizes.values():
            total += packed
            raw += size
        assert sizes and all(u.startswith(server_url) for u in sizes), "a request left the origin"
        assert not [u for u in sizes if any(x in u for x in LATER)], sorted(sizes)
        biggest = sorted(sizes.items(), key=lambda kv: -kv[1][0])[:5]
        print(f"{path or 'index.html'}: {total:,} B gzip, {raw:,} B raw, {len(sizes)} responses")
        assert 0 < total <= LIMIT, (total, biggest)
    finally:
        ctx.close()


def test_python_starts_when_the_lab_scrolls_into_view_and_not_before(browser, server_url):
    """The lab's Python starts on intent (the form scrolled into view), so the
    first Count answers at once; a page left open with the lab out of view starts nothing."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = ctx.new_page()
        asked = []
        ctx.on("request", lambda r: asked.append(r.url))
        page.goto(server_url, wait_until="networkidle")
        page.wait_for_timeout(2000)
        ready = "() => Boolean(window.cannery && window.cannery.lab && window.cannery.lab.client.worker)"
        assert page.evaluate(ready) is False
        assert not [u for u in asked if "pyodide" in u], sorted(asked)
        page.locator("#lab-form").scroll_into_view_if_needed()
        for _ in range(100):  # no press: scrolling alone starts the worker and its Python
            if page.evaluate("() => window.cannery.lab.client.ready"):
                break
            page.wait_for_timeout(500)
        assert page.evaluate("() => window.cannery.lab.client.ready") is True
        assert [u for u in asked if "pyodide" in u]
    finally:
        ctx.close()
