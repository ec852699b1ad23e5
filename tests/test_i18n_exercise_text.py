"""Each exercise's translated Markdown keeps what is not words: the same Jinja
placeholders, code and formulas as its English file, and the same hints in the
same order.

build.py renders an exercise's prompt.md, hints.md and after.md first as a
Jinja2 template (its figures come from data through ``{{ ... }}``), then as
Markdown with ``$...$`` formulas as MathML. A translation may change the words
around them, never them, with two allowances for the way Portuguese writes
numbers (i18n/checks.py, ``typed_numbers``):

- a number inside a formula is written by the language's rules: English
  ``$e^{11.09} \\approx 65{,}513$`` is ``$e^{11{,}09} \\approx 65.513$`` in pt-BR.
  Formulas are compared with each number replaced by its value;
- a number the English file types in its prose (65,504; 709.78) cannot stay
  typed in the translation, so the translation may hold it in a formula or a
  code span of its own (``$65.504$``). Such an extra formula or code span
  carries only numbers the English prose has.

The Markdown is parsed by the site's own parser (``build._markdown``:
markdown-it-py with the dollarmath plugin) and the placeholders by Jinja2's
lexer, so a formula or code span here is exactly what the page renders as one.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import jinja2
import pytest

import build
import i18n
from course import _hints

EXERCISES = i18n.CONTENT / "exercises"
ENGLISH = sorted(EXERCISES.rglob("*.md"))
TRANSLATED = [lang for lang in i18n.languages() if not lang.default]

#: A number as each language writes it in a formula: English groups with "," or
#: "{,}" and marks decimals with "."; Brazilian Portuguese groups with "." and
#: marks decimals with "{,}" (or ",").
_FORMULA_NUMBER = {
    "en": re.compile(r"\d+(?:(?:\{,\}|,)\d{3}(?!\d))*(?:\.\d+)?"),
    "pt": re.compile(r"\d+(?:\.\d{3}(?!\d))*(?:(?:\{,\}|,)\d+)?"),
}
#: A number typed in English prose: 65,504, 709.78, 1,000.
_PROSE_NUMBER = re.compile(r"(?<![\w.,])\d+(?:,\d{3}(?!\d))*(?:\.\d+)?(?![\w])")
_JINJA = jinja2.Environment()


def _value(token: str, lang: str) -> str:
    """A written number as one canonical string: digits, then "." and the decimals as written."""
    token = token.replace("{,}", ",")
    if lang == "pt":
        token = token.replace(".", "").replace(",", ".")
    else:
        token = token.replace(",", "")
    return token


def _family(code: str) -> str:
    return "en" if code == "en" else code.split("-")[0]


@dataclass
class Parts:
    """What a Markdown text holds besides its words."""

    placeholders: set
    code: set       # code spans and code blocks, as the page shows them
    formulas: set   # each with its numbers replaced by their values
    prose_numbers: set  # numbers typed in the prose (text outside code and formulas)


def _placeholders(text: str) -> set:
    """Every {{ ... }} and {% ... %} of a Jinja2 template, as its tokens (spacing ignored)."""
    out, current = set(), None
    for _, kind, value in _JINJA.lex(text):
        if kind in ("variable_begin", "block_begin"):
            current = [value]
        elif kind in ("variable_end", "block_end"):
            out.add(" ".join([*current, value]))
            current = None
        elif current is not None and kind != "whitespace":
            current.append(value)
    return out


def _tokens(tokens) -> Iterable:
    for tok in tokens:
        yield tok
        if tok.children:
            yield from _tokens(tok.children)


def _formula(tex: str, fam: str) -> str:
    """A formula with spacing collapsed, placeholders blanked and each number
    written as <value>: the same for "65{,}520" (en) and "65.520" (pt)."""
    tex = re.sub(r"\{\{.*?\}\}", "{{}}", tex)
    tex = _FORMULA_NUMBER[fam].sub(lambda m: f"<{_value(m.group(0), fam)}>", tex)
    return re.sub(r"\s+", " ", tex).strip()


def parts(text: str, lang: str) -> Parts:
    """The placeholders, code, formulas and typed numbers of one Markdown text in language ``lang``."""
    fam = _family(lang)
    found = Parts(_placeholders(text), set(), set(), set())
    for tok in _tokens(build._markdown().parse(text)):
        if tok.type in ("code_inline", "fence", "code_block"):
            found.code.add(tok.content.strip())
        elif tok.type.startswith("math"):
            found.formulas.add(_formula(tok.content, fam))
        elif tok.type == "text":
            found.prose_numbers |= {_value(n, "en") for n in _PROSE_NUMBER.findall(tok.content)}
    return found


def differences(english: str, translated: str, lang: str) -> list[str]:
    """What ``translated`` (in ``lang``) changes of ``english`` besides words; empty when nothing."""
    en, tr = parts(english, "en"), parts(translated, lang)
    out = []
    if en.placeholders != tr.placeholders:
        out.append(f"placeholders: missing {sorted(en.placeholders - tr.placeholders)}, "
                   f"added {sorted(tr.placeholders - en.placeholders)}")
    for what in ("code", "formulas"):
        have, want = getattr(tr, what), getattr(en, what)
        if want - have:
            out.append(f"{what} missing: {sorted(want - have)}")
        for extra in sorted(have - want):
            numbers = set(re.findall(r"\d+(?:\.\d+)?", extra))  # formulas hold values already
            if not numbers or not numbers <= en.prose_numbers:
                out.append(f"{what} added: {extra!r} (an added one may only hold a number the English prose types)")
    return out


def hint_differences(english: str, translated: str, lang: str) -> list[str]:
    """As :func:`differences`, hint by hint (hints.md is split at blank lines), plus a different count."""
    en, tr = _hints(english), _hints(translated)
    if len(en) != len(tr):
        return [f"{len(tr)} hints, the English file has {len(en)} (hints are split at blank lines)"]
    return [f"hint {i}: {d}" for i, (e, t) in enumerate(zip(en, tr, strict=True), 1)
            for d in differences(e, t, lang)]


PAIRS = [pytest.param(lang, path, id=f"{lang.code}-{path.relative_to(EXERCISES).as_posix()}")
         for lang in TRANSLATED for path in ENGLISH]


@pytest.mark.parametrize(("lang", "path"), PAIRS)
def test_translation_keeps_placeholders_code_and_formulas(lang, path: Path):
    target = i18n.overlay_path(lang, path.relative_to(i18n.CONTENT))
    assert target.exists(), f"{target.relative_to(i18n.ROOT)} is missing"
    english = path.read_text(encoding="utf-8")
    translated = target.read_text(encoding="utf-8")
    if path.name == "hints.md":
        assert hint_differences(english, translated, lang.code) == []
    assert differences(english, translated, lang.code) == []


def test_translated_text_renders_with_the_pages_data():
    """Every translated text renders as the page renders it (Jinja, then Markdown),
    with its figures written by the language's rules: Predict's after-text in pt-BR."""
    from course import load_exercise
    ex = load_exercise("online-softmax", "pt-BR")
    step = next(s for s in ex["steps"] if s["id"] == "predict")
    html = build.make_env("pt-BR").from_string("{{ text | md(step=step, fig=fig) }}").render(
        text=step["after_md"], step=step, fig=step["fig"])
    text = re.sub(r"<[^>]+>", "", html)  # what a reader sees, MathML included
    nums = i18n.numbers("pt-BR")
    assert nums.group(step["fig"]["fused"]) in text and nums.group(step["fig"]["plain"]) in text
    assert f"{nums.fixed(step['fig']['ratio'], 2)} vezes" in text
    assert "Como o emulador faz a conta" in text
    assert "{{" not in html and "$" not in html


# The comparison itself must catch real mistakes.
ENGLISH_SAMPLE = ("Scores $m = 3$, $\\ell \\approx 1.5530$ from `online_softmax(scores, block)`; "
                  "$N = {{ step.n }}$ rows, and 65,504 is the largest fp16 number.")
GOOD = ("Os scores dão $m = 3$ e $\\ell \\approx 1{,}5530$ em `online_softmax(scores, block)`; "
        "$N = {{ step.n }}$ linhas, e $65.504$ é o maior número em fp16.")


def test_a_faithful_translation_passes():
    assert differences(ENGLISH_SAMPLE, GOOD, "pt-BR") == []


@pytest.mark.parametrize(("broken", "why"), [
    (GOOD.replace("`online_softmax(scores, block)`", "`online_softmax(pontos, bloco)`"), "code renamed"),
    (GOOD.replace("{{ step.n }}", "{{ step.d }}"), "another placeholder"),
    (GOOD.replace("$N = {{ step.n }}$", "N = {{ step.n }}"), "formula dropped"),
    (GOOD.replace("1{,}5530", "1.5530"), "English decimal point in a pt-BR formula"),
    (GOOD.replace("1{,}5530", "1{,}553"), "a formula's value changed"),
    (GOOD.replace("$65.504$", "$65.536$"), "an added formula with a number the English lacks"),
    (GOOD + " Veja `math.log`.", "an added code span"),
])
def test_a_changed_translation_fails(broken, why):
    assert differences(ENGLISH_SAMPLE, broken, "pt-BR") != [], why


HINTS = "First hint, with `a`.\n\nSecond hint, with `b`.\n"


def test_hints_kept_in_order_pass():
    assert hint_differences(HINTS, "Primeira dica, com `a`.\n\nSegunda dica, com `b`.\n", "pt-BR") == []


@pytest.mark.parametrize(("broken", "why"), [
    ("Primeira dica, com `a`.\nSegunda dica, com `b`.\n", "two hints merged into one"),
    ("Primeira dica, com `b`.\n\nSegunda dica, com `a`.\n", "hints swapped"),
    ("Primeira dica, com `a`.\n\nSegunda dica,\n\ncom `b`.\n", "a hint split in two"),
])
def test_changed_hints_fail(broken, why):
    assert hint_differences(HINTS, broken, "pt-BR") != [], why


@pytest.mark.parametrize(("tex", "number"), [
    ("\\ell \\approx 1{,}5530", "1,5530"),          # pt-BR decimal comma
    ("x = \\ln 65{,}520 \\approx 11.0901", "65,520"),  # English grouping
    ("4\\,(2Nd + 2dNT_r) = 4.456.448", "4.456.448"),  # pt-BR grouping, from {{ x | thousands }}
    ("e^{11{,}09} \\approx 65.513", "11,09"),
])
def test_a_number_with_separators_is_one_mathml_number(tex, number):
    """latex2mathml alone splits "1{,}5530" into 1, a comma and 5530 (read "1, 5530")."""
    assert f"<mn>{number}</mn>" in build._math(tex, {})


def test_lists_in_formulas_keep_their_commas():
    assert "<mn>16</mn><mo>&#x0002C;</mo><mn>32</mn>" in build._math("\\{16, 32\\}", {})
