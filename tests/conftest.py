"""Shared fixtures: a built site, a local server, and Debian's Chromium.

Browser tests drive Debian's Chromium (cannery_host.browser.CHROMIUM: its headless
shell where installed) through Playwright for Python with SwiftShader WebGPU (Vulkan
on the CPU), so WebGPU paths run without a GPU; the flags live in cannery_host.browser
(set CANNERY_CHROMIUM for another binary).
The repository root is on sys.path through pyproject's pytest ``pythonpath``.
"""
from __future__ import annotations

import fcntl
import os
import threading
import traceback
import warnings
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import build
from cannery_host.browser import CHROMIUM, chromium_found, launch, launch_profile
from sitebuild.server import make_server

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"

# One build per run: under pytest-xdist the first worker to ask for ``built_site``
# builds it into the folder the workers share (the run's base temporary folder),
# holding a lock; the others wait on the lock and read the same files.
DONE, FAILED = "DONE", "FAILED"


def _shared_build(root: Path) -> Path:
    root.mkdir(exist_ok=True)
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if (root / FAILED).exists():
                pytest.fail(f"the site build failed:\n{(root / FAILED).read_text(encoding='utf-8')}", pytrace=False)
            if not (root / DONE).exists():
                try:
                    build.build(root / "dist")
                except BaseException:
                    (root / FAILED).write_text(traceback.format_exc(), encoding="utf-8")
                    raise
                (root / DONE).write_text("ok", encoding="utf-8")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return root / "dist"


@pytest.fixture(scope="session")
def built_site(request, tmp_path_factory) -> Path:
    """The site built from scratch into a temporary folder, once per run (shared by
    every pytest-xdist worker: read it, never write in it)."""
    if hasattr(request.config, "workerinput"):
        return _shared_build(tmp_path_factory.getbasetemp().parent / "cannery-site")
    return build.build(tmp_path_factory.mktemp("site") / "dist")


def serve(directory: Path, prefix: str = ""):
    """``directory`` served on 127.0.0.1 at a free port, under ``prefix``, from a daemon
    thread (sitebuild.server, the site's own server and headers); returns the server
    (``server_address[1]`` is its port; ``shutdown()`` stops it)."""
    server = make_server(directory, port=0, prefix=prefix)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server


@pytest.fixture(scope="session")
def server_url(built_site) -> str:
    """Base URL (ending in '/') of the built site served on 127.0.0.1."""
    server = serve(built_site)
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture(scope="session")
def subpath_url(built_site) -> str:
    """The same site served under /cannery/, as a static host might."""
    server = serve(built_site, prefix="/cannery")
    yield f"http://127.0.0.1:{server.server_address[1]}/cannery/"
    server.shutdown()


# Storage a shared page can leave behind; the HTTP cache (and the compiled code in it) stays.
SITE_STORAGE = "cookies,file_systems,indexeddb,local_storage,cache_storage,service_workers,websql"


def _current_test() -> str:
    return os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]


class SharedProfile:
    """One persistent Chromium profile per pytest worker, for pages that need no context
    options of their own (no route, no bypass_csp, no is_mobile).

    A fresh incognito context starts with an empty HTTP cache, so each Pyodide start there
    compiles the 9.6 MB wasm again; in this profile V8 keeps the compiled code in the HTTP
    cache, which brings a page's Pyodide start and first Count from 7.4-8.2 to 3.9-4.9 CPU-s
    on a quiet 2-core machine. Storage is not shared: a lease clears the storage
    (SITE_STORAGE, through CDP ``Storage.clearDataForOrigin``) of every origin the profile's
    pages have been to, when it opens and when it closes. Only one lease is open at a time:
    a second one in the same test raises, and one left open by an earlier test (whose setup
    failed before its ``try``) is closed with a warning naming that test, so that one
    failure does not fail every later test. A page kept for a module must therefore use a
    context of its own.

    Served from the cache, a response still makes a request (the server says ``no-cache``,
    so it is revalidated) and ``response.body()`` is whole, but ``request.sizes()`` and
    ``PerformanceResourceTiming.transferSize`` count no body: a test of bytes on the wire
    needs a context of its own.
    """

    def __init__(self, playwright, user_data_dir: Path):
        self._pw, self._dir, self._ctx, self._lease = playwright, user_data_dir, None, None
        self._origins: set[str] = set()

    def lease(self, url: str) -> SharedContext:
        """A SharedContext for pages at ``url``'s origin; raises RuntimeError while this
        test holds another."""
        if self._lease is not None:
            if self._lease.owner == _current_test():
                raise RuntimeError("a shared page is still open: a page kept past its test (a module's "
                                   "page) needs a context of its own, not the shared profile")
            left = self._lease.owner
            self._lease.close()
            warnings.warn(f"{left} left its shared page open; closed it", stacklevel=2)
        if self._ctx is None:
            self._ctx = launch_profile(self._pw, self._dir, viewport={"width": 1200, "height": 900},
                                       accept_downloads=True)
            self._cdp = self._ctx.new_cdp_session(self._ctx.pages[0])
        self.visited(url)
        self.clear()
        self._lease = SharedContext(self, _current_test())
        return self._lease

    def visited(self, url: str) -> None:
        """Note ``url``'s origin (http and https only) as one whose storage leases clear."""
        parts = urlsplit(url)
        if parts.scheme in ("http", "https"):
            self._origins.add(f"{parts.scheme}://{parts.netloc}")

    def clear(self) -> None:
        for origin in sorted(self._origins):
            self._cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": SITE_STORAGE})

    def _release(self) -> None:
        try:
            self.clear()
        finally:
            self._lease = None

    def close(self) -> None:
        if self._ctx is not None:
            self._ctx.close()


class SharedContext:
    """The pages one test opens in the SharedProfile, with the two methods of a
    BrowserContext that tests use: ``new_page()`` and ``close()`` (which closes them and
    clears the storage of every origin they went to)."""

    def __init__(self, profile: SharedProfile, owner: str):
        self.profile, self.owner, self.pages = profile, owner, []

    def new_page(self, viewport=(1200, 900)):
        page = self.profile._ctx.new_page()
        self.pages.append(page)
        page.on("framenavigated", lambda frame: self.profile.visited(frame.url))
        page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
        return page

    def close(self) -> None:
        if self.profile._lease is not self:
            return
        try:
            for page in self.pages:
                page.close()
        finally:
            self.profile._release()


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    """One headless Chromium for the session; skips if Chromium is missing. Its
    ``browser.profile`` is the worker's SharedProfile (launched on first use)."""
    if not chromium_found():
        pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install chromium-headless-shell)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        b = launch(pw)
        b.profile = SharedProfile(pw, tmp_path_factory.mktemp("profile"))
        yield b
        b.profile.close()
        b.close()


@pytest.fixture
def context(browser):
    """A fresh browser context (own cache and storage) per test."""
    ctx = browser.new_context(viewport={"width": 1200, "height": 900})
    yield ctx
    ctx.close()


@pytest.fixture
def page(browser, server_url):
    """A new page in the shared profile (SharedProfile: cleared storage, a warm cache);
    console errors and page exceptions are collected on ``page.console_errors`` (a list
    of strings)."""
    shared = browser.profile.lease(server_url)
    try:
        pg = shared.new_page()
    except BaseException:
        shared.close()
        raise
    errors: list[str] = []
    pg.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    pg.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    pg.console_errors = errors
    yield pg
    shared.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Folder for screenshots that people look at (git-ignored)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


def open_lab(browser, url: str, width: int = 1280, init_script: Path | None = None):
    """A fresh context and page at ``url`` (a lesson page with its lab), whose
    console errors and page errors collect in ``page.console_errors``; ``init_script``, a
    file the context runs in every document before the page's own scripts (as
    Playwright's ``add_init_script``, which the page's Content-Security-Policy does not
    block: axe-core injected so, with the policy still in force).
    Returns (context, page); the caller closes the context."""
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    if init_script is not None:
        ctx.add_init_script(path=str(init_script))
    page = ctx.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.console_errors = errors
    page.goto(url)
    return ctx, page
