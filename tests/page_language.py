"""The lab's words in another language, for tests: the Python emulator's and the page's.

``python_speaks(code)`` (from the i18n package, which the build uses too) compiles
``locale/<locale>/LC_MESSAGES/python.po`` with ``i18n.mo_bytes`` into a temporary
folder, as build.py ships it to Pyodide, and switches ``emulator.i18n`` to it (back
to English afterwards). ``node_env(code, folder)`` is the environment under which
tests/js_lang.mjs gives node's page modules that language and its page catalog
(``i18n.js_messages``).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import i18n
from i18n import python_speaks  # noqa: F401  (the tests' entry)


def node_env(code: str, folder: Path) -> dict:
    """os.environ plus CANNERY_LANG / CANNERY_CATALOG for tests/js_lang.mjs."""
    path = Path(folder) / f"page-{code}.json"
    path.write_text(json.dumps(i18n.js_messages(i18n.language(code), "page")), encoding="utf-8")
    return {**os.environ, "CANNERY_LANG": code, "CANNERY_CATALOG": str(path)}
