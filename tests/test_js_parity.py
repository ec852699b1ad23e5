"""The page's JavaScript and the Python emulator apply the same rules.

The pure ES modules (site/static/js/lab/rules.js, site/static/js/gpu/device.js's
softwareAdapter) run under node; tests/lab_rule_cases.json (raw form values → the
fields refused and the words) is read by both sides: rules.js quickErrors, which
answers before Pyodide starts, against emulator/tiling.py parse_request, the judge.

The page plans no GPU run itself: every plan is planner/__init__.py's (tests/test_emulator.py,
tests/gpu_plan_cases.json), and the page only applies it (tests/test_browser_gpu.py).
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import lab_api as api
import planner as plan
from emulator.tiling import HEAD_DIMS, M_MAX, M_MIN, MANIFEST, InputError, parse_request

ROOT = Path(__file__).resolve().parent.parent
BRIDGE = Path(__file__).with_name("js_parity.mjs")
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def lab_rules() -> dict:
    """The lab form's data-rules as build.py writes them, in the emulator's active language:
    the manifest's input rules and the planner's table (planner.cold_rules)."""
    return {"head_dims": MANIFEST["head_dims"], "lesson": MANIFEST["lesson"], **plan.cold_rules()}


def js(calls: list, rules: dict | None = None, env: dict | None = None) -> list:
    """Run [{"fn", "args"}] through tests/js_parity.mjs with these form rules (default:
    lab_rules()); one node process per batch."""
    payload = {"manifest": MANIFEST, "rules": rules or lab_rules(), "calls": calls}
    out = subprocess.run([NODE, str(BRIDGE)], input=json.dumps(payload), capture_output=True, text=True,
                         check=True, timeout=60, cwd=ROOT, env=env)
    return json.loads(out.stdout)


# ---------------------------------------------------------------------------
# Lab input rules: the same fields, the same words.

RULES = json.loads((ROOT / "tests" / "lab_rule_cases.json").read_text(encoding="utf-8"))
RULE_CASES = RULES["cases"]


@pytest.fixture(scope="module")
def js_rules():
    calls = [{"fn": "quickErrors", "args": [{**RULES["base"], **c["params"]}, c["purpose"]]} for c in RULE_CASES]
    return {c["id"]: r["value"] for c, r in zip(RULE_CASES, js(calls), strict=True)}


def python_rules(case) -> list:
    reply = api.handle({"op": "validate", "params": {**RULES["base"], **case["params"], "purpose": case["purpose"]}})
    return [] if reply["ok"] else reply["errors"]


@pytest.mark.parametrize("case", RULE_CASES, ids=[c["id"] for c in RULE_CASES])
def test_the_page_refuses_what_python_refuses_in_the_same_words(case, js_rules):
    here, there = python_rules(case), js_rules[case["id"]]
    assert [e["field"] for e in here] == case["refused"]
    assert there == here


def test_the_cold_pages_tiling_refusals_are_the_planners_at_every_edge():
    """Every kernel the tiling rule applies to, every d, and the M on each side of the
    smallest that tiles (and the range's ends): rules.js, reading the planner's table,
    refuses exactly where emulator/tiling.py does, in its words."""
    table = plan.cold_rules()["tiling"]
    assert table, "the table lists no refusal: nothing below would be tested"
    cases = []
    for group in table:
        for kernel in group["kernels"]:
            for d in HEAD_DIMS:
                smallest = group["by_d"].get(str(d), {}).get("smallest_m", M_MIN)
                for m in sorted({M_MIN, smallest - 1, smallest, smallest + 1, M_MAX} & set(range(M_MIN, M_MAX + 1))):
                    cases.append({"kernel": kernel, "n": "64", "d": str(d), "workgroup_bytes": str(m)})
    replies = js([{"fn": "quickErrors", "args": [c, "count"]} for c in cases])
    refused = 0
    for case, reply in zip(cases, replies, strict=True):
        try:
            parse_request(case)
            expected = []
        except InputError as e:
            expected = [{"field": e.field, "message": e.message}]
            refused += 1
        assert reply["value"] == expected, case
    assert refused >= 2 * len(table[0]["kernels"])  # d = 64 and 128 refuse small M


def test_without_the_planners_table_the_page_refuses_no_tiling():
    """The rule lives in Python only: rules.js given no table has no tiling rule of its own."""
    case = next(c for c in RULE_CASES if c["id"] == "M = 8,192 too small for d = 128")
    rules = {"head_dims": MANIFEST["head_dims"], "lesson": MANIFEST["lesson"]}
    [reply] = js([{"fn": "quickErrors", "args": [{**RULES["base"], **case["params"]}, case["purpose"]]}], rules)
    assert reply["value"] == []
    assert python_rules(case)[0]["field"] == "workgroup_bytes"


def test_both_read_causal_from_one_vocabulary():
    yes, no = MANIFEST["lesson"]["true_words"], MANIFEST["lesson"]["false_words"]
    samples = [*yes, *no, *(w.upper() for w in yes), " On ", "maybe", "", "2", "nope",
               "a\u200bvery long word indeed, truly"]
    replies = js([{"fn": "readBoolean", "args": [w]} for w in samples])
    for word, reply in zip(samples, replies, strict=True):
        try:
            value = parse_request({"n": "4", "d": "16", "causal": word})["causal"]
        except InputError as e:
            assert e.field == "causal"
            assert reply["value"] == {"ok": False, "message": e.message}, word
        else:
            assert reply["value"] == {"ok": True, "value": value}, word
    assert replies[samples.index("1")]["value"] == {"ok": True, "value": True}
    assert samples.index("maybe") and replies[samples.index("maybe")]["value"]["ok"] is False


# ---------------------------------------------------------------------------
# A software adapter is named as running on the CPU.

ADAPTERS = [
    ({"vendor": "google", "architecture": "swiftshader", "description": "SwiftShader Device (Subzero)"}, False,
     "SwiftShader"),
    ({"vendor": "mesa", "device": "llvmpipe (LLVM 19.1.7, 256 bits)"}, False, "lavapipe"),
    ({"vendor": "microsoft", "description": "Microsoft Basic Render Driver"}, False, "WARP"),
    ({"vendor": "unknown", "description": "Some renderer"}, True, "a fallback (software) adapter"),
    ({"vendor": "nvidia", "architecture": "hopper", "description": "NVIDIA H200"}, False, None),
    ({"vendor": "apple", "architecture": "metal-3"}, False, None),
]


def test_software_adapters_are_named_and_gpus_are_not():
    replies = js([{"fn": "softwareAdapter", "args": [info, fallback]} for info, fallback, _ in ADAPTERS])
    assert [r["value"] for r in replies] == [name for _, _, name in ADAPTERS]
