"""Debian's Chromium, headless, with WebGPU on SwiftShader (Vulkan on the CPU).

The browser tests (tests/conftest.py) and the lab benchmark (``python -m
bench.bench_lab``) launch it the same way through Playwright for Python. Set
``CANNERY_CHROMIUM`` to use another Chromium binary.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

CHROMIUM = os.environ.get("CANNERY_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox",
    "--enable-unsafe-webgpu", "--enable-features=Vulkan", "--use-vulkan=swiftshader",
    "--use-webgpu-adapter=swiftshader", "--disable-vulkan-surface",
    "--disable-background-networking", "--disable-component-update",
]


def chromium_found() -> bool:
    """Whether the Chromium binary exists (apt-get install chromium)."""
    return bool(shutil.which(CHROMIUM)) or Path(CHROMIUM).exists()


def launch(playwright, **kwargs):
    """A headless Chromium Browser from a running ``sync_playwright()``, with the
    WebGPU flags above; ``kwargs`` go to ``chromium.launch``."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, **kwargs)
