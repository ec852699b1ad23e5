"""Messages of the Python that runs in the page, in the page's language.

The emulator and the exercise checker write their messages in English inside
``_()`` (or ``ngettext``). Babel extracts them into the gettext domain
``python`` (``locale/<locale>/LC_MESSAGES/python.po``, kept with
``python -m i18n update``); the build compiles each language's catalog to a
``.mo`` file and ships it, with the language's number symbols
(``numbers.json``, from Babel's CLDR data), in the files the page's Pyodide
worker writes. Here the standard library's ``gettext`` reads them, so the
same code runs in CPython 3.11 and Pyodide, standard library only.

Figures inside a message go through :func:`group` and :func:`fixed`, which
write them with the active language's marks (4,096 / 4.096; 16.5 / 16,5).
"""
from __future__ import annotations

import gettext as _gettext
import json
import os

#: Where compiled catalogs live: locale/<locale>/LC_MESSAGES/python.mo and
#: locale/<locale>/numbers.json, beside the emulator folder.
LOCALE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "locale")
DOMAIN = "python"

_active: _gettext.NullTranslations = _gettext.NullTranslations()
_marks = {"decimal": ".", "group": ","}
_code = "en"


def use(code: str, localedir: str | None = None) -> None:
    """Write messages in language ``code`` (BCP 47, e.g. "pt-BR") from now on.

    Reads ``<localedir>/<locale>/LC_MESSAGES/python.mo`` and
    ``<localedir>/<locale>/numbers.json`` ({"decimal": ",", "group": "."}).
    A language without them falls back to the English messages and marks;
    nothing is raised.
    """
    global _active, _marks, _code
    folder = localedir or LOCALE_DIR
    locale = code.replace("-", "_")
    _active = _gettext.translation(DOMAIN, folder, languages=[locale], fallback=True)
    _marks = {"decimal": ".", "group": ","}
    path = os.path.join(folder, locale, "numbers.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            _marks = dict(_marks, **json.load(f))
    _code = code


def language() -> str:
    """The BCP 47 tag of the language messages are written in now."""
    return _code


def decimal_mark() -> str:
    """The active language's decimal mark: "." (English) or "," (pt-BR)."""
    return _marks["decimal"]


def _(message: str) -> str:
    """``message`` (English, a msgid) in the active language."""
    return _active.gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The singular or plural form for ``n``, in the active language."""
    return _active.ngettext(singular, plural, n)


def _marked(text: str) -> str:
    return text.translate({ord(","): _marks["group"], ord("."): _marks["decimal"]})


def group(n: int) -> str:
    """An integer with the active language's thousands separator: 4096 -> '4,096' / '4.096'."""
    return _marked(f"{int(n):,}")


def fixed(x: float, places: int) -> str:
    """``x`` with ``places`` decimals and the active language's marks: (16.5, 1) -> '16.5' / '16,5'."""
    return _marked(f"{x:,.{places}f}")


def short(x: float) -> str:
    """``x`` as ``:g`` writes it, with the active decimal mark: 0.25 -> '0.25' / '0,25'."""
    return f"{x:g}".replace(".", _marks["decimal"])
