"""Content Markdown to HTML, with $...$ formulas as MathML (markdown-it-py, latex2mathml).

Raw HTML in the Markdown is escaped, not passed through (CommonMark with ``html`` off).
"""
from __future__ import annotations

import functools
import re

import latex2mathml.converter
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

#: A number with separators as its language writes it ("65{,}520", "4.456.448", "1{,}5530").
#: latex2mathml reads only digits[.digits] as one number and splits the rest into
#: numbers and punctuation (shown "65, 520"), so _math gives each such number one <mn>.
_GROUPED_NUMBER = re.compile(r"\d+(?:(?:\{[.,]\}|[.,])\d+)+")


def _math(tex: str, options: dict) -> str:
    """One $...$ formula as MathML (dollarmath passes {"display_mode": bool});
    a number with separators stays one number (``_GROUPED_NUMBER``)."""
    numbers: list[str] = []

    def hold(m: re.Match) -> str:
        numbers.append(m.group(0).replace("{", "").replace("}", ""))
        return rf"\text{{cannery-number-{len(numbers) - 1}}}"

    mathml = latex2mathml.converter.convert(_GROUPED_NUMBER.sub(hold, tex),
                                            display="block" if options.get("display_mode") else "inline")
    for i, number in enumerate(numbers):
        mathml = mathml.replace(f"<mtext>cannery-number-{i}</mtext>", f"<mn>{number}</mn>")
    return mathml


@functools.cache
def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "typographer": False}).use(dollarmath_plugin, renderer=_math)
    return md


def markdown(text: str) -> str:
    """Content Markdown to HTML; $...$ and $$...$$ become MathML (latex2mathml).
    Raw HTML in the Markdown is escaped, not passed through."""
    return _markdown().render(text)
