"""The site's languages, at build time: catalogs, content overlays, numbers.

Three standard pieces do the work, and this package only connects them:

- **gettext catalogs** (``locale/<locale>/LC_MESSAGES/<domain>.po``), kept by
  Babel (``python -m i18n update`` runs pybabel extract and update; the build
  compiles them in memory). One domain per place the words are used, each
  with its Babel mapping file ``locale/<domain>.cfg``: ``site`` (the Jinja2
  templates, through ``jinja2.ext.i18n``, and the kernels' labels, read from
  the manifest by :func:`i18n.extract.manifest_labels`), ``page`` (the page's JavaScript,
  served to it as JSON) and ``python`` (the emulator and the exercise checker,
  whose messages Pyodide reads from compiled ``.mo`` files with the standard
  library's ``gettext``).
- **content overlays** (``site/content/<code>/``): the same relative path as
  the English file, holding only its words. Timings, ids and numbers stay in
  the English file, so the languages share them; a list of tables whose items
  have an ``id`` is translated as a table keyed by that id (the film's cues).
- **numbers** (:class:`Numbers`): Babel's locale rules, so 285736960 is
  "285,736,960" in English and "285.736.960" in Brazilian Portuguese, and no
  figure is typed into a translation.

Languages are declared once, in ``site/content/languages.toml``.
"""
from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import babel.numbers
import babel.support
from babel.messages import mofile, pofile

ROOT = Path(__file__).resolve().parent.parent
CONTENT = ROOT / "site" / "content"
LANGUAGES_TOML = CONTENT / "languages.toml"
LOCALE_DIR = ROOT / "locale"


class I18nError(ValueError):
    """A language, catalog or overlay that cannot be used; the message names the file and key."""


@dataclass(frozen=True)
class Language:
    """One declared language (site/content/languages.toml).

    code: BCP 47 tag ("pt-BR"); locale: Babel/gettext locale ("pt_BR");
    name: its own name; prefix: folder of its pages under the site root ("" or
    "pt-BR/"); read_max_wpm: fastest caption reading speed, words per minute.
    """

    code: str
    locale: str
    name: str
    prefix: str
    read_max_wpm: int
    default: bool


@cache
def _declared() -> dict:
    with open(LANGUAGES_TOML, "rb") as f:
        return tomllib.load(f)


def languages() -> list[Language]:
    """Every declared language, the default (source) language first."""
    data = _declared()
    out = [Language(code=e["code"], locale=e["locale"], name=e["name"], prefix=e["prefix"],
                    read_max_wpm=int(e["read_max_wpm"]), default=e["code"] == data["default"])
           for e in data["languages"]]
    return sorted(out, key=lambda lang: not lang.default)


def language(code: str) -> Language:
    """The declared language with BCP 47 tag ``code``; I18nError if none."""
    for lang in languages():
        if lang.code == code:
            return lang
    raise I18nError(f"no language {code!r} in {LANGUAGES_TOML.name}; declared: "
                    f"{', '.join(x.code for x in languages())}")


def default() -> Language:
    """The source language (templates and content are written in it)."""
    return languages()[0]


def domains() -> list[str]:
    """The gettext domains: one Babel mapping file ``locale/<domain>.cfg`` each."""
    return sorted(p.stem for p in LOCALE_DIR.glob("*.cfg"))


def po_path(lang: Language, domain: str) -> Path:
    """Where ``lang``'s catalog for ``domain`` lives (a .po file)."""
    return LOCALE_DIR / lang.locale / "LC_MESSAGES" / f"{domain}.po"


def pot_path(domain: str) -> Path:
    """The extracted template of ``domain`` (locale/<domain>.pot)."""
    return LOCALE_DIR / f"{domain}.pot"


def read_catalog(lang: Language, domain: str):
    """``lang``'s catalog for ``domain`` (babel.messages.Catalog); I18nError if missing."""
    path = po_path(lang, domain)
    if not path.exists():
        raise I18nError(f"{path.relative_to(ROOT)} is missing: run `python -m i18n update`")
    with open(path, "rb") as f:
        return pofile.read_po(f, locale=lang.locale, domain=domain)


def mo_bytes(lang: Language, domain: str) -> bytes:
    """``lang``'s catalog for ``domain`` compiled to a gettext .mo file (bytes).
    Fuzzy entries are left out, as msgfmt does."""
    buf = io.BytesIO()
    mofile.write_mo(buf, read_catalog(lang, domain), use_fuzzy=False)
    return buf.getvalue()


@cache
def translations(code: str, domain: str):
    """gettext translations (babel.support.Translations) of ``domain`` for the
    language ``code``; the source language gets NullTranslations (msgids as they are)."""
    lang = language(code)
    if lang.default:
        return babel.support.NullTranslations()
    return babel.support.Translations(io.BytesIO(mo_bytes(lang, domain)), domain=domain)


def js_messages(lang: Language, domain: str) -> dict:
    """``lang``'s translated messages of ``domain`` for the page, as JSON-ready
    data: {msgid: msgstr} and, for plurals, {singular msgid: [forms...]} in
    gettext order; a message with a context is keyed "context\x04msgid".
    Untranslated and fuzzy entries are left out (the page then
    shows the English msgid). Plural forms are picked in the page with
    Intl.PluralRules; see site/static/js/i18n.js."""
    out: dict[str, Any] = {}
    if lang.default:
        return out
    for msg in read_catalog(lang, domain):
        if not msg.id or msg.fuzzy:
            continue
        # a message with a context (pgettext) is keyed "context\x04msgid", as gettext does
        prefix = f"{msg.context}\x04" if msg.context else ""
        if isinstance(msg.id, tuple | list):
            forms = list(msg.string)
            if all(forms):
                out[prefix + msg.id[0]] = forms
        elif msg.string:
            out[prefix + msg.id] = msg.string
    return dict(sorted(out.items()))


# ---------------------------------------------------------------- numbers

class Numbers:
    """Numbers written by one locale's rules (Babel, CLDR data).

    locale: Babel locale ("en", "pt_BR"). Every method returns a str.
    """

    def __init__(self, locale: str):
        self.locale = locale
        self.decimal_symbol = babel.numbers.get_decimal_symbol(locale)
        self.group_symbol = babel.numbers.get_group_symbol(locale)

    def group(self, n: int) -> str:
        """An integer with the locale's thousands separators: 4096 -> '4,096' / '4.096'."""
        return babel.numbers.format_decimal(int(n), format="#,##0", locale=self.locale)

    def fixed(self, x: float, places: int, grouping: bool = True) -> str:
        """``x`` rounded half-even to ``places`` decimals, always shown: (1.5529, 3) -> '1.553' / '1,553'."""
        pattern = ("#,##0" if grouping else "0") + ("." + "0" * places if places > 0 else "")
        return babel.numbers.format_decimal(x, format=pattern, locale=self.locale,
                                            decimal_quantization=True)

    def short(self, x: float) -> str:
        """A number as Python's ``:g`` writes it, with the locale's decimal mark: 16.5 -> '16.5' / '16,5'."""
        return f"{x:g}".replace(".", self.decimal_symbol)

    def symbols(self) -> dict:
        """{"decimal": ..., "group": ...}: what the page's Python needs to write numbers."""
        return {"decimal": self.decimal_symbol, "group": self.group_symbol}


@cache
def numbers(code: str) -> Numbers:
    """The :class:`Numbers` of the language ``code``."""
    return Numbers(language(code).locale)


# ---------------------------------------------------------------- content overlays

_LETTER = re.compile(r"[^\W\d_]")


def untranslated_keys() -> frozenset:
    """Keys of content TOML whose strings are data (ids, paths, times), never translated."""
    return frozenset(_declared().get("untranslated_keys", []))


def overlay_path(lang: Language, rel: str | Path) -> Path:
    """Where ``lang``'s words for the content file ``rel`` (relative to site/content) live."""
    return CONTENT / lang.code / rel


def _is_text(key: str, value: Any) -> bool:
    return isinstance(value, str) and key not in untranslated_keys() and bool(_LETTER.search(value))


def merge(base: Any, over: Any, where: str) -> Any:
    """``base`` (English content) with ``over`` (one language's words) laid on it.

    Tables merge key by key; a list of tables with ``id`` keys takes a table
    keyed by id; any other list of tables takes a list of the same length,
    item by item; a string, or a list of strings, is replaced. Raises
    I18nError naming ``where`` for a key or id the English file lacks, or a
    list of the wrong length.
    """
    if over is None:
        return base
    if isinstance(base, Mapping):
        if not isinstance(over, Mapping):
            raise I18nError(f"{where}: expected a table")
        out = dict(base)
        for key, value in over.items():
            if key not in base:
                raise I18nError(f"{where}.{key}: not in the English file")
            out[key] = merge(base[key], value, f"{where}.{key}")
        return out
    if isinstance(base, list) and base and all(isinstance(x, Mapping) for x in base):
        if isinstance(over, Mapping):
            ids = [x.get("id") for x in base]
            for key in over:
                if key not in ids:
                    raise I18nError(f"{where}.{key}: no item with that id in the English file")
            return [merge(x, over.get(x.get("id")), f"{where}.{x.get('id')}") for x in base]
        if len(over) != len(base):
            raise I18nError(f"{where}: {len(over)} items, the English file has {len(base)}")
        return [merge(b, o, f"{where}[{i}]") for i, (b, o) in enumerate(zip(base, over, strict=True))]
    if isinstance(base, list) and isinstance(over, list) and len(over) != len(base):
        raise I18nError(f"{where}: {len(over)} items, the English file has {len(base)}")
    return over


def _holds_tables(value: Any) -> bool:
    return isinstance(value, Mapping) or (isinstance(value, list) and any(isinstance(x, Mapping) for x in value))


def missing_words(base: Any, over: Any, where: str = "") -> list[str]:
    """Dotted paths of the English words in ``base`` that ``over`` does not translate."""
    out: list[str] = []
    if isinstance(base, Mapping):
        over = over if isinstance(over, Mapping) else {}
        for key, value in base.items():
            path = f"{where}.{key}" if where else key
            if key in untranslated_keys() and not _holds_tables(value):  # data; a table's words still count
                continue
            if isinstance(value, str):
                if _is_text(key, value) and key not in over:
                    out.append(path)
            else:
                out += missing_words(value, over.get(key), path)
    elif isinstance(base, list):
        if base and all(isinstance(x, Mapping) for x in base):
            for i, item in enumerate(base):
                if isinstance(over, Mapping):
                    sub = over.get(item.get("id"))
                else:
                    sub = over[i] if isinstance(over, list) and i < len(over) else None
                out += missing_words(item, sub, f"{where}.{item.get('id', i)}")
        elif any(isinstance(x, str) and _LETTER.search(x) for x in base) and over is None:
            out.append(where)
    return out


def load_content(rel: str | Path, code: str) -> dict:
    """The TOML content file ``rel`` (relative to site/content) in language
    ``code``: the English file with the language's overlay merged in (if any)."""
    with open(CONTENT / rel, "rb") as f:
        base = tomllib.load(f)
    lang = language(code)
    if lang.default:
        return base
    path = overlay_path(lang, rel)
    if not path.exists():
        return base
    with open(path, "rb") as f:
        over = tomllib.load(f)
    return merge(base, over, f"{lang.code}/{Path(rel).as_posix()}")


def read_text(path: Path, code: str) -> str:
    """A content text file (Markdown) in language ``code``: its overlay under
    site/content/<code>/ when there is one, else the English file."""
    lang = language(code)
    if not lang.default:
        rel = Path(path).resolve().relative_to(CONTENT)
        translated = overlay_path(lang, rel)
        if translated.exists():
            return translated.read_text(encoding="utf-8")
    return Path(path).read_text(encoding="utf-8")


def write_python_catalog(code: str, folder: Path) -> None:
    """<folder>/<locale>/LC_MESSAGES/python.mo and numbers.json of language ``code``, as
    the page's worker writes them for emulator.i18n."""
    lang = language(code)
    (folder / lang.locale / "LC_MESSAGES").mkdir(parents=True, exist_ok=True)
    (folder / lang.locale / "LC_MESSAGES" / "python.mo").write_bytes(mo_bytes(lang, "python"))
    (folder / lang.locale / "numbers.json").write_text(json.dumps(numbers(code).symbols()), encoding="utf-8")


@contextlib.contextmanager
def python_speaks(code: str):
    """Within the block, the emulator's messages and figures (emulator.i18n) are in
    language ``code``, from its catalog compiled into a temporary folder as the page's
    worker gets it; English again afterwards."""
    from emulator import i18n as emulator_i18n

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if not language(code).default:
            write_python_catalog(code, folder)
        emulator_i18n.use(code, str(folder))
        try:
            yield
        finally:
            emulator_i18n.use("en", str(folder))
