"""What ``python -m i18n check`` (and tests/test_i18n.py) hold every language to.

- every message the code holds (Babel's extraction) has a translation, not
  fuzzy, with the same placeholders;
- every word of every content file has its overlay, and every Markdown text
  its translated sibling;
- no number is typed into a translation: a figure comes from data through a
  placeholder, so it is written by the language's rules. Digits may remain in
  names (float32, fp16, FlashAttention-2), in code and formulas, in years, and
  as small whole numbers the English text also has (they read the same in
  every language we build); anything else with digits is a typed number.
  In the exercise Markdown, whose formulas are rendered after its
  placeholders (build.py, the ``md`` filter), formulas are read too: a number
  typed in $...$ with a decimal or group separator (``11{,}09``, ``65.520``)
  or of 1000 or more is a typed number; small whole numbers and whole
  exponents (``10^{-9}``) stay.
"""
from __future__ import annotations

import re
import tomllib

from . import CONTENT, I18nError, languages, merge, missing_words, overlay_path, po_path, read_catalog

#: Content files with words (relative to site/content); Markdown is found by globbing.
CONTENT_FILES = ("film.toml", "sources.toml", "module.toml", "lab.toml", "pages/*.toml",
                 "exercises/*/exercise.toml", "exercises/*/*/teaching.toml")

_PLACEHOLDER = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{[A-Za-z_][\w.]*\}|%\([\w]+\)[sdrf]|%[sd]", re.S)
_CODE = re.compile(r"```.*?```|`[^`\n]*`|\$\$.*?\$\$|\$[^$\n]*\$|<code>.*?</code>", re.S)
_CODE_SPAN = re.compile(r"```.*?```|`[^`\n]*`|<code>.*?</code>", re.S)
_NUMBER = re.compile(r"(?<![\w.,])[-−]?\d[\d.,]*(?![\w])")
_FORMULA = re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$", re.S)
#: A number in a formula, with its separators as either language writes them in
#: TeX ("65{,}520", "65.520", "11,0901"), and what precedes it when it is an exponent.
_FORMULA_NUMBER = re.compile(r"(\^\{?-?)?(\d+(?:(?:\{[.,]\}|[.,])\d+)*)")


def placeholders(text: str) -> set:
    """The placeholders of a message: {name}, %(name)s, {{ expr }}."""
    return {p.replace(" ", "") for p in _PLACEHOLDER.findall(text)}


def formula_numbers(text: str) -> list[str]:
    """Figures typed inside the $...$ formulas of Markdown ``text`` (code spans and
    placeholders are not read): numbers with a separator, or of 1000 or more;
    small whole numbers and whole exponents are allowed. Empty when clean."""
    bad = []
    for formula in _FORMULA.findall(_PLACEHOLDER.sub(" ", _CODE_SPAN.sub(" ", text))):
        for exponent, token in _FORMULA_NUMBER.findall(formula):
            whole = token.isdigit()
            if whole and (exponent or int(token) < 1000):
                continue
            bad.append(token)
    return bad


def typed_numbers(text: str, english: str = "", formulas: bool = False) -> list[str]:
    """Numbers typed into ``text`` (a translation of ``english``) that are not
    allowed: see the module docstring. With ``formulas`` (Markdown whose
    formulas are rendered after its placeholders), figures typed inside
    $...$ count too (:func:`formula_numbers`). Empty when clean."""
    def bare(s: str) -> str:
        return _PLACEHOLDER.sub(" ", _CODE.sub(" ", s))

    allowed = {t.strip(".,") for t in _NUMBER.findall(bare(english))}
    bad = formula_numbers(text) if formulas else []
    for token in _NUMBER.findall(bare(text)):
        token = token.rstrip(".,")
        digits = token.lstrip("-−")
        if re.fullmatch(r"(19|20)\d\d", digits):  # a year
            continue
        if digits.isdigit() and int(digits) < 1000 and token in allowed:
            continue
        bad.append(token)
    return bad


def _message_problems(extracted: dict[str, set]) -> list[str]:
    out = []
    for lang in languages():
        if lang.default:
            continue
        for domain, ids in sorted(extracted.items()):
            where = po_path(lang, domain).relative_to(CONTENT.parent.parent)
            try:
                catalog = read_catalog(lang, domain)
            except I18nError as exc:
                out.append(str(exc))
                continue
            have = {}
            for msg in catalog:
                if msg.id:
                    have[msg.id if isinstance(msg.id, str) else msg.id[0]] = msg
            for msgid in sorted(ids - set(have)):
                out.append(f"{where}: not yet extracted (run `python -m i18n update`): {msgid!r}")
            for msgid in sorted(ids & set(have)):
                msg = have[msgid]
                strings = list(msg.string) if isinstance(msg.string, tuple | list) else [msg.string]
                ids_all = list(msg.id) if isinstance(msg.id, tuple | list) else [msg.id]
                if msg.fuzzy or not all(strings):
                    out.append(f"{where}: untranslated{' (fuzzy)' if msg.fuzzy else ''}: {msgid!r}")
                    continue
                want = set().union(*(placeholders(i) for i in ids_all))
                for s in strings:
                    if placeholders(s) - want or (len(strings) == 1 and placeholders(s) != want):
                        out.append(f"{where}: placeholders differ in {msgid!r}: {sorted(placeholders(s))} "
                                   f"against {sorted(want)}")
                    for token in typed_numbers(s, " ".join(ids_all)):
                        out.append(f"{where}: typed number {token!r} in the translation of {msgid!r}")
    return out


def _strings(value, where=""):
    """(path, string) for every string leaf of a TOML value."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{where}.{k}" if where else k)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{where}[{i}]")
    elif isinstance(value, str):
        yield where, value


def _content_problems() -> list[str]:
    out = []
    files = sorted({p for pattern in CONTENT_FILES for p in CONTENT.glob(pattern)})
    texts = sorted(p for folder in ("exercises", "kit") for p in (CONTENT / folder).rglob("*.md"))
    for lang in languages():
        if lang.default:
            continue
        for path in files:
            rel = path.relative_to(CONTENT)
            with open(path, "rb") as f:
                base = tomllib.load(f)
            over_path = overlay_path(lang, rel)
            over = None
            if over_path.exists():
                with open(over_path, "rb") as f:
                    over = tomllib.load(f)
                try:
                    merge(base, over, f"{lang.code}/{rel.as_posix()}")
                except I18nError as exc:
                    out.append(str(exc))
                english = dict(_strings(base))
                for key, text in _strings(over):
                    for token in typed_numbers(text, " ".join(english.values())):
                        out.append(f"{lang.code}/{rel.as_posix()}: typed number {token!r} at {key}")
            for key in missing_words(base, over):
                out.append(f"{lang.code}/{rel.as_posix()}: no translation for {key}")
        for path in texts:
            rel = path.relative_to(CONTENT)
            target = overlay_path(lang, rel)
            if not target.exists():
                out.append(f"{lang.code}/{rel.as_posix()}: missing (the translation of {rel.as_posix()})")
                continue
            for token in typed_numbers(target.read_text(encoding="utf-8"), path.read_text(encoding="utf-8"),
                                       formulas=True):
                out.append(f"{lang.code}/{rel.as_posix()}: typed number {token!r}")
    return out


def problems(extracted: dict[str, set]) -> list[str]:
    """Every translation problem, one line each; ``extracted`` maps each domain
    to the msgids the code holds now. Empty when every language is complete."""
    return _message_problems(extracted) + _content_problems()


