"""Emulator unit tests (CPython). The shared cases in emulator_cases.json also
run in the page's Pyodide worker (tests/test_browser_lab.py)."""
from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest
from closed_forms import forward as closed_form
from hypothesis import given, settings
from hypothesis import strategies as st

import lab_api as api
import planner
from emulator import attention as att
from emulator.accuracy import check, check_arrays, rows_to_check
from emulator.inputs import random_do, random_qkv
from emulator.tiling import HEAD_DIMS, M_DEFAULT, M_MAX, M_MIN, InputError, make_tiling, parse_request
from emulator.traffic import count, walk

ROOT = Path(__file__).resolve().parent.parent
MANIFEST_KERNELS = json.loads((ROOT / "kernels_wgsl" / "manifest.json").read_text())["kernels"]
CASES = json.loads((ROOT / "tests" / "emulator_cases.json").read_text())["cases"]


def dig(obj, path):
    for part in path.split("."):
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    return obj


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_shared_case_in_cpython(case):
    reply = api.handle(case["request"])
    for path, expected in case["expect"].items():
        assert dig(reply, path) == expected, (path, reply)


# ---- counts ------------------------------------------------------------------

@pytest.mark.parametrize("kernel,d,expected", [
    ("plain", 16, 285_736_960), ("fused", 16, 17_301_504),
    ("plain", 64, 538_968_064), ("fused", 64, 270_532_608),
])
def test_reference_figures(kernel, d, expected):
    t = count(kernel, 4096, d)
    assert t.total_bytes == expected
    assert t.tiling.block_rows == {16: 128, 64: 32}[d]


def test_plain_moves_the_score_table_four_times():
    t = count("plain", 4096, 16)
    table = 4096 * 4096 * 4
    assert (t.writes["S"], t.reads["S"], t.writes["P"], t.reads["P"]) == (table,) * 4
    f = count("fused", 4096, 16)
    assert f.reads["S"] == f.writes["S"] == f.reads["P"] == f.writes["P"] == 0


def test_k_and_v_fetched_once_per_query_tile():
    t = count("fused", 4096, 64)  # B_r = 32 → 128 query tiles
    assert t.reads["K"] == t.reads["V"] == 128 * 4096 * 64 * 4
    assert t.reads["Q"] == t.writes["O"] == 4096 * 64 * 4


@settings(max_examples=300, deadline=None)
@given(
    kernel=st.sampled_from(["plain", "fused", "fused-no-rescale"]),
    n=st.integers(1, 70_000),
    d=st.sampled_from(HEAD_DIMS),
    m=st.integers(M_MIN, M_MAX),
    causal=st.booleans(),
)
def test_walk_equals_closed_form(kernel, n, d, m, causal):
    try:
        tiling = make_tiling(kernel, n, d, causal, m)
    except InputError:
        return
    assert walk(tiling).total_bytes == closed_form(tiling)


@pytest.mark.parametrize("n", [1, 65, 77, 100, 300, 1000])
def test_causal_moves_less_than_full_once_there_are_several_tiles(n):
    full = count("plain", n, 16).total_bytes
    causal = count("plain", n, 16, causal=True).total_bytes
    tiles = make_tiling("plain", n, 16).key_tiles
    assert causal < full if tiles > 2 else causal <= full


def test_causal_skips_key_tiles_past_the_diagonal():
    t = make_tiling("fused", 300, 64, causal=True)  # B_r = 32, B_c = 16
    assert t.keys_visited(32) == 32
    assert t.keys_visited(300) == 300
    assert make_tiling("fused", 65, 64, causal=True).keys_visited(65) == 65


# ---- tiling rules -------------------------------------------------------------

@pytest.mark.parametrize("text", ["4,096", "4_096", " 4096 "])
def test_a_separator_between_digits_is_allowed(text):
    assert parse_request({"kernel": "fused", "n": text, "d": "16"})["n"] == 4096


@pytest.mark.parametrize("d,br,bc", [(16, 128, 64), (32, 64, 32), (64, 32, 16), (128, 16, 8)])
def test_lesson_tiles(d, br, bc):
    t = make_tiling("fused", 4096, d)
    assert (t.block_rows, t.block_cols) == (br, bc)


@pytest.mark.parametrize("field,params", [
    ("n", {"n": "0"}), ("n", {"n": "-5"}), ("n", {"n": "1000000000"}), ("n", {"n": "1.5"}),
    ("n", {"n": ""}), ("n", {"n": "text"}), ("n", {"n": "12,"}), ("n", {"n": "1,,2"}), ("n", {"n": "1_"}),
    ("d", {"d": "17"}), ("d", {"d": "sixteen"}),
    ("workgroup_bytes", {"d": "128", "workgroup_bytes": "8192"}),
    ("workgroup_bytes", {"workgroup_bytes": "1000"}), ("kernel", {"kernel": "turbo"}),
])
def test_bad_input_names_its_field(field, params):
    # (separators only between digits: "4,096" and "4_096" are N = 4,096; "12," is not a number)
    raw = {"kernel": "fused", "n": "64", "d": "16", **params}
    with pytest.raises(InputError) as err:
        parse_request(raw)
    assert err.value.field == field
    assert len(err.value.message) > 20


def test_m_too_small_message_says_why():
    with pytest.raises(InputError) as err:
        make_tiling("fused", 64, 128, workgroup_bytes=8192)
    assert "8,192" in err.value.message and "d = 128" in err.value.message


def test_check_limit_applies_only_to_check():
    parse_request({"kernel": "fused", "n": "9000", "d": "16"}, "count")
    with pytest.raises(InputError, match="Check"):
        parse_request({"kernel": "fused", "n": "9000", "d": "16"}, "check")


def test_gpu_plan_refuses_buffers_beyond_the_limit():
    reply = api.handle({"op": "gpu_plan", "params": {"kernel": "plain", "n": "8192", "d": "16"},
                        "limits": {"maxStorageBufferBindingSize": 134217728, "maxBufferSize": 268435456}})
    assert not reply["ok"]
    assert "268,435,456" in reply["errors"][0]["message"]  # N²·4 at 8,192
    ok = api.handle({"op": "gpu_plan", "params": {"kernel": "plain", "n": "8192", "d": "16"},
                     "limits": {"maxStorageBufferBindingSize": 2**30, "maxBufferSize": 2**30}})
    assert ok["ok"] and ok["result"]["required_limits"]["maxStorageBufferBindingSize"] == 268435456


def plan(params, limits, **extra):
    return api.handle({"op": "gpu_plan", "params": {"kernel": "fused", "n": "256", "d": "16", **params},
                       "limits": limits, **extra})


def test_gpu_plan_refuses_a_workgroup_past_the_invocation_limit_naming_m():
    """d = 16, M = 49,152: B_r = (M/2)/(4d) = 384 rows, which the kernels spread over at most
    256 invocations (fused: 4 rows and 2 streams an invocation, 192; plain's scores pass
    256), so WebGPU's default limit takes it; a device allowing 128 is refused with both
    numbers and the M."""
    fits = plan({"workgroup_bytes": "49152"}, {"maxComputeWorkgroupStorageSize": 65536})
    assert fits["ok"], fits
    assert fits["result"]["by_kernel"]["fused"]["maxComputeInvocationsPerWorkgroup"] == 192
    assert fits["result"]["needs"]["maxComputeInvocationsPerWorkgroup"] == 256
    reply = plan({"workgroup_bytes": "49152"}, {"maxComputeWorkgroupStorageSize": 65536,
                                                "maxComputeInvocationsPerWorkgroup": 128})
    assert not reply["ok"]
    err = reply["errors"][0]
    assert err["field"] == "workgroup_bytes"
    assert "256 invocations per workgroup" in err["message"]
    assert "allows 128 (maxComputeInvocationsPerWorkgroup)" in err["message"]
    assert "M = 49,152 B" in err["message"]


def test_gpu_plan_asks_for_the_invocations_and_width_an_adapter_offers():
    offered = {"maxComputeWorkgroupStorageSize": 65536, "maxComputeInvocationsPerWorkgroup": 1024,
               "maxComputeWorkgroupSizeX": 1024}
    reply = plan({"workgroup_bytes": "49152"}, offered)
    assert reply["ok"], reply
    # Q tile 384·16·4 B + K and V tiles 2·192·16·4 B; every workgroup within the default 256.
    assert reply["result"]["required_limits"] == {"maxComputeWorkgroupStorageSize": 49152}
    # Width alone offered is not enough: the invocation count is a separate limit.
    only_x = plan({"workgroup_bytes": "49152"}, {**offered, "maxComputeInvocationsPerWorkgroup": 128})
    assert "maxComputeInvocationsPerWorkgroup" in only_x["errors"][0]["message"]
    only_inv = plan({"workgroup_bytes": "49152"}, {**offered, "maxComputeWorkgroupSizeX": 128})
    assert "maxComputeWorkgroupSizeX" in only_inv["errors"][0]["message"]


def test_gpu_plan_reads_the_softmax_workgroup_from_its_wg_constant():
    """At d = 64 the lesson's B_r is 32: fused runs 4 lanes x 2 streams x 16 row pairs = 128
    invocations, and plain's softmax pass WG = 256."""
    r = plan({"kernel": "plain", "d": "64"}, {})["result"]
    assert r["by_kernel"]["fused"]["maxComputeInvocationsPerWorkgroup"] == 128
    assert r["by_kernel"]["plain"]["maxComputeInvocationsPerWorkgroup"] == 256
    assert r["by_kernel"]["plain"]["maxComputeWorkgroupsPerDimension"] == 256  # N rows
    assert r["required_limits"] == {}


def test_gpu_plan_counts_storage_buffers_with_the_instrument_counters():
    r = plan({}, {})["result"]
    assert r["by_kernel"]["fused"]["maxStorageBuffersPerShaderStage"] == 5  # Q, K, V, O, counters
    assert r["by_kernel"]["plain"]["maxStorageBuffersPerShaderStage"] == 4  # Q, K, S, counters
    reply = plan({}, {"maxStorageBuffersPerShaderStage": 4})
    assert reply["errors"][0]["field"] == "kernel"
    assert "binds 5 storage buffers" in reply["errors"][0]["message"]


def test_gpu_plan_refuses_a_dispatch_past_the_workgroups_per_dimension():
    """fused at d = 128 has B_r = 16 rows: N = 65,536 is 4,096 query tiles."""
    reply = plan({"n": "65536", "d": "128"}, {"maxComputeWorkgroupsPerDimension": 1000}, kernels=["fused"])
    err = reply["errors"][0]
    assert err["field"] == "n"
    assert "dispatches 4,096 workgroups" in err["message"] and "(maxComputeWorkgroupsPerDimension)" in err["message"]
    assert "Try N ≤ 16,000." in err["message"]  # ceil(16,000 / 16) = 1,000


def test_gpu_plan_takes_a_limit_the_adapter_does_not_report_at_webgpus_default():
    reply = plan({"workgroup_bytes": "49152"}, {"maxComputeWorkgroupStorageSize": "lots"})
    assert "allows 16,384 B (maxComputeWorkgroupStorageSize)" in reply["errors"][0]["message"]


def test_gpu_plan_names_a_timed_kernel_that_does_not_fit():
    reply = plan({"d": "128"}, {}, kernels=["fused-fast"])
    assert reply["errors"][0]["field"] == "kernel"
    assert "declares 32,768 B of workgroup memory" in reply["errors"][0]["message"]


PLAN_CASES = json.loads((ROOT / "tests" / "gpu_plan_cases.json").read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize("case", PLAN_CASES, ids=[c["id"] for c in PLAN_CASES])
def test_the_planner_plans_each_size_as_the_table_says_in_its_words(case):
    """Time's plan (plain and fused, no counters): the limits to ask for, or the refusal's
    field and every word of it."""
    p = parse_request({"kernel": "fused", "n": str(case["n"]), "d": str(case["d"]), "workgroup_bytes": str(case["M"])})
    if case["fits"]:
        assert planner.gpu_plan(p, case["limits"], instrumented=False)["required_limits"] == case["required_limits"]
        return
    with pytest.raises(InputError) as err:
        planner.gpu_plan(p, case["limits"], instrumented=False)
    assert (err.value.field, err.value.message) == (case["field"], case["message"])


ADVICE = re.compile(r"(?:Try N ≤ (?P<n>[\d,]+)\.|Use M ≤ (?P<m>[\d,]+) B\.)$")
ADVISED = [(n, d, m, lim) for n in (300, 6000, 9000, 20000, 65536) for d in (16, 64, 128) for m in (16384, 32768, 65536)
           for lim in ({}, {"maxStorageBufferBindingSize": 1 << 30, "maxBufferSize": 1 << 30},
                       {"maxComputeWorkgroupStorageSize": 32768, "maxComputeWorkgroupsPerDimension": 2000},
                       {"maxStorageBufferBindingSize": 4294967292, "maxBufferSize": 4294967296,
                        "maxComputeInvocationsPerWorkgroup": 128, "maxComputeWorkgroupStorageSize": 65536})]


def test_a_refusals_advice_names_the_largest_size_every_check_accepts():
    """The N or M a refusal suggests passes every check of the plan (the
    next press is accepted), and one step past it does not."""
    advised = 0
    for n, d, m, lim in ADVISED:
        p = parse_request({"kernel": "fused", "n": str(n), "d": str(d), "workgroup_bytes": str(m)})
        try:
            planner.gpu_plan(p, lim, instrumented=False)
            continue
        except InputError as e:
            found = ADVICE.search(e.message)
        if found is None:
            continue
        key, value = ("n", found["n"]) if found["n"] else ("workgroup_bytes", found["m"])
        value = int(value.replace(",", ""))
        assert planner.fits(dict(p, **{key: value}), lim, ["fused", "plain"], instrumented=False), (n, d, m, lim)
        past = value + (1 if key == "n" else 16 * d)
        assert past >= dict(p)[key] or not planner.fits(dict(p, **{key: past}), lim, ["fused", "plain"],
                                                     instrumented=False), (n, d, m, lim)
        advised += 1
    assert advised >= 20


def test_n_20000_on_1_gib_buffers_is_told_the_n_the_softmax_row_allows():
    """Past the 1 GiB binding, N ≤ 16,384 would fit S, but the WGSL softmax stops at 8,192."""
    p = parse_request({"kernel": "fused", "n": "20000", "d": "16"})
    big = {"maxStorageBufferBindingSize": 1 << 30, "maxBufferSize": 1 << 30}
    with pytest.raises(InputError, match=r"Try N ≤ 8,192\.$"):
        planner.gpu_plan(p, big, instrumented=False)
    assert planner.fits(dict(p, n=8192), big, ["fused", "plain"], instrumented=False)
    assert not planner.fits(dict(p, n=8193), big, ["fused", "plain"], instrumented=False)


def test_a_pass_takes_the_constants_of_the_smallest_n_that_holds_its_problem():
    """planner/shaders.py override_constants: plain-reg's softmax (kernels_wgsl/
    plain_reg_softmax.wgsl) holds a row in 16 registers of WG vec4s, 64 WG keys; the manifest
    gives it 64 invocations up to 4,096 keys ("constants_by_n") and 128 past them, so at every
    N up to softmax_max_row its registers hold the row, and are all filled at N = 4,096."""
    spec = next(s for s in MANIFEST_KERNELS["plain-reg"]["wgsl"] if s["pass"] == "softmax")
    assert spec["constants_by_n"] == {"4096": {"WG": 64}} and spec["constants"] == {"WG": 128}
    wg = {n: planner.kernel_plan("plain-reg", n, 64)["passes"][1]["constants"]["WG"]
          for n in (1, 4095, 4096, 4097, planner.SOFTMAX_MAX_ROW)}
    assert wg == {1: 64, 4095: 64, 4096: 64, 4097: 128, planner.SOFTMAX_MAX_ROW: 128}
    assert all(n <= 64 * w for n, w in wg.items()) and 64 * wg[4096] == 4096
    assert 64 * wg[planner.SOFTMAX_MAX_ROW] == planner.SOFTMAX_MAX_ROW
    # constants_by_d, where a pass gives it, is applied last (the sweeps patch it)
    assert planner.kernel_plan("plain-reg", 4096, 64)["passes"][0]["constants"]["KSWZ"] == 7


def test_a_plan_names_each_pass_shader_dispatch_and_buffer():
    """plain at N = 300, d = 32, M = 16,384: B_r = 64, B_c = 32 (the lesson rule); its
    scores and pv passes dispatch ceil(300/64) = 5 query tiles, softmax one workgroup a
    row; S and P hold N² floats."""
    kp = planner.kernel_plan("plain", 300, 32, True, 16384, instrumented=False)
    assert kp["tiling"] == {"block_rows": 64, "block_cols": 32, "workgroup_bytes": 16384}
    assert [(pp["file"], pp["dispatch"]) for pp in kp["passes"]] == [
        ("plain_scores.wgsl", [5, 1, 1]), ("plain_softmax.wgsl", [300, 1, 1]), ("plain_pv.wgsl", [5, 1, 1])]
    assert kp["passes"][0]["constants"] == {"D": 32, "BR": 64, "BC": 32}
    assert kp["buffers"] == {"Q": 300 * 32 * 4, "K": 300 * 32 * 4, "S": 300 * 300 * 4, "P": 300 * 300 * 4,
                             "V": 300 * 32 * 4, "O": 300 * 32 * 4}
    assert kp["needs"]["maxStorageBuffersPerShaderStage"] == 3  # Q, K, S: no counters
    lanes = planner.kernel_plan("fused", 300, 64, subgroup_min=4)["passes"][0]
    assert (lanes["file"], planner.kernel_plan("fused", 300, 64)["passes"][0]["file"]) == (
        "fused_lanes.wgsl", "fused.wgsl")


def test_plain_batches_as_many_heads_of_s_as_one_buffer_holds():
    """N = 4,096: S is 64 MiB a head, so a 128 MiB binding holds 2 of 32 heads."""
    kp = planner.kernel_plan("plain", 4096, 16, heads=32, instrumented=False)
    assert kp["head_batch"] == 2 and kp["buffers"]["S"] == 2 * 4096 * 4096 * 4
    assert kp["buffers"]["Q"] == 32 * 4096 * 16 * 4
    assert {tuple(pp["dispatch"][1:]) for pp in kp["passes"]} == {(2, 1)}
    assert planner.kernel_plan("fused", 4096, 16, heads=32)["head_batch"] == 32


def test_the_instrumented_counters_refuse_a_count_past_32_bits():
    """fused at d = 128 (B_r = 16) reads K ceil(N/16)·N·128 times: past 2³² elements by N = 24,000."""
    p = parse_request({"kernel": "fused", "n": "24000", "d": "128"})
    lim = {"maxStorageBufferBindingSize": 1 << 30, "maxBufferSize": 1 << 30}
    assert planner.fits(p, lim, ["fused"], instrumented=False)
    with pytest.raises(InputError, match=r"32-bit counters \(4,294,967,295\)\. Try N ≤ ") as err:
        planner.gpu_plan(p, lim, ["fused"])
    best = int(re.search(r"N ≤ ([\d,]+)", err.value.message)[1].replace(",", ""))
    assert count("fused", best, 128).reads["K"] // 4 <= 2**32 - 1 < count("fused", best + 1, 128).reads["K"] // 4


def test_time_leaves_out_a_tuned_kernel_past_the_workgroup_memory_and_keeps_the_rest():
    """Every timed forward kernel beyond the lesson's (the manifest's "timed", not "lesson")
    is kept where its workgroup memory fits WebGPU's default and left out, with its need,
    where it does not."""
    r = planner.gpu_plan(parse_request({"kernel": "fused", "n": "40", "d": "128"}), {}, optional="timed")
    offer = planner.DEFAULT_LIMITS["maxComputeWorkgroupStorageSize"]
    tuned = [k for k, e in MANIFEST_KERNELS.items()
             if e.get("timed") and not e.get("lesson") and e["direction"] == "forward"]
    need = {k: planner.kernel_plan(k, 40, 128, False, M_DEFAULT, instrumented=True)["needs"]
            ["maxComputeWorkgroupStorageSize"] for k in tuned}
    assert r["optional"] == [k for k in tuned if need[k] <= offer]
    assert r["kernels"] == ["fused", "plain", *r["optional"]]
    assert r["left_out"] == [{"kernel": k, "limit": "maxComputeWorkgroupStorageSize", "need": need[k], "offer": offer}
                             for k in tuned if need[k] > offer]
    # the seed's two tuned kernels, pinned: fused-fast asks its manifest figure at d = 128, past
    # the default; fused-fast-16k is kept within it
    assert need["fused-fast"] == MANIFEST_KERNELS["fused-fast"]["workgroup_bytes"]["128"] > offer
    assert "fused-fast-16k" in r["optional"]


@pytest.mark.parametrize("kernel", list(MANIFEST_KERNELS))
@pytest.mark.parametrize("d", HEAD_DIMS)
def test_every_pass_is_sized_from_its_shader_within_what_the_tiling_declares(kernel, d):
    from planner import pass_plan

    tiling = make_tiling(kernel, 1000, d, False, 16384)
    for index in range(len(MANIFEST_KERNELS[kernel]["wgsl"])):
        for subgroup_min in (0, 32):
            pn = pass_plan(kernel, index, tiling, 1, subgroup_min)
            assert 0 < pn["workgroup_bytes"] <= tiling.workgroup_bytes, pn
            assert 1 <= pn["invocations"] <= 256, pn  # every kernel runs at WebGPU's defaults here
            # One storage buffer per tensor the manifest binds, plus the instrument's counters;
            # the production build (no counters) within WebGPU's default 8 (fused-backward's
            # dkv pass binds 8 tensors, so its instrumented build asks for a 9th).
            spec = MANIFEST_KERNELS[kernel]["wgsl"][index]
            assert pn["storage_buffers"] == len([t for t in spec["bindings"] if t != "params"]) + 1, pn
            assert pn["storage_buffers"] - 1 <= 8, pn
            if pn["pass"] == "fused" and MANIFEST_KERNELS[kernel]["tiling"] == "lesson":
                # TD = d/16 lanes x TX = 2 streams x B_r / (R = 2) rows: 128 at every d
                assert pn["workgroup_bytes"] == 16384 and pn["invocations"] == (d // 16) * tiling.block_rows == 128


def test_webgpus_default_limits_have_one_copy_in_the_manifest():
    from planner.shaders import DEFAULT_LIMITS

    assert DEFAULT_LIMITS["maxComputeInvocationsPerWorkgroup"] == 256
    assert DEFAULT_LIMITS["maxComputeWorkgroupsPerDimension"] == 65535
    for folder in ("emulator", "cannery_host", "bench"):
        for path in (ROOT / folder).glob("*.py"):
            text = path.read_text()
            assert "134217728" not in text and "268435456" not in text, path


def test_the_shader_evaluator_sizes_a_sample():
    from planner.shaders import Shader

    src = """
    override BR: u32 = 32u;
    override TX: u32 = BR / 4u;
    override SW: u32 = select(0u, 4u, TX >= 8u);
    var<workgroup> a: array<vec4<f32>, BR * 2u>;
    var<workgroup> b: array<f32, TX + SW>;
    // @workgroup_size(1)  a comment is not the attribute
    @compute @workgroup_size(TX, BR / TX)
    fn main() {}
    """
    s = Shader(src, {"BR": 64})
    assert s.workgroup_size() == (16, 4, 1)
    assert s.workgroup_bytes() == 64 * 2 * 16 + (16 + 4) * 4
    assert Shader(src).workgroup_size() == (8, 4, 1)


# ---- arithmetic and check ------------------------------------------------------

@pytest.mark.parametrize("kernel", ["plain", "fused"])
@pytest.mark.parametrize("n,d,causal", [(1, 16, False), (65, 64, True), (77, 32, False), (100, 16, False),
                                        (65, 128, True), (300, 16, True)])
def test_kernels_pass_the_check(kernel, n, d, causal):
    r = check(kernel, n, d, causal, seed=3)
    assert r["passed"], r
    assert r["nan_rows"] == []
    assert 0 < r["max_abs_error"] < r["bound"] or n == 1


def test_broken_control_fails_on_random_inputs():
    r = check("fused-no-rescale", 256, 64, seed=1)
    assert not r["passed"]
    assert r["max_abs_error"] > 100 * r["bound"]
    assert r["first_failing_row"] is not None
    assert r["first_failing_tile"] == r["first_failing_row"] // 32


def test_broken_control_passes_when_each_rows_largest_score_is_in_its_first_tile():
    n, d = 100, 16  # B_c = 64: keys 0–63 in the first tile
    q, k, v = random_qkv(n, d, seed=5)
    q = [[abs(x) for x in row] for row in q]          # all queries point into the positive orthant
    k[0] = [4.0] * d                                  # key 0 scores highest for every query
    r = check_arrays("fused-no-rescale", q, k, v)
    assert r["passed"], r
    # …and moving that key into the second tile breaks it.
    k[0], k[80] = k[80], k[0]
    assert not check_arrays("fused-no-rescale", q, k, v)["passed"]


def test_row_with_no_keys_gives_zero_and_minus_infinity():
    vt = [[] for _ in range(16)]
    for mirror in (att.fused, att.fused_no_rescale, att.plain):
        assert mirror({"dots": [], "vt": vt, "d": 16}, 16, 8) == {"O": [0.0] * 16, "L": -math.inf}
    o, lse, p = att.reference([], vt, 16)
    assert o == [0.0] * 16 and lse == -math.inf


def test_fully_masked_tiles_leave_m_and_l_alone():
    # Causal N=65, d=64: row 0 sees one key; its other key tiles are masked.
    q, k, v = random_qkv(65, 64, seed=0)
    r = check_arrays("fused", q, k, v, causal=True)
    assert r["passed"] and r["nan_rows"] == []


def test_scale_uses_the_real_d():
    dots = [2.0, 4.0]
    assert att.scores64(dots, 16) == [0.5, 1.0]
    assert att.scores64(dots, 64) == [0.25, 0.5]


def test_rows_checked_above_1024_include_first_and_last_tiles():
    t = make_tiling("fused", 4096, 16)
    rows = rows_to_check(t)
    assert rows[:128] == list(range(128))
    assert rows[-128:] == list(range(4096 - 128, 4096))
    assert len(rows) == 128 + 128 + 64


def test_emulator_never_sums_floats_with_builtin_sum():
    # Python 3.12 made sum() of floats compensated; 3.11 is not: the two
    # runtimes would print different digits.
    import ast
    for path in (ROOT / "emulator").glob("*.py"):
        tree = ast.parse(path.read_text())
        calls = [node.lineno for node in ast.walk(tree)
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "sum"]
        assert calls == [], f"{path.name} calls sum() at lines {calls}"


def test_fsum_is_what_makes_both_runtimes_agree():
    from fractions import Fraction
    values = [2.5392, 0.4608, -3.0]  # sum() gives 0.0 on 3.11 and 1.11e-16 on 3.12+
    exact = float(sum(Fraction(x) for x in values))
    assert math.fsum(values) == exact != 0.0  # fsum is correctly rounded in every Python


# ---- CLI -------------------------------------------------------------------------

def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "lab_api", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_cli_count_json():
    out = run_cli("count", "--kernel", "plain", "--n", "4096", "--d", "16", "--json")
    assert out.returncode == 0
    assert json.loads(out.stdout)["total_bytes"] == 285_736_960


def test_cli_check_json():
    out = run_cli("check", "--kernel", "fused-no-rescale", "--n", "256", "--d", "64", "--json")
    data = json.loads(out.stdout)
    assert data["passed"] is False and data["bound"] > 0 and data["max_abs_error"] > data["bound"]


@pytest.mark.parametrize("args", [
    ("count", "--kernel", "fused", "--n", "abc", "--d", "16"),
    ("count", "--kernel", "fused", "--n", "64", "--d", "17"),
    ("count", "--kernel", "nope", "--n", "64", "--d", "16"),
    ("check", "--kernel", "fused", "--n", "100000", "--d", "16"),
    ("count",),
])
def test_cli_bad_arguments_exit_2_with_one_line(args):
    out = run_cli(*args)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


LONG = "7" * 5000  # past CPython's 4,300-digit limit on int("...")


@pytest.mark.parametrize("args,says", [
    (("check", "--kernel", "fused", "--n", "64", "--d", "16", "--seed", LONG),
     "Seed takes at most 15 digits; “7777777777777777777…” has more."),
    (("count", "--kernel", "fused", "--n", LONG, "--d", "16"), "Sequence length N takes at most 15 digits"),
    (("count", "--kernel", "fused", "--n", "64", "--d", "16", "--workgroup-bytes", LONG),
     "Workgroup memory M takes at most 15 digits"),
    (("check", "--kernel", "fused", "--n", "64", "--d", "16", "--seed", "-7"),
     "Seed must be a whole number from 0 to 4,294,967,295; -7 is outside."),
])
def test_cli_refuses_5000_digits_and_a_negative_seed_in_one_line(args, says, capsys):
    """The field's message, not "ValueError: Exceeds the limit (4300 digits)"."""
    from lab_api.__main__ import main
    assert main(list(args)) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_negative_seed_is_refused_not_read_as_its_absolute_value():
    """random.Random(-7) seeds like random.Random(7); the emulator refuses below 0 rather than alias."""
    with pytest.raises(ValueError, match="seed"):
        random_qkv(4, 4, -7)
    with pytest.raises(ValueError, match="seed"):
        random_do(4, 4, -7)
    assert random_qkv(4, 4, 7) != random_qkv(4, 4, 8)
    reply = api.handle({"op": "check", "params": {"kernel": "fused", "n": "16", "d": "16", "seed": "−7"}})
    assert not reply["ok"] and reply["errors"][0]["field"] == "seed"


def test_the_models_sentence_brings_its_own_n():
    reply = api.handle({"op": "check", "params": {"kernel": "fused", "n": "100", "d": "32", "input": "model"}})
    assert not reply["ok"] and reply["errors"][0]["field"] == "n"
    assert "69" in reply["errors"][0]["message"]


# ---- one parser for every integer and every yes/no field -------------------------

@pytest.mark.parametrize("head,says", [
    ("٣", "takes the digits 0–9 only"), ("３", "takes the digits 0–9 only"),
    ("three", "written with the digits 0–9"), ("", "is empty"),
])
def test_the_models_head_takes_only_ascii_digits(head, says):
    """Like N, the head goes through parse_int: digits 0-9 only (Arabic-Indic ٣ is not 3)."""
    reply = api.handle({"op": "check", "params": {"kernel": "fused", "n": "69", "d": "32",
                                                   "input": "model", "head": head}})
    assert not reply["ok"]
    assert reply["errors"][0]["field"] == "input"
    assert reply["errors"][0]["message"].startswith("The model's head ")
    assert says in reply["errors"][0]["message"]


def test_cli_refuses_a_head_in_other_digits():
    out = run_cli("check", "--kernel", "fused", "--input", "model", "--head", "٣")
    assert out.returncode == 2
    assert "digits 0–9" in out.stderr and len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("raw,expected", [
    ("true", True), (" YES ", True), ("On", True), ("1", True), (True, True), (1, True),
    ("false", False), ("No", False), (" off", False), ("0", False), (False, False), (0, False),
    (None, False),
])
def test_causal_reads_the_manifests_words(raw, expected):
    assert parse_request({"kernel": "fused", "n": "64", "d": "16", "causal": raw})["causal"] is expected


@pytest.mark.parametrize("raw", ["maybe", "", "2", "tru", "٣", "y", 2, 1.5])
def test_causal_refuses_what_it_cannot_read(raw):
    with pytest.raises(InputError) as err:
        parse_request({"kernel": "fused", "n": "64", "d": "16", "causal": raw})
    assert err.value.field == "causal"
    assert "true, yes, on or 1" in err.value.message and "false, no, off or 0" in err.value.message


def test_causal_words_are_one_list_in_the_manifest():
    from emulator.tiling import FALSE_WORDS, MANIFEST, TRUE_WORDS

    assert list(TRUE_WORDS) == MANIFEST["lesson"]["true_words"] == ["true", "yes", "on", "1"]
    assert list(FALSE_WORDS) == MANIFEST["lesson"]["false_words"] == ["false", "no", "off", "0"]


# ---- Check in chunks, and its two summation paths ---------------

def test_check_in_chunks_merges_to_the_whole_check():
    # The broken control fails on several rows: the merge must keep the first
    # failing row, the worst row's bound and every NaN-free figure of the whole.
    from emulator.accuracy import check_rows, merge, prepare
    q, k, v = random_qkv(300, 32, seed=2)
    whole = check_arrays("fused-no-rescale", q, k, v, causal=True)
    assert not whole["passed"] and whole["first_failing_row"] is not None
    prep = prepare(q, k, v)
    rows = list(range(300))
    parts = [check_rows("fused-no-rescale", q, k, v, True, rows=rows[lo:lo + 37], prepared=prep)
             for lo in range(0, 300, 37)]
    merged = merge(list(reversed(parts)), rows_planned=300)
    assert merged.pop("complete") is True and merged.pop("rows_planned") == 300
    assert merged == whole


def test_a_partial_merge_covers_only_its_rows_and_says_so():
    params = {"kernel": "fused", "n": "200", "d": "16", "seed": "4"}
    plan = api.handle({"op": "check_plan", "params": params})["result"]
    assert plan == {"rows_planned": 200, "rows_description": "all 200 rows"}
    parts = [json.loads(api.handle_json(json.dumps({"op": "check_part", "params": params, "rows": span})))["result"]
             for span in ([0, 50], [120, 130])]
    assert [p["rows_done"] for p in parts] == [50, 10]
    merged = api.handle({"op": "check_merge", "params": params, "parts": parts})["result"]
    assert merged["complete"] is False and merged["rows_checked"] == 60
    assert merged["rows_description"].startswith("60 of the 200 rows planned")
    full = api.handle({"op": "check", "params": params})["result"]
    assert merged["max_abs_error"] <= full["max_abs_error"] and merged["passed"] == full["passed"]
    every = [api.handle({"op": "check_part", "params": params, "rows": [lo, lo + 40]})["result"]
             for lo in range(0, 200, 40)]
    done = api.handle({"op": "check_merge", "params": params, "parts": every})["result"]
    assert done["complete"] is True
    assert {k: v for k, v in done.items() if k not in ("complete", "rows_planned", "seconds")} == \
        {k: v for k, v in full.items() if k != "seconds"}


@pytest.mark.parametrize("request_, field", [
    ({"op": "check_part", "params": {"kernel": "fused", "n": "64", "d": "16"}, "rows": [10, 5]}, "op"),
    ({"op": "check_part", "params": {"kernel": "fused", "n": "64", "d": "16"}, "rows": [0, 65]}, "op"),
    ({"op": "check_part", "params": {"kernel": "fused", "n": "64", "d": "16"}}, "op"),
    ({"op": "check_merge", "params": {"kernel": "fused", "n": "64", "d": "16"}, "parts": []}, "op"),
    ({"op": "check_plan", "params": {"kernel": "fused", "n": "64", "d": "17"}}, "d"),
])
def test_chunked_check_ops_reject_bad_requests(request_, field):
    reply = api.handle(request_)
    assert reply["ok"] is False and reply["errors"][0]["field"] == field


def test_merging_parts_of_another_check_is_refused():
    a = {"kernel": "fused", "n": "64", "d": "16"}
    part = api.handle({"op": "check_part", "params": a, "rows": [0, 8]})["result"]
    reply = api.handle({"op": "check_merge", "params": {**a, "n": "65"}, "parts": [part]})
    assert reply["ok"] is False and "another check" in reply["errors"][0]["message"]


def _exact_sumprod(a, b):
    """Σ a_j·b_j with exact products, correctly rounded: what math.sumprod
    (Python ≥ 3.12, a triple-length accumulator) returns, barring ties."""
    from fractions import Fraction
    return float(sum(Fraction(x) * Fraction(y) for x, y in zip(a, b, strict=True)))


@pytest.mark.parametrize("kernel,n,d,causal", [
    ("fused", 100, 16, False), ("fused-no-rescale", 65, 64, True), ("plain", 77, 32, False),
])
def test_sumprod_and_fsum_paths_agree(kernel, n, d, causal, monkeypatch):
    # Pyodide (3.14) sums with math.sumprod, CPython 3.11 with fsum of rounded
    # products: same verdicts, rows and figures to float64 accuracy.
    q, k, v = random_qkv(n, d, seed=6)
    att.use_sumprod(False)
    try:
        slow = check_arrays(kernel, q, k, v, causal=causal)
    finally:
        att.use_sumprod(att._SUMPROD is not None)
    monkeypatch.setattr(att, "_DOT", _exact_sumprod)
    fast = check_arrays(kernel, q, k, v, causal=causal)
    for key, value in slow.items():
        if isinstance(value, float):
            # the float64 oracle moves by a few ulp of an output (|o| ≤ max|V| = 1)
            assert math.isclose(fast[key], value, rel_tol=1e-9, abs_tol=1e-14), key
        else:
            assert fast[key] == value, key
    if att._SUMPROD is not None:  # Python ≥ 3.12: the real one agrees with the stand-in
        monkeypatch.setattr(att, "_DOT", att._SUMPROD)
        real = check_arrays(kernel, q, k, v, causal=causal)
        assert real["passed"] == fast["passed"]
        assert math.isclose(real["max_abs_error"], fast["max_abs_error"], rel_tol=1e-12, abs_tol=1e-15)


def test_use_sumprod_refuses_a_python_without_it():
    if att._SUMPROD is None:
        with pytest.raises(RuntimeError):
            att.use_sumprod(True)
    else:
        att.use_sumprod(True)
        assert att.dot([1.0, 2.0], [3.0, 4.0]) == 11.0


@pytest.mark.parametrize("params", [
    {"kernel": "fused-no-rescale", "n": "256", "d": "64", "seed": "1"},
    {"kernel": "fused", "n": "200", "d": "16", "seed": "3", "causal": "1"},
    {"kernel": "plain", "n": "130", "d": "32", "seed": "7"},
])
def test_a_check_reads_the_same_under_a_libm_one_bit_off(params, monkeypatch):
    """The page's musl and CPython's glibc exp differ in the last bit
    (the CLI said …77404 where the page said …77401). A check's figures carry the
    significant digits both agree on (api.EXACT_DIGITS = 6), so an exp one ulp high
    gives the very same figures."""
    here = api.handle({"op": "check", "params": params})
    real = math.exp
    monkeypatch.setattr(math, "exp", lambda x: math.nextafter(real(x), math.inf))
    other = api.handle({"op": "check", "params": params})
    monkeypatch.undo()
    assert here["ok"] and other["ok"]
    del here["result"]["seconds"], other["result"]["seconds"]
    assert here == other
    err = here["result"]["max_abs_error"]
    assert err > 0 and err == float(f"{err:.6g}")
    if params["kernel"] == "fused-no-rescale":
        assert err == 0.174928


def test_exact_packed_sums_are_the_correctly_rounded_exact_sums():
    # emulator.exact: every column's Σ_j w_j·A[j][c] equals the exact rational sum
    # (fractions.Fraction) rounded once to float64, for float32 and float64 weights,
    # causal-style shorter weight lists, and K's columns packed for Q's rows.
    import random
    from array import array
    from fractions import Fraction

    from emulator import exact
    rng = random.Random(7)
    n, d = 200, 24
    a = [array("f", [rng.uniform(-1, 1) * 2.0 ** rng.randint(-30, 3) for _ in range(d)]).tolist()
         for _ in range(n)]
    packed = exact.pack(a)
    assert packed is not None
    for bits, weights in [(24, array("f", [rng.random() ** 8 for _ in range(n)]).tolist()),
                          (53, [rng.random() / 3 for _ in range(n)]),
                          (24, array("f", [rng.uniform(-2, 2) for _ in range(n - 37)]).tolist()),
                          # weights near 2^−940: 2^−(S+SV) is below the normal range, so the
                          # fields are divided as integers rather than scaled as floats
                          (53, [rng.uniform(0.5, 1.0) * 2.0 ** -940 for _ in range(n)])]:
        got = exact.sums(weights, packed, bits)
        rows = a[:len(weights)]
        want = [float(sum((Fraction(w) * Fraction(row[c]) for w, row in zip(weights, rows, strict=True)), Fraction(0)))
                for c in range(d)]
        assert got == want
    q = [array("f", [rng.uniform(-1.7, 1.7) for _ in range(d)]).tolist() for _ in range(5)]
    kcols = [[row[c] for row in a] for c in range(d)]
    kp = exact.pack(kcols, q)
    assert kp is not None and kp.bits < exact.FIELD_BITS  # just wide enough for Q
    for qi in q:
        want = [float(sum((Fraction(x) * Fraction(y) for x, y in zip(qi, key, strict=True)), Fraction(0))) for key in a]
        assert exact.sums(qi, kp, 24) == want
    # Where the exact path cannot promise the same number, it says so (None) and the caller sums.
    assert exact.pack([[0.1, 0.2]]) is None  # not float32
    assert exact.pack([[float("inf"), 1.0]]) is None
    assert exact.sums([0.0] * n, packed, 24) is None  # every weight zero
    assert exact.sums([float("nan")] + [1.0] * (n - 1), packed, 24) is None
    assert exact.sums([float("inf")] + [1.0] * (n - 1), packed, 24) is None
    assert exact.sums([float("inf"), float("-inf")] + [1.0] * (n - 2), packed, 24) is None
    assert exact.sums([1e308] * n, packed, 53) is None  # finite, but their sum is past the largest float
    assert exact.sums([1.0, 1.0], exact.pack([[1.0], [-1.0]]), 24) is None  # a zero sum keeps fsum's sign
    assert exact.sums([1.0] * (n + 1), packed, 24) is None  # more weights than rows


@pytest.mark.parametrize("kernel,causal", [("fused", False), ("plain", True), ("fused-no-rescale", False)])
def test_the_check_gives_the_same_report_with_and_without_the_exact_integer_sums(kernel, causal):
    from emulator import accuracy as chk
    from emulator.inputs import random_qkv
    q, k, v = random_qkv(96, 16, 5)
    fast = chk.prepare(q, k, v)
    assert fast["kp"] is not None and fast["vt"].packed is not None  # the check takes the integer path
    slow = dict(fast, kp=None, vt=[list(col) for col in fast["vt"]])
    assert (chk.check_rows(kernel, q, k, v, causal, prepared=fast)
            == chk.check_rows(kernel, q, k, v, causal, prepared=slow))
