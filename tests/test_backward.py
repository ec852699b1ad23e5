"""The backward pass: exact gradients, float32
mirrors within their bound, the broken kernel caught, and byte counts."""
from __future__ import annotations

import math

import pytest
from closed_forms import BACKWARD_KERNELS
from closed_forms import backward as closed_form
from hypothesis import given, settings
from hypothesis import strategies as st

from emulator import backward as bw
from emulator import backward_mirrors as mirrors
from emulator.attention import f32
from emulator.inputs import random_qkv
from emulator.mirrors import mirror_of
from emulator.mirrors import run as run_mirror
from emulator.tiling import MANIFEST, make_tiling

#: Every backward kernel the manifest declares with a mirror (a new one is found here).
MIRRORED = [name for name, e in MANIFEST["kernels"].items() if e["direction"] == "backward" and e["mirror"]]


def _run(kernel, q, k, v, o, lse, do, causal, mask, br, bc):
    """A backward kernel's mirror through the manifest's "mirror" key: (dQ, dK, dV, traffic)."""
    x = {"Q": q, "K": k, "V": v, "O": o, "L": lse, "dO": do, "causal": causal, "mask": mask}
    out = run_mirror(bw.kernel_name(kernel), x, br, bc)
    return out["dQ"], out["dK"], out["dV"], out["traffic"]


# ---- the float64 reference ----------------------------------------------------


def _loss(q, k, v, do, causal, mask):
    """Σ O∘dO: its gradient with respect to Q, K, V is (dQ, dK, dV) for upstream dO."""
    o, _ = bw.forward64(q, k, v, causal, mask)
    return math.fsum(a * b for orow, drow in zip(o, do, strict=True) for a, b in zip(orow, drow, strict=True))


def _finite_difference(q, k, v, do, causal, mask, h=1e-6):
    """Central differences of :func:`_loss` for every entry of Q, K and V."""
    grads = {}
    for name, which in (("dQ", 0), ("dK", 1), ("dV", 2)):
        rows = []
        for i in range(len(q)):
            row = []
            for c in range(len(q[0])):
                args = [[r[:] for r in m] for m in (q, k, v)]
                args[which][i][c] += h
                up = _loss(*args, do, causal, mask)
                args[which][i][c] -= 2 * h
                down = _loss(*args, do, causal, mask)
                row.append((up - down) / (2 * h))
            rows.append(row)
        grads[name] = rows
    return grads


FD_CASES = [
    (4, 3, False, None),
    (5, 2, True, None),
    # row 1 sees no key, key 3 is seen by no row: both get exactly zero gradients
    (5, 3, True, [[j != 3 and i != 1 for j in range(5)] for i in range(5)]),
]


@pytest.mark.parametrize("n,d,causal,mask", FD_CASES,
                         ids=[f"{n=}-{d=}-{causal=}-mask={m is not None}" for n, d, causal, m in FD_CASES])
def test_reference_gradients_match_finite_differences(n, d, causal, mask):
    q, k, v = random_qkv(n, d, seed=7)
    do = bw.random_do(n, d, seed=7)
    ref = bw.reference(q, k, v, do, causal, mask)
    fd = _finite_difference(q, k, v, do, causal, mask)
    for name in ("dQ", "dK", "dV"):
        for got_row, want_row in zip(ref[name], fd[name], strict=True):
            for got, want in zip(got_row, want_row, strict=True):
                # central differences with h = 1e-6: truncation ~h², cancellation ~1e-16/h
                assert abs(got - want) <= 1e-7, (name, got, want)
    if mask is not None:
        assert ref["dQ"][1] == [0.0] * d and ref["L"][1] == -math.inf
        assert ref["dK"][3] == [0.0] * d and ref["dV"][3] == [0.0] * d
    # the gradients are not all zero: the test would otherwise prove nothing
    assert max(abs(x) for row in ref["dQ"] for x in row) > 1e-3


@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 4), d=st.integers(1, 3), causal=st.booleans(), seed=st.integers(0, 10_000),
       mask_bits=st.integers(0, 2**16 - 1))
def test_reference_matches_finite_differences_random_masks(n, d, causal, seed, mask_bits):
    q, k, v = random_qkv(n, d, seed)
    do = bw.random_do(n, d, seed)
    mask = [[bool(mask_bits >> (i * n + j) & 1) for j in range(n)] for i in range(n)]
    ref = bw.reference(q, k, v, do, causal, mask)
    fd = _finite_difference(q, k, v, do, causal, mask)
    for name in ("dQ", "dK", "dV"):
        for got_row, want_row in zip(ref[name], fd[name], strict=True):
            for got, want in zip(got_row, want_row, strict=True):
                assert abs(got - want) <= 1e-7, (name, got, want)
                assert got == got  # never NaN, empty rows included


def test_identity_residual_is_rounding_only():
    """rowsum(dO∘O) = rowsum(dP∘P): in float64, the two sums of ≤ 32 terms of size
    ≤ 1 differ by rounding only, so we allow 1e-13 (about 450 units of 2⁻⁵³)."""
    q, k, v = random_qkv(65, 32, seed=3)
    do = bw.random_do(65, 32, seed=3)
    ref = bw.reference(q, k, v, do, causal=True)
    assert ref["identity_residual"] <= 1e-13
    assert ref["identity_residual"] == max(abs(a - b) for a, b in zip(ref["D"], ref["D_softmax"], strict=True))
    # D itself is far from zero, so the residual is a real cancellation
    assert max(abs(x) for x in ref["D"]) > 0.1


def test_reference_gradient_of_v_is_p_transposed_do():
    # N = 2, d = 1, full attention, written out by hand
    q, k, v, do = [[1.0], [0.0]], [[0.0], [2.0]], [[3.0], [5.0]], [[1.0], [-1.0]]
    e = math.exp(2.0)
    p0 = [1 / (1 + e), e / (1 + e)]  # row 0: scores 0 and 2
    p1 = [0.5, 0.5]                  # row 1: scores 0 and 0
    ref = bw.reference(q, k, v, do)
    assert ref["dV"][0][0] == pytest.approx(p0[0] * 1 - p1[0], abs=1e-15)
    assert ref["dV"][1][0] == pytest.approx(p0[1] * 1 - p1[1], abs=1e-15)
    # dS row 0: P ∘ (dP − D), dP = dO·v = (3, 5), D = p0·dP
    dd = p0[0] * 3 + p0[1] * 5
    ds0 = [p0[0] * (3 - dd), p0[1] * (5 - dd)]
    assert ref["dQ"][0][0] == pytest.approx(ds0[0] * 0 + ds0[1] * 2, abs=1e-15)


# ---- float32 mirrors against the bound ----------------------------------------

MIRROR_CASES = [  # (n, d, causal, workgroup bytes): ragged N, several tiles, d = 16 to 128
    (1, 16, False, 16384),
    (65, 32, True, 4096),
    (77, 16, True, 4096),
    (100, 16, False, 4096),
    (33, 128, True, 16384),
    (40, 64, False, 16384),
]


@pytest.mark.parametrize("kernel", ["plain", "fused"])
@pytest.mark.parametrize("n,d,causal,m", MIRROR_CASES,
                         ids=[f"{n=}-{d=}-{causal=}-{m=}" for n, d, causal, m in MIRROR_CASES])
def test_mirror_within_bound(kernel, n, d, causal, m):
    r = bw.check(kernel, n, d, causal, seed=1, workgroup_bytes=m)
    assert r["passed"], r["tensors"]
    for _name, t in r["tensors"].items():
        assert t["nan_entries"] == 0
        assert t["worst_ratio"] <= 1.0 and t["max_abs_error"] <= t["max_bound"]
    if n > 1:
        # float32 really rounded: some error, of float32 size
        assert 0.0 < r["tensors"]["dV"]["max_abs_error"] < 1e-5
    assert r["identity_residual"] <= 1e-13


@pytest.mark.parametrize("kernel", ["plain", "fused"])
def test_bound_covers_a_gpus_rounding_after_every_addition(kernel, monkeypatch):
    """The mirrors form each dot product exactly and round once; a GPU rounds after
    every product and addition. Emulate that and hold the result to the same bound."""
    n, d, bc = 48, 64, 8
    q, k, v = random_qkv(n, d, seed=5)
    do = bw.random_do(n, d, seed=5)
    o, lse = bw.forward32(q, k, v, True, None, bc)
    ref = bw.reference(q, k, v, do, True)
    bound = bw.bounds(q, k, v, do, ref, True, None, bc)

    def sequential(a, b):
        acc = 0.0
        # (a causal row passes its visible keys only: the shorter list sets the length)
        for x, y in zip(a, b, strict=False):
            acc = f32(acc + f32(x * y))
        return acc

    exact = _run(kernel, q, k, v, o, lse, do, True, None, 2 * bc, bc)
    monkeypatch.setattr(mirrors, "dot", sequential)
    gpu = _run(kernel, q, k, v, o, lse, do, True, None, 2 * bc, bc)
    monkeypatch.undo()
    for name, got, once in zip(("dQ", "dK", "dV"), gpu[:3], exact[:3], strict=True):
        cmp = bw.compare(got, ref[name], bound[name])
        assert cmp["passed"], (name, cmp)
        assert got != once  # the sequential roundings really changed some digits


def test_rows_with_no_keys_give_zero_gradients():
    n, d = 20, 16
    q, k, v = random_qkv(n, d, seed=3)
    do = bw.random_do(n, d, seed=3)
    mask = [[not (i in (0, 5) or j == 7) for j in range(n)] for i in range(n)]
    o, lse = bw.forward32(q, k, v, True, mask, 4)
    assert lse[0] == lse[5] == -math.inf
    for kernel in ("fused", "plain"):
        dq, dk, dv, _ = _run(kernel, q, k, v, o, lse, do, True, mask, 8, 4)
        assert dq[0] == dq[5] == [0.0] * d
        assert dk[7] == dv[7] == [0.0] * d
        assert all(x == x for row in dq + dk + dv for x in row)  # no NaN
    for kernel in ("plain", "fused"):
        r = bw.check_arrays(kernel, q, k, v, do, True, mask, block_rows=8, block_cols=4)
        assert r["passed"], r["tensors"]


def test_broken_backward_is_caught():
    r = bw.check("fused-no-D", 77, 16, True, seed=1, workgroup_bytes=4096)
    assert not r["passed"]
    assert not r["tensors"]["dQ"]["passed"] and r["tensors"]["dQ"]["worst_ratio"] > 10
    assert not r["tensors"]["dK"]["passed"] and r["tensors"]["dK"]["worst_ratio"] > 10
    # dV = Pᵀ·dO never uses D: leaving D out cannot hurt it
    assert r["tensors"]["dV"]["passed"]


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 40), d=st.sampled_from([16, 32]), causal=st.booleans(),
       m=st.sampled_from([4096, 8192]), seed=st.integers(0, 1000))
def test_fused_mirror_within_bound_random_shapes(n, d, causal, m, seed):
    r = bw.check("fused", n, d, causal, seed, m)
    assert r["passed"], r["tensors"]
    assert bw.check("fused-no-D", n, d, causal, seed, m)["tensors"]["dV"]["passed"]


# ---- bytes --------------------------------------------------------------------

def _tally(kernel, n, d, causal, m):
    q, k, v = random_qkv(n, d, seed=0)
    do = bw.random_do(n, d, seed=0)
    t = make_tiling(bw.kernel_name(kernel), n, d, causal, m)  # the kernel's own tiles (lesson: from M)
    br, bc = t.block_rows, t.block_cols
    o, lse = bw.forward32(q, k, v, causal, None, bc)
    return _run(kernel, q, k, v, o, lse, do, causal, None, br, bc)[3]


COUNT_CASES = [(1, 16, False, 4096), (65, 16, True, 4096), (77, 32, False, 4096),
               (77, 32, True, 4096), (100, 16, True, 8192), (33, 64, True, 16384)]


@pytest.mark.parametrize("kernel", BACKWARD_KERNELS)
@pytest.mark.parametrize("n,d,causal,m", COUNT_CASES,
                         ids=[f"{n=}-{d=}-{causal=}-{m=}" for n, d, causal, m in COUNT_CASES])
def test_mirror_loads_equal_closed_form(kernel, n, d, causal, m):
    tally = _tally(kernel, n, d, causal, m)
    closed = closed_form(kernel, n, d, causal, m)
    assert [p["name"] for p in tally["passes"]] == [p["name"] for p in closed["passes"]]
    for got, want in zip(tally["passes"], closed["passes"], strict=True):
        assert got["reads"] == want["reads"] and got["writes"] == want["writes"], got["name"]
    assert tally["total_bytes"] == closed["total_bytes"]


@pytest.mark.parametrize("kernel", MIRRORED)
@pytest.mark.parametrize("n,d,causal,m", COUNT_CASES,
                         ids=[f"{n=}-{d=}-{causal=}-{m=}" for n, d, causal, m in COUNT_CASES])
def test_mirror_loads_equal_the_manifest_walk(kernel, n, d, causal, m):
    """Whatever backward kernel the manifest declares, its mirror moves what its passes declare."""
    from emulator import traffic
    tally = _tally(kernel, n, d, causal, m)
    walked = traffic.count(kernel, n, d, causal, m)
    assert tally["reads"] == walked.reads and tally["writes"] == walked.writes
    assert {p["name"]: sum(p["reads"].values()) + sum(p["writes"].values()) for p in tally["passes"]} == walked.per_pass
    assert tally["total_bytes"] == walked.total_bytes > 0


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 48), d=st.sampled_from([16, 32]), causal=st.booleans(),
       m=st.sampled_from([4096, 8192, 16384]), kernel=st.sampled_from(BACKWARD_KERNELS))
def test_mirror_loads_equal_closed_form_random_shapes(n, d, causal, m, kernel):
    assert _tally(kernel, n, d, causal, m)["total_bytes"] == closed_form(kernel, n, d, causal, m)["total_bytes"]


def test_fused_backward_figure_by_hand():
    # N = 4,096, d = 64, M = 16,384: B_r = 32, B_c = 16, 128 query tiles, 256 key tiles
    n, d = 4096, 64
    nd = n * d
    elements = (
        2 * nd + n                                  # preprocess: O, dO in; D out
        + 2 * nd + 2 * 256 * nd + 2 * 256 * n + 2 * nd  # dkv: K, V; Q, dO per key tile; L, D; dK, dV
        + 2 * nd + 2 * n + 2 * 128 * nd + nd          # dq: Q, dO, L, D; K, V per query tile; dQ
    )
    cf = closed_form("fused", n, d)
    assert cf["total_bytes"] == 4 * elements == 823_181_312  # about 3.04 × the forward's 270,532,608 B
    assert cf["reads"]["Q"] == 4 * (256 + 1) * nd
    assert cf["reads"]["K"] == cf["reads"]["V"] == 4 * (128 + 1) * nd
    assert cf["writes"]["dQ"] == cf["writes"]["dK"] == cf["writes"]["dV"] == 4 * nd
    for table in ("S", "P", "dP", "dS"):
        assert cf["reads"][table] == cf["writes"][table] == 0


def test_plain_backward_moves_the_tables():
    n, d = 4096, 16
    cf = closed_form("plain", n, d)
    table = 4 * n * n
    assert cf["writes"]["S"] == cf["writes"]["P"] == cf["writes"]["dP"] == cf["writes"]["dS"] == table
    assert cf["reads"]["S"] == cf["reads"]["dP"] == table
    assert cf["reads"]["P"] == cf["reads"]["dS"] == 2 * table  # read by ds and dq/dkv
    assert cf["total_bytes"] > 8 * closed_form("fused", n, d)["total_bytes"]


@pytest.mark.parametrize("kernel", ["plain", "fused"])
def test_causal_skips_tiles_in_every_pass(kernel):
    # N = 4,096, d = 64: 128 query tiles, 256 key tiles. Above the diagonal lie
    # about half of the (query tile, key tile) pairs, so every pass that streams
    # tiles moves a little over half its full-attention bytes; preprocess moves the same.
    full = closed_form(kernel, 4096, 64)
    causal = closed_form(kernel, 4096, 64, causal=True)
    for fp, cp in zip(full["passes"], causal["passes"], strict=True):
        f_total = math.fsum(fp["reads"].values()) + math.fsum(fp["writes"].values())
        c_total = math.fsum(cp["reads"].values()) + math.fsum(cp["writes"].values())
        if fp["name"] == "preprocess":
            assert c_total == f_total
        else:
            assert 0.5 < c_total / f_total < 0.52, (fp["name"], c_total / f_total)


WALK_CASES = COUNT_CASES + [(4096, 64, False, 16384), (4096, 16, True, 16384), (300, 64, True, 16384),
                            (65_536, 128, True, 65536), (1000, 32, True, 8192)]


@pytest.mark.parametrize("kernel", BACKWARD_KERNELS)
def test_closed_form_equals_the_manifest_walk(kernel):
    """The generic walk of emulator.traffic over the passes kernels_wgsl/manifest.json declares."""
    from emulator import traffic
    from emulator.tiling import MANIFEST
    entry = MANIFEST["kernels"][kernel]
    assert entry["direction"] == "backward"
    for n, d, causal, m in WALK_CASES:
        walked = traffic.count(kernel, n, d, causal, m)
        closed = closed_form(kernel, n, d, causal, m)
        assert walked.total_bytes == closed["total_bytes"], (n, d, causal, m)
        assert walked.reads == closed["reads"] and walked.writes == closed["writes"], (n, d, causal, m)
        assert walked.per_pass == {p["name"]: sum(p["reads"].values()) + sum(p["writes"].values())
                                   for p in closed["passes"]}


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 3000), d=st.sampled_from([16, 32, 64, 128]), causal=st.booleans(),
       m=st.sampled_from([16384, 32768, 65536]), kernel=st.sampled_from(BACKWARD_KERNELS))
def test_closed_form_equals_the_manifest_walk_random_shapes(n, d, causal, m, kernel):
    from emulator import traffic
    assert traffic.count(kernel, n, d, causal, m).total_bytes == closed_form(kernel, n, d, causal, m)["total_bytes"]


def test_unknown_kernel_and_large_check_are_refused():
    with pytest.raises(bw.InputError) as e:
        closed_form("fused-no-rescale", 64, 16)
    assert e.value.field == "kernel"
    with pytest.raises(bw.InputError) as e:
        bw.check("fused", bw.CHECK_MAX_N + 1, 16)
    assert e.value.field == "n"


# ---- the page's entry point and the CLI -----------------------------------------

def test_api_counts_and_checks_backward():
    import lab_api as api
    params = {"kernel": "fused", "n": "4,096", "d": "64", "direction": "backward"}
    reply = api.handle({"op": "count", "params": params})
    assert reply["ok"], reply
    r = reply["result"]
    assert r["selected"]["kernel"] == "fused-backward"
    assert r["selected"]["total_bytes"] == 823_181_312
    assert r["forward"]["total_bytes"] == 270_532_608
    assert r["backward_to_forward_ratio"] == 823_181_312 / 270_532_608
    assert r["ratio"] == r["plain"]["total_bytes"] / r["fused"]["total_bytes"]
    reply = api.handle({"op": "check", "params": dict(params, n="65", d="16", causal=True)})
    assert reply["ok"] and reply["result"]["passed"], reply
    broken = api.handle({"op": "check", "params": dict(params, kernel="fused-no-D", n="65", d="16")})
    assert broken["ok"] and not broken["result"]["passed"]
    # a kernel the manifest declares backward is counted as one without "direction"
    same = api.handle({"op": "count", "params": {"kernel": "fused-backward", "n": "4096", "d": "64"}})
    assert same["result"]["selected"] == r["selected"]
    assert api.handle({"op": "limits"})["result"]["backward_check_max_n"] == bw.CHECK_MAX_N == 256
    # the forward path is untouched by the new parameter
    fwd = api.handle({"op": "count", "params": {"kernel": "fused", "n": "4096", "d": "16"}})
    assert fwd["result"]["selected"]["total_bytes"] == 17_301_504


@pytest.mark.parametrize("kernel,mirror", [("fused-backward-fast", mirrors.fused),
                                           ("plain-backward-fast", mirrors.plain)])
def test_the_tuned_backward_kernels_are_counted_and_checked_at_their_own_tiles(kernel, mirror):
    """Every manifest backward kernel goes through Count and Check (the page lists them all):
    the tuned ones by their manifest names, with their manifest tiles and mirrors."""
    import lab_api as api
    from emulator.tiling import make_tiling
    from emulator.traffic import count

    assert bw.kernel_name(kernel) == kernel and mirror_of(kernel) is mirror
    reply = api.handle({"op": "count", "params": {"kernel": kernel, "n": "4,096", "d": "64", "direction": "backward"}})
    assert reply["ok"], reply
    r = reply["result"]
    assert r["selected"]["total_bytes"] == count(kernel, 4096, 64).total_bytes
    assert (r["selected"]["block_rows"], r["selected"]["block_cols"]) == (64, 64)
    reply = api.handle({"op": "check", "params": {"kernel": kernel, "n": "65", "d": "16", "causal": True,
                                                   "direction": "backward"}})
    assert reply["ok"] and reply["result"]["passed"], reply
    t = make_tiling(kernel, 65, 16, True)
    assert (reply["result"]["block_rows"], reply["result"]["block_cols"]) == (t.block_rows, t.block_cols) == (128, 128)


@pytest.mark.parametrize("params,field", [
    ({"kernel": "fused-no-rescale", "n": "64", "d": "16", "direction": "backward"}, "kernel"),
    ({"kernel": "fused", "n": "64", "d": "16", "direction": "sideways"}, "direction"),
    ({"kernel": "fused", "n": "0", "d": "16", "direction": "backward"}, "n"),
    ({"kernel": "fused", "n": "64", "d": "17", "direction": "backward"}, "d"),
])
def test_api_backward_bad_input(params, field):
    import lab_api as api
    for op in ("count", "check"):
        reply = api.handle({"op": op, "params": params})
        assert not reply["ok"] and reply["errors"][0]["field"] == field, reply


def test_cli_backward_count_and_check_json():
    import json
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent

    def run(*args):
        out = subprocess.run([sys.executable, "-m", "lab_api", *args, "--json"], cwd=root,
                             capture_output=True, text=True, check=True)
        return json.loads(out.stdout)

    c = run("count", "--kernel", "plain", "--direction", "backward", "--n", "77", "--d", "32",
            "--causal", "--workgroup-bytes", "4096")
    want = closed_form("plain", 77, 32, True, 4096)
    assert c["total_bytes"] == want["total_bytes"] and c["reads"] == want["reads"]
    assert set(c["reads"]) == set(bw.TENSORS)
    r = run("check", "--kernel", "fused", "--direction", "backward", "--n", "65", "--d", "16", "--causal")
    assert r["passed"] is True and set(r["tensors"]) == {"dQ", "dK", "dV"}
    assert r["identity_residual"] <= 1e-13
    for t in r["tensors"].values():
        assert t["worst_error"] <= t["worst_bound"] and t["worst_ratio"] <= 1.0
