"""The manifest declares each kernel once; the walk counts whatever it declares.

A kernel's passes (tensors read and written per step, as element formulas in
the variables of the pass's walk) are data in kernels_wgsl/manifest.json. These
tests hold the declarations to the lesson's reference figures and show that a
new declaration is counted without code changes.
"""
from __future__ import annotations

import copy

import pytest

from emulator import backward as bw
from emulator import mirrors, traffic
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
        # "mirror" is always declared: a function of emulator/ that exists, or null for none
        assert "mirror" in entry, name
        if entry["mirror"] is not None:
            assert callable(mirrors.mirror_of(name)), (name, entry["mirror"])
        for spec in entry["passes"]:
            assert set(spec["reads"]) | set(spec["writes"]) <= set(TENSOR_ORDER), (name, spec["name"])
    # the lesson's kernels are its forward kernels on the lesson tiling, each with a mirror for Check
    for name in LESSON_KERNELS:
        entry = MANIFEST["kernels"][name]
        assert (entry["direction"], entry["tiling"]) == ("forward", "lesson"), name
        assert entry["mirror"] is not None, name
    assert set(LESSON_KERNELS) <= set(KERNELS) and LESSON_KERNELS[:2] == ("plain", "fused")


def test_every_backward_kernel_names_its_forward_and_a_lab_name_of_its_own():
    """Each backward kernel names the forward it differentiates; a lab name (the lesson's
    short name, optional: the tuned kernels answer to their manifest names) is its own."""
    backward = {n: e for n, e in MANIFEST["kernels"].items() if e["direction"] == "backward"}
    assert backward
    labs = [e["lab_name"] for e in backward.values() if "lab_name" in e]
    assert {"plain", "fused"} <= set(labs)
    assert len(set(labs)) == len(labs) and not set(labs) & (set(KERNELS) - set(LESSON_KERNELS))
    for name, entry in backward.items():
        assert MANIFEST["kernels"][entry["forward"]]["direction"] == "forward", name
        assert bw.kernel_name(entry.get("lab_name", name)) == bw.kernel_name(name) == name


def test_a_mirror_that_names_no_function_is_a_manifest_error(monkeypatch):
    kernels = copy.deepcopy(MANIFEST["kernels"])
    kernels["fused"]["mirror"] = "attention.no_such_mirror"
    monkeypatch.setitem(MANIFEST, "kernels", kernels)
    with pytest.raises(ValueError, match="attention.no_such_mirror"):
        mirrors.mirror_of("fused")


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
    from emulator import accuracy

    # the broken control is the fused arithmetic with the rescale off: it fails where fused passes
    assert MANIFEST["kernels"]["fused-no-rescale"]["mirror"] == "attention.fused_no_rescale"
    assert accuracy.check("fused", 130, 16, seed=3)["passed"]
    assert not accuracy.check("fused-no-rescale", 130, 16, seed=3)["passed"]
    assert accuracy.stores_scores("plain") and not accuracy.stores_scores("fused")


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


_NEW_KERNELS_SCRIPT = r"""
import json
import lab_api as api
from emulator import tiling
out = {"lesson": list(tiling.LESSON_KERNELS)}
for name, direction in (("fused-copy", "forward"), ("fused-unmirrored", "forward"),
                        ("copy", "backward"), ("unmirrored", "backward")):
    params = {"kernel": name, "n": "64", "d": "16", "direction": direction, "seed": "3"}
    out[name] = {op: api.handle({"op": op, "params": params}) for op in ("count", "check")}
print(json.dumps(api._clean(out)))
"""


def test_a_kernel_added_to_the_manifest_alone_is_counted_and_checked_or_refused(tmp_path):
    """In a copy of emulator/, planner/, lab_api/ and kernels_wgsl/ whose manifest alone gains four kernels, two
    with a mirror and two declared with "mirror": null, the first are counted and checked
    and the others counted and refused by Check, saying why."""
    import json
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for folder in ("emulator", "planner", "lab_api", "kernels_wgsl"):
        shutil.copytree(root / folder, tmp_path / folder)
    manifest = json.loads((root / "kernels_wgsl" / "manifest.json").read_text(encoding="utf-8"))
    kernels = manifest["kernels"]
    kernels["fused-copy"] = dict(copy.deepcopy(kernels["fused"]), label="Fused, a copy")
    kernels["fused-unmirrored"] = dict(copy.deepcopy(kernels["fused"]), label="Fused, no mirror", mirror=None)
    kernels["fused-backward-copy"] = dict(copy.deepcopy(kernels["fused-backward"]), label="Copy", lab_name="copy")
    kernels["fused-backward-unmirrored"] = dict(copy.deepcopy(kernels["fused-backward"]), label="None",
                                                lab_name="unmirrored", mirror=None)
    (tmp_path / "kernels_wgsl" / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", _NEW_KERNELS_SCRIPT], cwd=tmp_path, capture_output=True,
                          text=True, check=True, env={"PYTHONPATH": str(tmp_path), "PATH": ""})
    out = json.loads(done.stdout)

    assert out["lesson"] == [*LESSON_KERNELS, "fused-copy", "fused-unmirrored"]
    fused = traffic.count("fused", 64, 16)
    back = traffic.count("fused-backward", 64, 16)
    for name, want in (("fused-copy", fused), ("fused-unmirrored", fused), ("copy", back), ("unmirrored", back)):
        count = out[name]["count"]
        assert count["ok"], (name, count)
        assert count["result"]["selected"]["total_bytes"] == want.total_bytes > 0
    import lab_api as api
    from emulator import accuracy, backward
    checked = out["fused-copy"]["check"]["result"]  # the op's reply: figures to api.EXACT_DIGITS digits
    want = api.exact_digits(accuracy.check("fused", 64, 16, seed=3)["max_abs_error"])
    assert checked["passed"] and checked["max_abs_error"] == want
    tensors = api.exact_digits(backward.check("fused", 64, 16, seed=3)["tensors"])
    assert out["copy"]["check"]["result"]["tensors"] == tensors
    for name, full in (("fused-unmirrored", "fused-unmirrored"), ("unmirrored", "fused-backward-unmirrored")):
        reply = out[name]["check"]
        assert not reply["ok"] and reply["errors"][0]["field"] == "kernel", reply
        assert reply["errors"][0]["message"] == (f"The {full} kernel has no float32 mirror in the emulator yet, "
                                                 "so Check cannot run it; Count still can.")


def test_a_kernel_declared_in_float16_is_counted_at_two_bytes_an_element(monkeypatch):
    """The walk multiplies each formula by the bytes of the kernel's "dtype" (manifest
    "dtypes"): a copy of fused declared float16 moves exactly half of fused's bytes."""
    from emulator.tiling import DTYPES, element_bytes

    kernels = copy.deepcopy(MANIFEST["kernels"])
    kernels["fused-half"] = dict(copy.deepcopy(kernels["fused"]), dtype="float16")
    monkeypatch.setitem(MANIFEST, "kernels", kernels)
    assert (element_bytes("fused"), element_bytes("fused-half")) == (DTYPES["float32"]["bytes"], 2)
    for n, d, causal in [(1, 16, False), (100, 16, True), (300, 64, True)]:
        full, half = traffic.count("fused", n, d, causal), traffic.count("fused-half", n, d, causal)
        assert {t: 2 * b for t, b in half.reads.items()} == full.reads
        assert {t: 2 * b for t, b in half.writes.items()} == full.writes
        assert 2 * half.total_bytes == full.total_bytes
        assert [r["bytes"] for r in traffic.one_tile_schedule(half.tiling)] == [
            r["bytes"] // 2 for r in traffic.one_tile_schedule(full.tiling)]
