"""The lab's Python and its JavaScript rules in Brazilian Portuguese.

The emulator's messages go through gettext: here the pt_BR catalog
(locale/pt_BR/LC_MESSAGES/python.po) is compiled with ``i18n.mo_bytes`` into a
temporary folder, as build.py ships it to the page's Pyodide, and
``emulator.i18n.use("pt-BR", folder)`` switches to it (tests/page_language.py).
Then every lab rule case (tests/lab_rule_cases.json) goes through Python and,
under node with the pt-BR page catalog, through rules.js: the same fields,
the same Portuguese words.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from page_language import node_env, python_speaks

import lab_api as api
import planner as plan
from emulator import accuracy
from emulator import i18n as emulator_i18n
from emulator.tiling import MANIFEST, make_tiling

ROOT = Path(__file__).resolve().parent.parent
RULES = json.loads((ROOT / "tests" / "lab_rule_cases.json").read_text(encoding="utf-8"))


def validate(params: dict, purpose: str = "count") -> list:
    reply = api.handle({"op": "validate", "params": {**RULES["base"], **params, "purpose": purpose}})
    return [] if reply["ok"] else reply["errors"]


def test_python_refuses_bad_sizes_in_portuguese_with_brazilian_numbers():
    with python_speaks("pt-BR"):
        assert emulator_i18n.language() == "pt-BR"
        [zero] = validate({"n": "0"})
        [minus] = validate({"n": "−5"})
        [huge] = validate({"n": "1000000000"})
        [text] = validate({"n": "abc"})
        [d17] = validate({"d": "17"})
        [check_n] = validate({"n": "9000"}, "check")
    assert zero == {"field": "n", "message": "O comprimento da sequência N precisa ser pelo menos 1; "
                                             "com 0 não há linhas para a atenção."}
    assert minus["message"].endswith("com -5 não há linhas para a atenção.")
    # 10⁹ and Count's limit 65,536 in Brazilian grouping
    assert huge["message"] == ("O comprimento da sequência N pode ser no máximo 65.536; "
                               "1.000.000.000 é grande demais para contar aqui.")
    assert text["message"] == ("Comprimento da sequência N precisa ser um número escrito com os algarismos 0–9; "
                               "“abc” não é.")
    assert d17 == {"field": "d", "message": "A dimensão da cabeça d precisa ser um destes valores: "
                                            "16, 32, 64, 128; 17 não é."}
    assert "vai só até N = 8.192" in check_n["message"] and "Contar funciona até N = 65.536" in check_n["message"]
    # back in English afterwards: the emulator's default
    assert validate({"n": "0"})[0]["message"].startswith("Sequence length N must be at least 1")


def test_python_reads_brazilian_thousands_in_the_form():
    with python_speaks("pt-BR"):
        reply = api.handle({"op": "count", "params": {"kernel": "plain", "n": "4.096", "d": "16"}})
    assert reply["ok"] and reply["result"]["selected"]["n"] == 4096
    assert reply["result"]["selected"]["total_bytes"] == 285_736_960  # the reference figure


def test_the_check_describes_its_rows_in_portuguese():
    tiling = make_tiling("fused", 4096, 16, False, 16384)
    rows = accuracy.rows_to_check(tiling)
    with python_speaks("pt-BR"):
        text = accuracy.describe_rows(rows, tiling)
        small = accuracy.describe_rows(list(range(100)), make_tiling("fused", 100, 16, False, 16384))
    assert text.startswith(f"{len(rows)} de 4.096 linhas: linhas 0–127 (primeiro bloco de consultas), "
                           f"linhas 3.968–4.095 (último bloco de consultas)")
    assert small == "todas as 100 linhas"


def test_a_gpu_refusal_is_in_portuguese_with_the_fix():
    p = api.parse_request({"kernel": "fused", "n": "4096", "d": "16", "workgroup_bytes": "16384"})
    with python_speaks("pt-BR"), pytest.raises(api.InputError) as err:
        plan.gpu_plan(p, {"maxStorageBufferBindingSize": 1 << 20, "maxBufferSize": 1 << 20})
    message = err.value.message
    assert message.startswith("Com N = 4.096, d = 16 e M = 16.384 B, a passada")
    assert "mas esta GPU aceita 1.048.576 B (maxStorageBufferBindingSize). Tente N ≤ " in message


# ---------------------------------------------------------------------------
# rules.js under node, in pt-BR, against Python in pt-BR.

@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_page_refuses_what_python_refuses_in_the_same_portuguese_words(tmp_path):
    cases = RULES["cases"]
    calls = [{"fn": "quickErrors", "args": [{**RULES["base"], **c["params"]}, c["purpose"]]} for c in cases]
    with python_speaks("pt-BR"):
        here = [validate(c["params"], c["purpose"]) for c in cases]
        rules = {"head_dims": MANIFEST["head_dims"], "lesson": MANIFEST["lesson"], **plan.cold_rules()}
    out = subprocess.run([shutil.which("node"), str(ROOT / "tests" / "js_parity.mjs")],
                         input=json.dumps({"manifest": MANIFEST, "rules": rules, "calls": calls}),
                         capture_output=True, text=True, check=True, timeout=60, cwd=ROOT,
                         env=node_env("pt-BR", tmp_path))
    there = [r["value"] for r in json.loads(out.stdout)]
    for case, mine, theirs in zip(cases, here, there, strict=True):
        assert [e["field"] for e in mine] == case["refused"], case["id"]
        assert theirs == mine, case["id"]
    words = " ".join(e["message"] for errs in here for e in errs)
    assert "precisa" in words and "must" not in words  # Portuguese, not English
    assert "1.000.000.000" in words and "65.536" in words
