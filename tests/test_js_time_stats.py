"""Time's words about its samples (site/static/js/lab/time-stats.js, under node): each
row's spread, a winner named only where the ranges do not overlap, and each distinct
run (planner/__init__.py same_runs) timed once."""
from __future__ import annotations

import statistics

import pytest
from test_js_parity import NODE, js

import planner
from emulator.tiling import parse_request

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")


def row(kernel, samples):
    return {"kernel": kernel, "shaders": ["fused.wgsl"], "tiles": {"block_rows": 128, "block_cols": 64},
            "samplesMs": samples, "bytes": 1000, "flop": 4000}


def call(fn, *args):
    (reply,) = js([{"fn": fn, "args": list(args)}])
    assert reply["ok"], reply
    return reply["value"]


def test_the_spread_is_the_range_and_quartiles_of_the_samples():
    samples = [3.0, 1.0, 2.0, 7.0, 5.0, 4.0, 6.0]
    s = call("spreadOf", samples)
    q1, median, q3 = statistics.quantiles(samples, n=4, method="inclusive")
    assert (s["low"], s["high"]) == (1.0, 7.0)
    assert (s["q1"], s["median"], s["q3"]) == pytest.approx((q1, median, q3))
    r = call("timeResult", row("fused", samples))
    assert r["samplesMs"] == sorted(samples) and r["medianMs"] == 4.0 and r["bytes"] == 1000 and r["flop"] == 4000
    assert set(r) == {"kernel", "shader", "tiles", "samplesMs", "medianMs", "spread", "bytes", "flop"}


def test_a_spread_of_no_samples_or_a_bad_sample_is_refused():
    replies = js([{"fn": "spreadOf", "args": [[]]}, {"fn": "spreadOf", "args": [[1.0, -2.0]]}])
    assert [r["ok"] for r in replies] == [False, False]


@pytest.mark.parametrize("a,b,winner,close", [
    ([1.0, 1.1, 1.2], [2.0, 2.1, 2.2], "fast", []),            # apart: the faster wins
    ([1.0, 1.5, 2.1], [2.0, 2.1, 2.2], None, ["fast", "slow"]),  # touching ranges: within the noise
    ([1.0, 1.5, 3.0], [2.0, 2.1, 2.2], None, ["fast", "slow"]),  # one range inside the other
])
def test_a_winner_is_named_only_where_the_ranges_do_not_overlap(a, b, winner, close):
    got = call("fastest", [row("slow", b), row("fast", a)])
    assert got == {"winner": winner, "close": close}
    assert call("compared", row("slow", b), row("fast", a)) == ("faster" if winner else "noise")


def test_a_clear_winner_must_beat_every_other_range_not_only_the_next():
    rows = [row("a", [1.0, 1.2]), row("b", [1.3, 1.4]), row("c", [1.1, 5.0])]
    assert call("fastest", rows) == {"winner": None, "close": ["a", "c"]}


def test_at_d_16_the_tuned_kernels_are_the_lesson_kernel_and_are_timed_once():
    """At d = 16 fused, fused-fast and fused-fast-16k run fused.wgsl at
    128 × 64 tiles with the same constants (RESCALE at its default), so one row."""
    p = parse_request({"kernel": "fused", "n": "256", "d": "16", "workgroup_bytes": "16384"})
    plan = planner.gpu_plan(p, {"maxComputeWorkgroupStorageSize": 32768}, instrumented=False, optional="timed")
    # every timed kernel the plan keeps (the manifest's "timed", in its order) whose shaders,
    # tiles and constants are fused's is fused's run
    fused = planner.run_key(plan["plans"]["fused"])
    repeats = {k: "fused" for k in plan["optional"] if planner.run_key(plan["plans"][k]) == fused}
    assert plan["same_run"] == repeats
    # the seed's tuned kernels, pinned as its figures: both repeat fused at d = 16
    assert {"fused-fast", "fused-fast-16k"} <= set(repeats)
    kernels = ["plain", "fused", *plan["optional"]]
    got = call("distinctRuns", kernels, plan["same_run"])
    assert got == {"timed": [k for k in kernels if k not in repeats],
                   "same": [{"kernel": k, "as": "fused"} for k in kernels if k in repeats]}


def test_at_d_64_the_16k_kernel_runs_other_tiles_and_keeps_its_row():
    p = parse_request({"kernel": "fused", "n": "256", "d": "64", "workgroup_bytes": "16384"})
    plan = planner.gpu_plan(p, {"maxComputeWorkgroupStorageSize": 32768}, instrumented=False, optional="timed")
    assert "fused-fast-16k" not in plan["same_run"]
    fused, fast16 = plan["plans"]["fused"], plan["plans"]["fused-fast-16k"]
    assert planner.run_key(fused) != planner.run_key(fast16)
    timed = call("distinctRuns", ["plain", "fused", *plan["optional"]], plan["same_run"])["timed"]
    assert "fused-fast-16k" in timed and "plain" in timed and "fused" in timed


def test_a_constant_that_differs_from_the_default_is_another_run():
    """fused-no-rescale is fused.wgsl at the same tiles with RESCALE = false: not the same run."""
    p = parse_request({"kernel": "fused", "n": "256", "d": "16", "workgroup_bytes": "16384"})
    plan = planner.gpu_plan(p, {}, kernels=["fused", "fused-no-rescale"], instrumented=False)
    assert plan["same_run"] == {}


@pytest.mark.parametrize("d", [16, 64, 128])
def test_backward_plans_name_their_repeats_through_float_overrides(d):
    """The backward shaders declare TAU: f32 = 1.0 / sqrt(f32(D)), an override the integer
    planner cannot evaluate: its expression stands in the run key, so planning the backward
    kernels (what Time and bench.bench_wgsl_backward do) names repeats instead of raising."""
    from emulator.tiling import MANIFEST
    BACKWARD = [k for k, e in MANIFEST["kernels"].items() if e.get("direction") == "backward"]
    p = parse_request({"kernel": "fused", "n": "512", "d": str(d), "workgroup_bytes": "16384"})
    p = dict(p, kernel="fused-backward")
    plan = planner.gpu_plan(p, {}, kernels=list(BACKWARD), instrumented=False)
    assert set(plan["plans"]) == set(BACKWARD)
    for kernel, kept in plan["same_run"].items():
        a, b = plan["plans"][kernel], plan["plans"][kept]
        assert [pp["file"] for pp in a["passes"]] == [pp["file"] for pp in b["passes"]]
        assert a["tiling"]["block_rows"] == b["tiling"]["block_rows"]
    # fused-backward-no-D runs the dK/dV shader with USE_D = false: never fused-backward's run
    assert plan["same_run"].get("fused-backward-no-D") != "fused-backward"


# The backward card's paragraph (site/static/js/lab/time-backward-words.js): its words
# follow the medians and their ranges. At N = 1,024, d = 64, causal, on SwiftShader, it
# once said "1.71× as fast (measured), a difference within the noise … here the fused
# backward did not win" beside medians of 580 ms and 990 ms.
WIDE_PLAIN, WIDE_FUSED = [520.0, 990.0, 1500.0], [410.0, 580.0, 1210.0]  # medians 990 and 580; ranges overlap
CLEAR_PLAIN, CLEAR_FUSED = [980.0, 990.0, 1000.0], [570.0, 580.0, 590.0]


def why(plain, fused, software="SwiftShader"):
    return call("backwardWhy", row("plain-backward", plain), row("fused-backward", fused), 2.5, software)


@pytest.mark.parametrize("software", ["SwiftShader", ""], ids=["cpu-adapter", "gpu"])
def test_overlapping_ranges_give_both_medians_and_ranges_and_name_no_winner(software):
    said = why(WIDE_PLAIN, WIDE_FUSED, software)
    assert "580.00 ms against 990.00 ms (1.71× as fast)" in said
    assert "410.00–1210.00 ms against 520.00–1500.00 ms" in said
    assert "does not show which is faster" in said
    assert "did not win" not in said and "won here" not in said


def test_a_clear_win_is_called_a_win_and_a_clear_loss_a_loss():
    won = why(CLEAR_PLAIN, CLEAR_FUSED)
    assert "1.71× as fast (measured: a median of 580.00 ms against 990.00 ms)" in won
    assert "won here all the same" in won and "did not win" not in won and "overlap" not in won
    lost = why(CLEAR_FUSED, CLEAR_PLAIN)
    assert "0.59× as fast (measured: a median of 990.00 ms against 580.00 ms)" in lost
    assert "did not win" in lost and "won here" not in lost and "overlap" not in lost
