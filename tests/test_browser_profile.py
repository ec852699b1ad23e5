"""The shared browser profile (conftest.SharedProfile) shares compiled code, never storage:
what one test's page stores is gone for the next, and two leases never overlap."""
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


def test_what_a_shared_page_stores_is_gone_for_the_next_one(browser, server_url):
    first = browser.profile.lease(server_url)
    page = first.new_page()
    page.goto(server_url + "module/index.html")
    page.evaluate(STORE)
    assert page.evaluate(FOUND) == {"local": "left behind", "idb": ["cannery-probe"], "caches": ["cannery-probe"],
                                    "cookie": "cannery-probe=1"}
    first.close()
    second = browser.profile.lease(server_url)
    try:
        page = second.new_page()
        page.goto(server_url + "module/index.html")
        assert page.evaluate(FOUND) == {"local": None, "idb": [], "caches": [], "cookie": ""}
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
