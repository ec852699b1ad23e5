"""One number parser, two languages: emulator/parse_number.py and site/static/js/parse-number.js.

Every row of tests/number_cases.json goes through both; they must give the row's
value, or its reason and exact message. The page relies on this to answer a bad N
at once, before Pyodide has loaded, without contradicting the emulator later.
A row with "lang" (e.g. "pt-BR") is read by both in that language: its rules
("4.096", "1,650") and its messages, from the pt_BR catalogs.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from page_language import node_env, python_speaks

from emulator.parse_number import parse_number
from emulator.tiling import InputError, parse_int

ROOT = Path(__file__).resolve().parent.parent
CASES = json.loads((ROOT / "tests" / "number_cases.json").read_text(encoding="utf-8"))["cases"]
LANGS = sorted({c.get("lang", "en") for c in CASES})


def _id(case):
    return f"{case.get('lang', 'en')}-{case['text']!r}-{'integer' if case['integer'] else 'decimal'}"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_python_reads_each_text_as_the_table_says(case):
    with python_speaks(case.get("lang", "en")):
        got = parse_number(case["text"], case["integer"], case["label"], fraction=case.get("fraction", False))
    want = case["expect"]
    assert got.ok == want["ok"]
    if want["ok"]:
        assert got.value == want["value"] and isinstance(got.value, int) == case["integer"]
    else:
        assert (got.reason, got.message) == (want["reason"], want["message"])


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
@pytest.mark.parametrize("lang", LANGS)
def test_javascript_reads_every_text_exactly_as_python_does(lang, tmp_path):
    cases = [c for c in CASES if c.get("lang", "en") == lang]
    script = (
        "import './tests/js_lang.mjs';\n"
        "const { parseNumber } = await import('./site/static/js/parse-number.js');\n"
        "const { readFileSync } = await import('node:fs');\n"
        "const cases = JSON.parse(readFileSync('tests/number_cases.json', 'utf8')).cases"
        f".filter((c) => (c.lang || 'en') === {json.dumps(lang)});\n"
        "const read = (c) => parseNumber(c.text, {integer: c.integer, label: c.label, fraction: !!c.fraction});\n"
        "console.log(JSON.stringify(cases.map(read)));\n"
    )
    out = subprocess.run(["node", "--input-type=module", "-e", script], cwd=ROOT, env=node_env(lang, tmp_path),
                         capture_output=True, text=True, check=True).stdout
    got = json.loads(out)
    mismatches = [(c["text"], c["expect"], g) for c, g in zip(cases, got, strict=True)
                  if (g["ok"], g.get("value"), g.get("reason"), g.get("message"))
                  != (c["expect"]["ok"], c["expect"].get("value"), c["expect"].get("reason"),
                      c["expect"].get("message"))]
    assert not mismatches
    assert len(got) == len(cases) > 10


@pytest.mark.parametrize("text,value", [("4,096", 4096), ("4 096", 4096), ("4.096", 4096), ("16.", 16)])
def test_whole_number_fields_take_grouped_digits(text, value):
    assert parse_int("n", text, "Sequence length N") == value


@pytest.mark.parametrize("text,reason_words", [
    ("\u0663", "other digits"), ("1,5", "whole number"), ("12.000", "could be 12 or 12000"), ("abc", "0–9"),
])
def test_whole_number_fields_refuse_with_the_parsers_message(text, reason_words):
    with pytest.raises(InputError) as err:
        parse_int("head", text, "Head")
    assert err.value.field == "head" and reason_words in err.value.message
