"""float16 in the emulator: rounding through struct's "e" format, the float16 kernels'
mirrors, their byte counts at 2 bytes an element, and the held-out rows they lose.

What is held here, no GPU needed:
* f16() rounds as IEEE 754 binary16 does (nearest, ties to even, inf from 65,520 on),
  for every one of the 65,536 bit patterns and at the edge;
* the mirror of fused-f16 and fused-f16-no-max agrees bit for bit with a second
  implementation of the same arithmetic in numpy's float16 (facts/held_out_f16.py), across
  several key tiles and a ragged last tile, and fused-f16 is attention to float16
  accuracy against float64;
* the mirror, run on facts/held_out_f16.json, loses exactly the rows facts.json records
  (overflow.held_out.float16, computed by numpy from the model) and the row lists the
  data file carries: none with the max subtraction;
* the walk counts a float16 kernel at 2 bytes an element: half of fused's bytes at the
  same tiles;
* the page's "float16" request answers with the report, and with a message for bad input.
The GPU side is tests/test_wgsl_native_f16.py (wgpu-py) and tests/test_browser_float16.py.
"""
from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np
import pytest

import lab_api as api
from emulator import float16_mirrors as f16
from emulator import mirrors, traffic
from emulator.inputs import random_qkv
from emulator.tiling import DTYPES, MANIFEST, dtype_of, element_bytes, make_tiling
from facts import held_out_f16 as facts16

ROOT = Path(__file__).resolve().parent.parent
DATA = json.loads((ROOT / "facts" / "held_out_f16.json").read_text("utf-8"))
FACTS = json.loads((ROOT / "facts" / "facts.json").read_text("utf-8"))
SUMMARY = FACTS["overflow"]["held_out"]["float16"]
RIGHT, BROKEN = "fused-f16", "fused-f16-no-max"


# ---- rounding -------------------------------------------------------------------------

def test_f16_rounds_every_bit_pattern_to_itself_and_numpy_agrees_on_halfway_values():
    patterns = [b for b in range(1 << 16) if (b & 0x7C00) != 0x7C00 or not b & 0x3FF]  # NaNs aside
    values = f16.from_bits(patterns)
    assert f16.to_bits(values) == patterns
    assert f16.f16s(values) == values
    # halfway between neighbours (ties go to the even pattern), as numpy's cast rounds
    finite = sorted({v for v in values if math.isfinite(v)})
    mids = [(a + b) / 2 for a, b in zip(finite, finite[1:], strict=False)]
    ours = f16.f16s(mids)
    with np.errstate(over="ignore"):
        theirs = np.array(mids).astype(np.float16).astype(np.float64).tolist()
    assert ours == theirs


def test_f16_overflows_from_65520_as_ieee_round_to_nearest_even_says():
    assert f16.MAX == FACTS["overflow"]["fp16_max"]
    assert f16.OVERFLOW_FROM == FACTS["overflow"]["fp16_overflow_from"]
    assert f16.f16(f16.OVERFLOW_FROM - 1e-6) == f16.MAX
    assert f16.f16(f16.OVERFLOW_FROM) == math.inf and f16.f16(-f16.OVERFLOW_FROM) == -math.inf
    assert f16.f16s([1.0, 1e9, -1e9, math.nan])[:3] == [1.0, math.inf, -math.inf]
    assert math.isnan(f16.f16(math.nan))
    # 2^t overflows from t = 16 on, which is where e^s does for s = t ln 2 past ln 65,520
    assert f16.exp2_16(15.9921875) == f16.f16(2 ** 15.9921875) < f16.MAX
    assert f16.exp2_16(f16.OVERFLOW_EXPONENT) == math.inf
    assert f16.OVERFLOW_EXPONENT * math.log(2) > math.log(f16.OVERFLOW_FROM) > 15.9921875 * math.log(2)


def test_from_bits_refuses_what_is_not_a_bit_pattern():
    with pytest.raises(ValueError, match="not float16 bit patterns"):
        f16.from_bits([70000])


# ---- the mirrors against numpy's float16 and against float64 --------------------------

SIZES = [(1, 16), (65, 16), (100, 32), (77, 64), (40, 128)]


@pytest.mark.parametrize("kernel", [RIGHT, BROKEN])
@pytest.mark.parametrize("n,d", SIZES, ids=[f"{n=}-{d=}" for n, d in SIZES])
def test_the_mirror_equals_numpys_float16_bit_for_bit(kernel, n, d):
    """Two implementations of the kernel's order of float16 operations: the mirror (struct,
    standard library) and facts/held_out_f16.py (numpy), ragged tiles and several key tiles."""
    q, k, v = random_qkv(n, d, seed=4)
    q = [[4.0 * x for x in row] for row in q]  # scores of several units: some rows overflow
    t = make_tiling(kernel, n, d)
    got = mirrors.run(kernel, {"Q": q, "K": k, "V": v}, t.block_rows, t.block_cols)
    arrays = [np.array(x, np.float32).astype(np.float16)[None] for x in (q, k, v)]
    want = facts16.kernel_rows(*arrays, t.block_cols, kernel == RIGHT)[0]
    assert np.array_equal(np.array(got["O"]), want.astype(np.float64), equal_nan=True)
    assert got["lost"] == [int(i) for i in np.nonzero(~np.isfinite(want).all(axis=1))[0]]


def test_the_broken_mirror_loses_rows_the_right_one_keeps():
    q, k, v = random_qkv(100, 32, seed=4)
    q = [[4.0 * x for x in row] for row in q]
    t = make_tiling(RIGHT, 100, 32)
    right = f16.fused({"Q": q, "K": k, "V": v}, t.block_rows, t.block_cols)
    broken = f16.fused_no_max({"Q": q, "K": k, "V": v}, t.block_rows, t.block_cols)
    assert right["lost"] == [] and len(broken["lost"]) > 0


@pytest.mark.parametrize("n,d,causal", [(77, 16, False), (130, 32, True), (65, 64, True)])
def test_fused_f16_is_attention_to_float16_accuracy(n, d, causal):
    """Against float64 attention on the float16-rounded inputs: every output within
    2^-6 (|V| < 1, so about 16 float16 ulps of 1: the ~2N roundings of l and acc)."""
    q, k, v = random_qkv(n, d, seed=2)
    q, k, v = ([f16.f16s(row) for row in x] for x in (q, k, v))
    t = make_tiling(RIGHT, n, d, causal)
    got = f16.fused({"Q": q, "K": k, "V": v, "causal": causal}, t.block_rows, t.block_cols)["O"]
    Q, K, V = (np.array(x) for x in (q, k, v))
    s = Q @ K.T / math.sqrt(d)
    if causal:
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    ref = (p / p.sum(axis=1, keepdims=True)) @ V
    assert np.abs(np.array(got) - ref).max() <= 2 ** -6


# ---- the held-out rows: the mirror against facts.json ------------------------------------

@pytest.fixture(scope="module")
def reports():
    heads = len(DATA["heads"])
    return [f16.held_out_report(DATA, i) for i in range(heads)]


def test_the_mirror_loses_the_held_out_rows_facts_json_records(reports):
    """The must-show: the CPU mirror's lost rows (inf or NaN) on the held-out sentences equal
    the count facts.json records (numpy, from the model's weights), head by head and in
    all, and the very rows the data file lists; with the max subtraction, none."""
    assert len(reports) == len(SUMMARY["heads"]) == len(DATA["heads"]) > 0
    total = dict.fromkeys(SUMMARY["kernels"], 0)
    for rep, want, blob in zip(reports, SUMMARY["heads"], DATA["heads"], strict=True):
        assert (rep["layer"], rep["head"]) == (want["layer"], want["head"]) == (blob["layer"], blob["head"])
        assert rep["rows"] == want["rows"] == SUMMARY["rows_per_head"]
        for kernel in SUMMARY["kernels"]:
            lost = rep["kernels"][kernel]["lost"]
            assert len(lost) == want["rows_lost"][kernel], (rep["layer"], rep["head"], kernel)
            assert lost == blob["rows_lost"][kernel]
            total[kernel] += len(lost)
        assert rep["overflowing_scores"] == want["overflowing_scores"]
    assert total == SUMMARY["rows_lost"]
    assert total[RIGHT] == 0 < total[BROKEN]
    assert SUMMARY["rows"] == SUMMARY["rows_per_head"] * len(SUMMARY["heads"])


def test_every_lost_row_is_named_with_its_token_and_why(reports):
    tokens = DATA["tokens"]
    for rep in reports:
        lost = rep["kernels"][BROKEN]["lost"]
        assert [r["row"] for r in rep["rows_detail"]] == lost
        for r in rep["rows_detail"]:
            assert DATA["offsets"][r["sentence"]] + r["token"] == r["row"]
            assert r["text"] == tokens[r["sentence"]][r["token"]]
            # a row is lost through a score past the edge, or through its total l alone
            assert r["cause"] == ("score" if r["largest_score"] >= math.log(f16.OVERFLOW_FROM) else "sum")
    causes = {r["cause"] for rep in reports for r in rep["rows_detail"]}
    assert "score" in causes


def test_the_heads_in_question_hold_the_films_overflowing_scores():
    """The film counts the held-out scores whose exp overflows float16 over every head of
    every layer (float64 scores from float32 Q and K); the shipped heads hold all of them."""
    held = FACTS["overflow"]["held_out"]
    assert SUMMARY["overflowing_scores_float32"] == held["all_layers"]["overflowing"]
    assert SUMMARY["other_heads"] + len(SUMMARY["heads"]) == FACTS["model"]["layers"] * FACTS["model"]["heads"]
    assert SUMMARY["other_heads_rows_lost"] == dict.fromkeys(SUMMARY["kernels"], 0)
    assert SUMMARY["other_heads_largest_score"] < math.log(f16.OVERFLOW_FROM)


# ---- bytes: the walk at the kernel's dtype ----------------------------------------------

@pytest.mark.parametrize("n,d,causal", [(1, 16, False), (100, 16, True), (77, 32, False), (300, 64, True),
                                        (4096, 128, False)])
def test_a_float16_kernel_moves_half_of_fused_at_the_same_tiles(n, d, causal):
    for kernel in f16.float16_kernels():
        assert dtype_of(kernel) == "float16" and element_bytes(kernel) == 2
        half = traffic.count(kernel, n, d, causal)
        full = traffic.count("fused", n, d, causal)
        assert (half.tiling.block_rows, half.tiling.block_cols) == (full.tiling.block_rows, full.tiling.block_cols)
        assert {t: 2 * b for t, b in half.reads.items()} == full.reads
        assert {t: 2 * b for t, b in half.writes.items()} == full.writes
        assert half.as_dict()["bytes_per_element"] == 2
        # Q once, K and V once per query tile over the visited keys, O once: 2 bytes each
        visited = sum(half.tiling.keys_visited(min(n, (i + 1) * half.tiling.block_rows))
                      for i in range(half.tiling.query_tiles))
        assert half.total_bytes == 2 * (2 * n * d + 2 * visited * d)


def test_every_dtype_names_its_bytes_and_feature():
    assert DTYPES["float32"] == {"bytes": MANIFEST["bytes_per_element"], "feature": None}
    assert DTYPES["float16"] == {"bytes": 2, "feature": "shader-f16"}
    for name, entry in MANIFEST["kernels"].items():
        assert entry.get("dtype", "float32") in DTYPES, name
    assert set(f16.float16_kernels()) == {RIGHT, BROKEN}
    assert all(not MANIFEST["kernels"][k]["timed"] and not MANIFEST["kernels"][k]["lesson"]
               for k in f16.float16_kernels())


# ---- the page's request -------------------------------------------------------------------

def test_the_page_request_answers_one_head_and_checks_gpu_outputs():
    reply = api.handle({"op": "float16", "head": 0, "data": DATA})
    assert reply["ok"], reply
    mirror = reply["result"]["kernels"][BROKEN]
    assert mirror["gpu"] is None and len(mirror["lost"]) == SUMMARY["heads"][0]["rows_lost"][BROKEN]
    # The mirror's own O as "GPU" outputs: the rows agree, every row identical.
    inp = f16.held_out_inputs(DATA)
    h = inp["heads"][0]
    outs = []
    for q, k, v in zip(h["Q"], h["K"], h["V"], strict=True):
        t = make_tiling(BROKEN, len(q), inp["d"])
        o = f16.fused_no_max({"Q": q, "K": k, "V": v}, t.block_rows, t.block_cols)["O"]
        outs.append([b for row in o for b in f16.to_bits(row)])
    got = api.handle({"op": "float16", "head": 0, "outputs": {BROKEN: outs}})["result"]["kernels"][BROKEN]["gpu"]
    assert got["agree"] and got["lost"] == mirror["lost"] and got["identical_rows"] == SUMMARY["rows_per_head"]
    # One row's NaNs turned finite: the GPU "keeps" a row the mirror loses, and they disagree.
    first = mirror["lost"][0]
    outs[0][first * inp["d"]:(first + 1) * inp["d"]] = [0] * inp["d"]
    got = api.handle({"op": "float16", "head": 0, "outputs": {BROKEN: outs}})["result"]["kernels"][BROKEN]["gpu"]
    assert not got["agree"] and first not in got["lost"]


@pytest.mark.parametrize("request_, words", [
    ({"op": "float16", "head": 99}, "head index 99 is not one of"),
    ({"op": "float16", "head": "two"}, "float16 card's head"),
    ({"op": "float16", "head": 0, "data": {"d": 32}}, "not held-out float16 data"),
    ({"op": "float16", "head": 0, "outputs": {BROKEN: [[1, 2]]}}, "one list of outputs per sentence"),
])
def test_bad_float16_requests_get_a_message(request_, words):
    reply = api.handle(request_)
    assert not reply["ok"] and reply["errors"][0]["field"] == "op"
    assert words in reply["errors"][0]["message"]


def test_struct_e_is_what_the_mirror_rounds_with():
    """The standard library's binary16: no numpy in the page."""
    assert struct.calcsize("<e") == 2
    assert f16.f16(1 / 3) == struct.unpack("<e", struct.pack("<e", 1 / 3))[0] == 0.333251953125


# ---- the GPU plan: the one planner, at 2 bytes an element ----------------------------------

def test_the_float16_kernels_are_planned_by_emulator_plan_at_two_bytes_an_element():
    """planner sizes a float16 kernel's buffers and head batch at its dtype's bytes and
    names the feature it needs; the card's plans (planner.float16_plans) are that planner's."""
    import planner as plan

    lengths, d, heads = DATA["lengths"], DATA["d"], len(DATA["heads"])
    got = plan.float16_plans(lengths, d, heads)
    assert sorted(got["by_length"], key=int) == [str(n) for n in sorted(set(lengths))]
    assert got["feature"] == "shader-f16"
    for n in set(lengths):
        dev = got["by_length"][str(n)]
        assert dev == plan.gpu_plan({"n": n, "d": d, "causal": False}, {}, f16.float16_kernels(),
                                    heads=heads, instrumented=False)
        for kernel in f16.float16_kernels():
            kp = dev["plans"][kernel]
            assert (kp["dtype"], kp["element_bytes"], kp["feature"]) == ("float16", 2, "shader-f16")
            assert kp["buffers"] == dict.fromkeys("QKVO", 2 * heads * n * d)
            t = make_tiling(kernel, n, d)
            assert (kp["tiling"]["block_rows"], kp["tiling"]["block_cols"]) == (t.block_rows, t.block_cols)
            assert kp["passes"][0]["dispatch"] == [t.query_tiles, heads, 1]
            assert kp["passes"][0]["constants"]["SUBTRACT_MAX"] == int(kernel == RIGHT)
    fused = plan.kernel_plan("fused", 100, 32, heads=3)
    assert fused["element_bytes"] == 4 and fused["buffers"]["Q"] == 4 * 3 * 100 * 32
    assert plan.kernel_plan(RIGHT, 100, 32, heads=3)["buffers"]["Q"] == 2 * 3 * 100 * 32


def test_the_float16_plan_request_refuses_bad_sizes():
    ok = api.handle({"op": "float16_plan", "lengths": [29, 30], "d": 32, "heads": 4})
    assert ok["ok"] and set(ok["result"]["by_length"]) == {"29", "30"}
    for request_, words in [({"lengths": [0], "d": 32}, "must be positive"),
                            ({"lengths": ["x"], "d": 32}, "must be integers"),
                            ({"lengths": [20], "d": 17}, "17 is not")]:
        reply = api.handle({"op": "float16_plan", **request_})
        assert not reply["ok"] and words in reply["errors"][0]["message"], reply
    # a device whose buffers are too small for N gets the planner's refusal, with a size that fits
    small = api.handle({"op": "float16_plan", "lengths": [4096], "d": 32, "heads": 1,
                        "limits": {"maxStorageBufferBindingSize": 65536}})
    assert not small["ok"] and "Try N ≤" in small["errors"][0]["message"]
