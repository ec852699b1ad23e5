"""The manifest declares each kernel once; the walk counts whatever it declares.

A kernel's passes (tensors read and written per step, as element formulas in
the variables of the pass's walk) are data in kernels_wgsl/manifest.json. These
tests hold the declarations to the lesson's reference figures and show that a
new declaration is counted without code changes.
"""
from __future__ import annotations

import copy

import pytest

from emulator import traffic
from emulator.tiling import KERNELS, LESSON_KERNELS, MANIFEST, TENSOR_ORDER, make_tiling


@pytest.mark.parametrize("kernel,d,total", [
    ("plain", 16, 285_736_960), ("fused", 16, 17_301_504),
    ("plain", 64, 538_968_064), ("fused", 64, 270_532_608),
])
def test_declared_passes_give_the_reference_figures(kernel, d, total):
    t = traffic.count(kernel, 4096, d)
    assert t.total_bytes == total
    assert sum(t.per_pass.values()) == total


def test_plain_moves_its_scores_through_global_memory_in_three_passes():
    t = traffic.count("plain", 4096, 16)
    # S written by pass 1 and read by pass 2; P written by 2 and read by 3: N² floats each time
    assert t.writes["S"] == t.reads["S"] == t.writes["P"] == t.reads["P"] == 4096 * 4096 * 4
    assert list(t.per_pass) == ["scores", "softmax", "pv"]


def test_every_kernel_declares_direction_mirror_and_known_tensors():
    for name, entry in MANIFEST["kernels"].items():
        assert entry["direction"] in ("forward", "backward"), name
        assert isinstance(entry["lesson"], bool), name
        module, _, func = (entry["mirror"] or "attention.fused").partition(".")
        mod = __import__(f"emulator.{module}", fromlist=[func])
        assert callable(getattr(mod, func)), (name, entry["mirror"])
        for spec in entry["passes"]:
            assert set(spec["reads"]) | set(spec["writes"]) <= set(TENSOR_ORDER), (name, spec["name"])
    assert LESSON_KERNELS == ("plain", "fused", "fused-no-rescale")
    assert set(LESSON_KERNELS) <= set(KERNELS)


def test_a_new_declaration_is_counted_without_code(monkeypatch):
    # A made-up two-pass kernel: a key-tile pass and a once pass.
    kernels = copy.deepcopy(MANIFEST["kernels"])
    kernels["toy"] = {
        "label": "toy", "direction": "forward", "lesson": False, "mirror": None, "tiling": "lesson",
        "passes": [
            {"name": "kv", "walk": "key_tiles", "reads": {"K": "c*d", "Q": "qv*d"}, "writes": {}},
            {"name": "out", "walk": "once", "reads": {}, "writes": {"O": "n*d"}},
        ],
    }
    monkeypatch.setitem(MANIFEST, "kernels", kernels)
    tiling = make_tiling("toy", 100, 16, causal=True)  # B_r = 128 > N: one query tile
    t = traffic.walk(tiling)
    assert t.reads["K"] == 100 * 16 * 4
    assert t.reads["Q"] == 2 * 100 * 16 * 4  # two key tiles of 64, each seen by all 100 rows
    assert t.writes["O"] == 100 * 16 * 4


def test_causal_key_tiles_are_seen_by_the_query_tiles_that_reach_them():
    t = make_tiling("fused", 300, 64, causal=True)  # B_r = 32, B_c = 16
    assert t.queries_visiting(0) == 300
    assert t.queries_visiting(16) == 300  # key tile 1 lies in query tile 0
    assert t.queries_visiting(32) == 300 - 32
    assert t.queries_visiting(288) == 300 - 288
    # the transpose of keys_visited: both count the same (query tile, key tile) pairs
    pairs_by_rows = sum(t.keys_visited(min(300, (i + 1) * 32)) // 16
                        + (1 if t.keys_visited(min(300, (i + 1) * 32)) % 16 else 0)
                        for i in range(t.query_tiles))
    pairs_by_keys = sum(-(-t.queries_visiting(j * 16) // 32) for j in range(t.key_tiles))
    assert pairs_by_rows == pairs_by_keys


@pytest.mark.parametrize("formula", ["__import__('os')", "r/d", "r**2", "q*d", "1.5*r"])
def test_a_formula_outside_the_grammar_is_refused(formula):
    with pytest.raises(ValueError, match="manifest"):
        traffic._formula(formula, "query_tiles")


def test_the_checker_runs_the_mirror_each_forward_kernel_names():
    from emulator import check

    for name, entry in MANIFEST["kernels"].items():
        if entry["direction"] == "forward":
            assert callable(check.mirror_of(name)), name
    # the broken control is the fused mirror with the rescale off: it fails where fused passes
    assert check.check("fused", 130, 16, seed=3)["passed"]
    assert not check.check("fused-no-rescale", 130, 16, seed=3)["passed"]
    assert check.stores_scores("plain") and not check.stores_scores("fused")


@pytest.mark.parametrize("kernel", ["plain", "fused", "fused-backward"])
@pytest.mark.parametrize("n,causal", [(65, False), (100, True)])
def test_each_pass_counted_alone_adds_up_to_the_walk(kernel, n, causal):
    # exercises.instruments holds a learner's row reads to one pass at a time
    tiling = make_tiling(kernel, n, 16, causal, 16384)
    walked = traffic.walk(tiling)
    reads, writes = {}, {}
    for spec in traffic.passes(kernel):
        one = traffic.pass_elements(tiling, spec["name"])
        for tensor, elements in one["reads"].items():
            reads[tensor] = reads.get(tensor, 0) + elements * 4
        for tensor, elements in one["writes"].items():
            writes[tensor] = writes.get(tensor, 0) + elements * 4
    assert reads == {t: b for t, b in walked.reads.items() if b or t in reads}
    assert writes == {t: b for t, b in walked.writes.items() if b or t in writes}
    with pytest.raises(KeyError, match="no pass 'nope'"):
        traffic.pass_elements(tiling, "nope")


def test_the_fused_pass_at_a_learners_tiles_reads_k_once_per_query_tile():
    # N = 65 in query tiles of 32 rows: 3 tiles, each streaming all 65 keys past it.
    tiling = traffic.Tiling("fused", 65, 4, False, 32, 8, 4 * 4 * 48)
    assert traffic.pass_elements(tiling, "fused")["reads"] == {"Q": 65 * 4, "K": 3 * 65 * 4, "V": 3 * 65 * 4}
