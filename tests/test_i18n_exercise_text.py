"""Each exercise's translated Markdown keeps what is not words: the same Jinja
placeholders, code and formulas as its English file, and the same hints in the
same order; and neither file types a figure.

build.py renders an exercise's prompt.md, hints.md and after.md first as a
Jinja2 template (its figures come from data through ``{{ ... }}``: course/figures.py
as ``exercise.figures``, the step's exercise.toml settings as ``step``, the
emulator's ``counts``), then as Markdown with ``$...$`` formulas as MathML. So a
figure inside a formula is a placeholder too (``$\\ln {{ exercise.figures.fp16.edge
| thousands }}$``) and each language writes it by its own rules. A translation may
change the words around placeholders, code and formulas, never them: formulas are
compared as written (spacing aside). No text, English or translated, types a
number with decimals or of 1000 or more, in prose or in a formula
(i18n/checks.py, ``typed_numbers``): only small whole numbers, exponents, years
and code keep their digits.

The Markdown is parsed by the site's own parser (``sitebuild.markdown._markdown``:
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
from i18n.checks import typed_numbers
from sitebuild.markdown import _markdown, _math

EXERCISES = i18n.CONTENT / "exercises"
ENGLISH = sorted(EXERCISES.rglob("*.md"))
TRANSLATED = [lang for lang in i18n.languages() if not lang.default]

_JINJA = jinja2.Environment()


@dataclass
class Parts:
    """What a Markdown text holds besides its words."""

    placeholders: set
    code: set       # code spans and code blocks, as the page shows them
    formulas: set   # as written, spacing collapsed


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


def _formula(tex: str) -> str:
    """A formula with spacing collapsed (placeholders included: "{{ x|fixed(4) }}" = "{{x | fixed(4)}}")."""
    tex = re.sub(r"\{\{(.*?)\}\}", lambda m: "{{" + re.sub(r"\s+", "", m.group(1)) + "}}", tex)
    return re.sub(r"\s+", " ", tex).strip()


def parts(text: str) -> Parts:
    """The placeholders, code and formulas of one Markdown text."""
    found = Parts(_placeholders(text), set(), set())
    for tok in _tokens(_markdown().parse(text)):
        if tok.type in ("code_inline", "fence", "code_block"):
            found.code.add(tok.content.strip())
        elif tok.type.startswith("math"):
            found.formulas.add(_formula(tok.content))
    return found


def differences(english: str, translated: str, lang: str) -> list[str]:
    """What ``translated`` (in ``lang``) changes of ``english`` besides words, or a
    figure either of them types; empty when nothing."""
    en, tr = parts(english), parts(translated)
    out = []
    if en.placeholders != tr.placeholders:
        out.append(f"placeholders: missing {sorted(en.placeholders - tr.placeholders)}, "
                   f"added {sorted(tr.placeholders - en.placeholders)}")
    for what in ("code", "formulas"):
        have, want = getattr(tr, what), getattr(en, what)
        if want - have:
            out.append(f"{what} missing: {sorted(want - have)}")
        if have - want:
            out.append(f"{what} added: {sorted(have - want)}")
    for name, text in (("English", english), (lang, translated)):
        typed = typed_numbers(text, english, formulas=True)
        if typed:
            out.append(f"{name} text types {typed}: write each as a placeholder ({{{{ ... | thousands }}}})")
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
ENGLISH_SAMPLE = ("Scores $m = 3$, $\\ell \\approx {{ ex.l | fixed(4) }}$ from `online_softmax(scores, block)`; "
                  "$N = {{ step.n }}$ rows, and {{ fp16.max | thousands }} is the largest fp16 number.")
GOOD = ("Os scores dão $m = 3$ e $\\ell \\approx {{ ex.l|fixed(4) }}$ em `online_softmax(scores, block)`; "
        "$N = {{ step.n }}$ linhas, e {{ fp16.max | thousands }} é o maior número em fp16.")


def test_a_faithful_translation_passes():
    assert differences(ENGLISH_SAMPLE, GOOD, "pt-BR") == []


@pytest.mark.parametrize(("broken", "why"), [
    (GOOD.replace("`online_softmax(scores, block)`", "`online_softmax(pontos, bloco)`"), "code renamed"),
    (GOOD.replace("{{ step.n }}", "{{ step.d }}"), "another placeholder"),
    (GOOD.replace("$N = {{ step.n }}$", "N = {{ step.n }}"), "formula dropped"),
    (GOOD.replace("{{ ex.l|fixed(4) }}", "1{,}5530"), "a figure typed in a formula, pt-BR style"),
    (GOOD.replace("{{ ex.l|fixed(4) }}", "{{ ex.l | fixed(3) }}"), "a formula's placeholder changed"),
    (GOOD.replace("{{ fp16.max | thousands }}", "$65.504$"), "a figure typed in an added formula"),
    (GOOD + " Veja `math.log`.", "an added code span"),
    (GOOD + " O limite é $\\ln 65.520$.", "an added formula"),
])
def test_a_changed_translation_fails(broken, why):
    assert differences(ENGLISH_SAMPLE, broken, "pt-BR") != [], why


@pytest.mark.parametrize(("english", "why"), [
    (ENGLISH_SAMPLE.replace("{{ ex.l | fixed(4) }}", "1.5530"), "a decimal typed in a formula"),
    (ENGLISH_SAMPLE.replace("{{ fp16.max | thousands }}", "65,504"), "a figure typed in prose"),
    (ENGLISH_SAMPLE.replace("{{ fp16.max | thousands }}", "$65{,}504$"), "a figure typed in a formula"),
])
def test_a_figure_typed_in_the_english_text_fails(english, why):
    """The translation cannot be faithful to a typed figure: the English must name it from data too."""
    assert differences(english, english, "pt-BR") != [], why


@pytest.mark.parametrize(("tex", "kept"), [
    ("$10^{-9}$ and $2 \\cdot 10^{-3}$", "exponents and small whole numbers"),
    ("$2^{1024}$", "a whole exponent of any size"),
    ("$d \\in \\{16, 32, 64, 128\\}$", "a list of small numbers"),
    ("`math.log(65520)` and `scale=0.01`", "code"),
    ("$\\ln {{ exercise.figures.fp16.edge | thousands }}$", "a placeholder"),
])
def test_what_a_formula_may_keep(tex, kept):
    assert typed_numbers(tex, tex, formulas=True) == [], kept


@pytest.mark.parametrize(("lang", "expected"), [
    ("en", ["65,504", "32,768", "65,536", "11.0901 and not 11.09", "\u2248 11.0901", "ln 65,520"]),
    ("pt-BR", ["65.504", "32.768", "65.536", "11,0901, e não 11,09", "\u2248 11,0901", "ln 65.520"]),
])
def test_the_fp16_figures_render_by_each_languages_rules(lang, expected):
    """Harden's after-text, as its page renders it: the fp16 figures from course/figures.py
    (65,504 / 65.504; 11.0901 / 11,0901), each formula number one MathML <mn>."""
    from course import load_exercise
    ex = load_exercise("flash-backward", lang)
    step = next(s for s in ex["steps"] if s["id"] == "harden")
    html = build.make_env(lang).from_string("{{ text | md(step=step, fig=fig) }}").render(
        text=step["after_md"], step=step, fig=step["fig"], exercise=ex)
    text = re.sub(r"<[^>]+>", " ", html)
    text = re.sub(r"\s+", " ", text.replace("&#x02248;", "\u2248"))
    for figure in expected:
        assert figure in text, (figure, text[:600])
    edge = i18n.numbers(lang).group(ex["figures"]["fp16"]["edge"])
    assert f"<mi>ln</mi><mn>{edge}</mn>" in html
    assert "{{" not in html and "$" not in html


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
    assert f"<mn>{number}</mn>" in _math(tex, {})


def test_lists_in_formulas_keep_their_commas():
    assert "<mn>16</mn><mo>&#x0002C;</mo><mn>32</mn>" in _math("\\{16, 32\\}", {})
