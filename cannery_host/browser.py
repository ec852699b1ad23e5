"""Debian's Chromium, headless, with WebGPU on SwiftShader (Vulkan on the CPU).

The browser tests (tests/conftest.py) and the lab benchmark (``python -m
bench.bench_lab``) launch it the same way through Playwright for Python. They use
Debian's ``chromium-headless-shell`` where it is installed (``make setup`` installs it):
the same Chromium without the browser's own window and pages, which costs about half a
CPU-second less for each page a test opens; the browser suite took 677 s in it against
918 s in the full ``chromium`` on a quiet 2-core machine, with the same tests passing.
Otherwise ``/usr/bin/chromium``. Set ``CANNERY_CHROMIUM`` to use another Chromium binary.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

HEADLESS_SHELL, FULL = "/usr/bin/chromium-headless-shell", "/usr/bin/chromium"
CHROMIUM = os.environ.get("CANNERY_CHROMIUM") or (HEADLESS_SHELL if Path(HEADLESS_SHELL).exists() else FULL)
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox",
    "--enable-unsafe-webgpu", "--enable-features=Vulkan", "--use-vulkan=swiftshader",
    "--use-webgpu-adapter=swiftshader", "--disable-vulkan-surface",
    "--disable-background-networking", "--disable-component-update",
]


def chromium_found() -> bool:
    """Whether the Chromium binary exists (apt-get install chromium-headless-shell)."""
    return bool(shutil.which(CHROMIUM)) or Path(CHROMIUM).exists()


def launch(playwright, **kwargs):
    """A headless Chromium Browser from a running ``sync_playwright()``, with the
    WebGPU flags above; ``kwargs`` go to ``chromium.launch``."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, **kwargs)


def launch_profile(playwright, user_data_dir, **kwargs):
    """A headless Chromium BrowserContext kept in the profile folder ``user_data_dir``
    (its HTTP cache and V8's code cache persist, unlike a fresh context's), with the same
    binary and flags as ``launch``; ``kwargs`` go to ``chromium.launch_persistent_context``."""
    return playwright.chromium.launch_persistent_context(
        str(user_data_dir), executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, **kwargs)
