"""The shared browser profile (conftest.SharedProfile) shares compiled code, never storage:
what one test's pages store, at any origin they went to, is gone for the next; two leases
never overlap; and a lease an earlier test left open does not fail the tests after it."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

STORE = """async () => {
  localStorage.setItem('cannery-probe', 'left behind');
  await new Promise((resolve) => { const r = indexedDB.open('cannery-probe'); r.onsuccess = resolve; });
  await (await caches.open('cannery-probe')).put('/probe', new Response('x'));
  document.cookie = 'cannery-probe=1';
}"""
FOUND = """async () => ({
  local: localStorage.getItem('cannery-probe'),
  idb: (await indexedDB.databases()).map((db) => db.name),
  caches: await caches.keys(),
  cookie: document.cookie,
})"""
STORED = {"local": "left behind", "idb": ["cannery-probe"], "caches": ["cannery-probe"], "cookie": "cannery-probe=1"}
NOTHING = {"local": None, "idb": [], "caches": [], "cookie": ""}


def test_what_a_shared_page_stores_is_gone_for_the_next_one_at_each_origin(browser, server_url, subpath_url):
    # the lease names server_url's origin; its page also goes to the subpath server's (another port)
    urls = [server_url + "module/index.html", subpath_url + "module/index.html"]
    assert urls[0].split("/")[2] != urls[1].split("/")[2]
    first = browser.profile.lease(server_url)
    try:
        page = first.new_page()
        for url in urls:
            page.goto(url)
            page.evaluate(STORE)
            assert page.evaluate(FOUND) == STORED
    finally:
        first.close()
    second = browser.profile.lease(server_url)
    try:
        page = second.new_page()
        for url in urls:
            page.goto(url)
            assert page.evaluate(FOUND) == NOTHING, url
    finally:
        second.close()


def test_a_second_lease_while_one_is_open_is_refused(browser, server_url):
    held = browser.profile.lease(server_url)
    try:
        with pytest.raises(RuntimeError, match="needs a context of its own"):
            browser.profile.lease(server_url)
    finally:
        held.close()
    browser.profile.lease(server_url).close()   # once closed, the next lease opens


def test_a_lease_an_earlier_test_left_open_is_closed_with_a_warning_naming_it(browser, server_url):
    left = browser.profile.lease(server_url)
    page = left.new_page()
    page.goto(server_url + "module/index.html")
    page.evaluate(STORE)
    left.owner = "tests/test_earlier.py::test_whose_setup_failed"   # as if taken in that test
    with pytest.warns(UserWarning, match="test_whose_setup_failed left its shared page open"):
        nxt = browser.profile.lease(server_url)
    try:
        assert page.is_closed()
        fresh = nxt.new_page()
        fresh.goto(server_url + "module/index.html")
        assert fresh.evaluate(FOUND) == NOTHING
    finally:
        nxt.close()
