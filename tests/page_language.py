"""The lab's words in another language, for tests: the Python emulator's and the page's.

``python_speaks(code)`` compiles ``locale/<locale>/LC_MESSAGES/python.po`` with
``i18n.mo_bytes`` into a temporary folder, as build.py ships it to Pyodide, and
switches ``emulator.i18n`` to it (back to English afterwards). ``node_env(code,
folder)`` is the environment under which tests/js_lang.mjs gives node's page
modules that language and its page catalog (``i18n.js_messages``).
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path

import i18n
from emulator import i18n as emulator_i18n


def write_python_catalog(code: str, folder: Path) -> None:
    """<folder>/<locale>/LC_MESSAGES/python.mo and numbers.json, as the page's worker writes them."""
    lang = i18n.language(code)
    (folder / lang.locale / "LC_MESSAGES").mkdir(parents=True, exist_ok=True)
    (folder / lang.locale / "LC_MESSAGES" / "python.mo").write_bytes(i18n.mo_bytes(lang, "python"))
    (folder / lang.locale / "numbers.json").write_text(json.dumps(i18n.numbers(code).symbols()), encoding="utf-8")


@contextlib.contextmanager
def python_speaks(code: str):
    """Within the block, the emulator's messages and figures are in language ``code``."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if not i18n.language(code).default:
            write_python_catalog(code, folder)
        emulator_i18n.use(code, str(folder))
        try:
            yield
        finally:
            emulator_i18n.use("en", str(folder))


def node_env(code: str, folder: Path) -> dict:
    """os.environ plus CANNERY_LANG / CANNERY_CATALOG for tests/js_lang.mjs."""
    path = Path(folder) / f"page-{code}.json"
    path.write_text(json.dumps(i18n.js_messages(i18n.language(code), "page")), encoding="utf-8")
    return {**os.environ, "CANNERY_LANG": code, "CANNERY_CATALOG": str(path)}
