"""The page's JavaScript and the Python emulator apply the same rules.

The pure ES modules (site/static/js/lab/rules.js, site/static/js/gpu/plan.js)
run under node; each case table is read by both sides:

* tests/lab_rule_cases.json: raw form values → the fields refused and the words
  (rules.js quickErrors, which answers before Pyodide starts, against
  emulator/tiling.py parse_request, the judge);
* tests/gpu_plan_cases.json: sizes and WebGPU limits → fits, limits to ask for,
  the field a refusal names (plan.js planDevice against emulator/api.py gpu_plan);
* every kernel, pass, d and subgroup size → the shader and constants (plan.js
  passVariant against the native host's pass_variant), and every kernel, N, d, M
  and limits → whether it fits (plan.js against the native host's plan).
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from emulator import api, plan
from emulator.tiling import MANIFEST, InputError, parse_request

ROOT = Path(__file__).resolve().parent.parent
BRIDGE = Path(__file__).with_name("js_parity.mjs")
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def js(calls: list) -> list:
    """Run [{"fn", "args"}] through tests/js_parity.mjs; one node process per batch."""
    out = subprocess.run([NODE, str(BRIDGE)], input=json.dumps({"manifest": MANIFEST, "calls": calls}),
                         capture_output=True, text=True, check=True, timeout=60, cwd=ROOT)
    return json.loads(out.stdout)


def _host():
    """The native WGSL host (cannery_host.wgsl; needs numpy)."""
    from cannery_host import wgsl  # noqa: PLC0415
    return wgsl


FORWARD = [k for k, spec in MANIFEST["kernels"].items() if spec.get("direction", "forward") == "forward"]


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
# GPU plan: fits, limits to ask for, and the field a refusal names.

PLAN = json.loads((ROOT / "tests" / "gpu_plan_cases.json").read_text(encoding="utf-8"))["cases"]


def python_plan(case) -> dict:
    p = parse_request({"kernel": "fused", "n": str(case["n"]), "d": str(case["d"]),
                       "workgroup_bytes": str(case["M"])})
    try:
        out = plan.gpu_plan(p, case["limits"])
    except InputError as e:
        return {"fits": False, "field": e.field}
    return {"fits": out["fits"], "required_limits": out["required_limits"]}


def js_plan(cases) -> list:
    calls = [{"fn": "planDevice", "args": [{"kernels": ["plain", "fused"], "n": c["n"], "d": c["d"],
                                           "workgroupBytes": c["M"]}, c["limits"]]} for c in cases]
    out = []
    for r in js(calls):
        v = r["value"]
        out.append({"fits": True, "required_limits": v["requiredLimits"]} if v["fits"]
                   else {"fits": False, "field": v["refusal"]["field"]})
    return out


def expected_plan(case) -> dict:
    if case["fits"]:
        return {"fits": True, "required_limits": case["required_limits"]}
    return {"fits": False, "field": case["field"]}


@pytest.mark.parametrize("case", PLAN, ids=[c["id"] for c in PLAN])
def test_the_page_plans_each_size_as_the_table_says(case):
    assert js_plan([case])[0] == expected_plan(case)


@pytest.mark.parametrize("case", PLAN, ids=[c["id"] for c in PLAN])
def test_python_plans_each_size_as_the_table_says(case):
    assert python_plan(case) == expected_plan(case)


def test_a_refusal_the_page_gives_for_invocations_names_m_and_the_limit():
    case = next(c for c in PLAN if c["id"] == "M = 16,384 at d = 16 on a GPU running 128 invocations")
    [reply] = js([{"fn": "planDevice", "args": [{"kernels": ["plain", "fused"], "n": case["n"], "d": case["d"],
                                                 "workgroupBytes": case["M"]}, case["limits"]]}])
    message = reply["value"]["refusal"]["message"]
    # plain's softmax pass runs 256 invocations a row (its WG constant)
    assert "M = 16,384 B" in message and "runs 256 GPU invocations" in message and "at most 128" in message
    assert "(maxComputeInvocationsPerWorkgroup)" in message


# ---------------------------------------------------------------------------
# Shader choice and size planning, against emulator/shaders.py and the native host.

SUBGROUPS = [0, 4, 8, 16, 32, 64]
VARIANTS = [(k, i, d, sg) for k in FORWARD for i, _ in enumerate(MANIFEST["kernels"][k]["wgsl"])
            for d in MANIFEST["head_dims"] for sg in SUBGROUPS]


def test_the_page_and_python_choose_the_same_shader_and_constants():
    from emulator.shaders import pass_variant
    from emulator.tiling import make_tiling
    replies = js([{"fn": "passVariant", "args": [k, i, d, 16384, sg]} for k, i, d, sg in VARIANTS])
    chose_lanes = 0
    for (kernel, i, d, sg), reply in zip(VARIANTS, replies, strict=True):
        spec = MANIFEST["kernels"][kernel]["wgsl"][i]
        file, constants = pass_variant(spec, d, make_tiling(kernel, 1, d, False, 16384), sg)
        constants = {k: int(v) if isinstance(v, bool) else v for k, v in constants.items()}
        assert reply["ok"], reply
        assert (reply["value"]["file"], reply["value"]["constants"]) == (file, constants), (kernel, i, d, sg)
        chose_lanes += reply["value"]["subgroups"]
    assert chose_lanes > 0, "no case ran a with_subgroups shader: the table tests only one branch"


SIZES = [(k, n, d, m, lim) for k in FORWARD for n in (1, 300, 8192, 16385) for d in (16, 128)
         for m in (16384, 32768)
         for lim in ({"maxComputeWorkgroupStorageSize": 16384, "maxStorageBufferBindingSize": 134217728,
                      "maxBufferSize": 268435456},
                     {"maxComputeWorkgroupStorageSize": 32768, "maxStorageBufferBindingSize": 1073741824,
                      "maxBufferSize": 1073741824})]


def test_the_page_and_the_native_host_agree_on_what_fits():
    """Every kernel, N, d, M and pair of limits: plan.js planDevice for that one kernel
    fits exactly when the host's Runner.plan does, with the same tiles."""
    host = _host()
    replies = js([{"fn": "planDevice", "args": [{"kernels": [k], "n": n, "d": d, "workgroupBytes": m}, lim]}
                  for k, n, d, m, lim in SIZES])
    tiles = js([{"fn": "lessonTiling", "args": [k, d, m]} for k, n, d, m, lim in SIZES])
    fits = refused = 0
    for (kernel, n, d, m, lim), reply, tile in zip(SIZES, replies, tiles, strict=True):
        runner = SimpleNamespace(limits=lim, subgroup_min=0)
        try:
            plan = host.Runner.plan(runner, kernel, n, d, 1, m)
        except host.KernelError:
            assert reply["ok"] and not reply["value"]["fits"], (kernel, n, d, m, lim, reply)
            refused += 1
            continue
        assert reply["ok"] and reply["value"]["fits"], (kernel, n, d, m, lim, reply)
        t = plan["tiling"]
        assert tile["value"] == {"blockRows": t["block_rows"], "blockCols": t["block_cols"],
                                 "workgroupBytes": t["workgroup_bytes"]}
        fits += 1
    assert fits and refused


def test_the_page_and_pythons_gpu_plan_agree_for_every_forward_kernel_alone():
    """plan.js planDevice for one kernel against emulator/api.py gpu_plan(kernels=[that one]):
    the same verdict, and the same limits to ask for when it fits."""
    replies = js([{"fn": "planDevice", "args": [{"kernels": [k], "n": n, "d": d, "workgroupBytes": m}, lim]}
                  for k, n, d, m, lim in SIZES])
    for (kernel, n, d, m, lim), reply in zip(SIZES, replies, strict=True):
        p = parse_request({"kernel": "fused", "n": str(n), "d": str(d), "workgroup_bytes": str(m)})
        try:
            planned = plan.gpu_plan(p, lim, [kernel])
        except InputError as e:
            assert not reply["value"]["fits"], (kernel, n, d, m, lim, e.message)
            assert reply["value"]["refusal"]["field"] == e.field, (kernel, n, d, m, lim, e.message, reply)
            continue
        assert reply["value"]["fits"], (kernel, n, d, m, lim, reply)
        # The same limits, except that plan.js takes a lesson kernel's workgroup memory
        # to be M (its tiles are cut from M), where Python sizes each pass's WGSL arrays
        # (plain's scores pass holds Q and K tiles only): the page asks for the larger.
        mine, theirs = dict(reply["value"]["requiredLimits"]), dict(planned["required_limits"])
        wg_js, wg_py = mine.pop("maxComputeWorkgroupStorageSize", 0), theirs.pop("maxComputeWorkgroupStorageSize", 0)
        assert mine == theirs, (kernel, n, d, m, lim)
        assert wg_py <= wg_js <= max(wg_py, m), (kernel, n, d, m, lim)


# ---------------------------------------------------------------------------
# A software adapter is named as running on the CPU (issue 12 §2).

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
