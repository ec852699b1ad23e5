"""The WGSL backward kernels of kernels_wgsl/ (bwd_*.wgsl), run natively through wgpu-py
(lavapipe here and on CI).

What is held here:
* The instrumented build's byte counts (one atomicAdd per element loaded or stored)
  equal emulator.traffic.count for every backward tensor (Q, K, V, O, dO, L, D, dQ, dK,
  dV, and S, P, dP, dS for plain-backward), ragged N and causal included, for every
  backward kernel the manifest gives a WGSL build.
* dQ, dK and dV read back from fused-backward and plain-backward pass the float64 check
  of emulator.backward (exact gradients of the float64 forward, within its per-entry
  float32 bound), with O and L from the emulator's float32 fused forward
  (emulator.backward.forward32), as check_arrays gives its mirrors. fused-backward-no-D,
  the same shaders with the override USE_D = false, fails it on dQ and dK; dV, which
  does not use D, passes.
* No NaN or inf in any gradient (checked on the CPU after readback).
* The tuned kernels (bwd_fast_*.wgsl): fused-backward-fast (FlashAttention-2
  Algorithm 2 with register tiles and lanes) and plain-backward-fast (the fair plain: the
  same seven passes through global memory, each a tuned kernel) pass the same float64
  check and count the bytes the manifest declares for their own tiles, with their
  subgroup shaders (a device with subgroups) and without them (one without), at ragged N
  (77, 300), causal and full, d = 16, 32, 64 and 128; each subgroup shader is its twin
  with only the lanes' sum changed, and every tile the manifest gives fits what the
  shaders support.

The forward's O and L are computed on the host, not by a WGSL forward: a backward pass
reads them as inputs, and the counts held here are those of the backward passes alone,
which is what the manifest's backward entries declare.

Skipped, with the reason, where wgpu-py finds no adapter.
"""
from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from emulator import backward as bw
from emulator.inputs import random_qkv
from emulator.tiling import M_DEFAULT, MANIFEST
from emulator.traffic import count

pytestmark = pytest.mark.gpu

BACKWARD = [name for name, e in MANIFEST["kernels"].items() if e["direction"] == "backward" and e["wgsl"]]


@pytest.fixture(scope="module")
def runner():
    """One wgpu-py device at WebGPU's default limits (plus the 9th storage buffer the
    instrumented dkv pass binds, where the adapter offers it), or a skip saying why not."""
    try:
        from cannery_host.wgpu_runner import KernelError, Runner
    except ImportError as e:  # wgpu not installed
        pytest.skip(f"wgpu-py is not importable: {e}")
    try:
        return Runner(limits="default")
    except (KernelError, RuntimeError) as e:
        pytest.skip(f"no WebGPU adapter for wgpu-py: {e}")


def _cases(kernels, configs):
    return [pytest.param(kern, n, d, c, id=f"{kern}-{n=}-{d=}-causal={c}")
            for kern in kernels for (n, d, c) in configs]


@cache
def _inputs(n, d, causal, seed, block_cols):
    """Seeded Q, K, V (emulator.inputs), dO (emulator.backward.random_do) and the float32
    fused forward's O and L at the kernel's key tiles, as lists of float32 values."""
    q, k, v = random_qkv(n, d, seed)
    do = bw.random_do(n, d, seed)
    o, lse = bw.forward32(q, k, v, causal, None, block_cols)
    return q, k, v, do, o, lse


@cache
def _reference(n, d, causal, seed, block_cols):
    """The float64 gradients and their bounds for _inputs(...), computed once per case."""
    q, k, v, do, _, _ = _inputs(n, d, causal, seed, block_cols)
    ref = bw.reference(q, k, v, do, causal)
    return {"ref": ref, "bound": bw.bounds(q, k, v, do, ref, causal, None, block_cols)}


def _run(runner, kernel, n, d, causal, seed=0, instrumented=False, workgroup_bytes=M_DEFAULT):
    from emulator.tiling import make_tiling

    bc = make_tiling(kernel, 1, d, workgroup_bytes=workgroup_bytes).block_cols
    q, k, v, do, o, lse = _inputs(n, d, causal, seed, bc)
    f = lambda x: np.array(x, np.float32)  # noqa: E731
    dq, dk, dv, counts = runner.run_backward(kernel, f(q), f(k), f(v), f(o), f(lse), f(do), causal,
                                             instrumented=instrumented, workgroup_bytes=workgroup_bytes)
    return (q, k, v, do, bc), (dq, dk, dv), counts


# Ragged N (1, 65, 77, 100, 300 are no multiple of any tile), causal and full, d = 16 to 128.
COUNTED = [(1, 16, True), (65, 64, True), (77, 64, False), (100, 16, False), (100, 16, True),
           (300, 32, True), (65, 128, True), (40, 128, False)]


@pytest.fixture(scope="module")
def runner_no_subgroups(runner):
    """A second device opened without the subgroup feature: every pass runs the shader any
    WebGPU device can (bwd_fast_dkv.wgsl, not bwd_fast_dkv_lanes.wgsl)."""
    from cannery_host.wgpu_runner import Runner

    return Runner(limits="default", subgroups=False)


def test_every_backward_kernel_has_a_wgsl_build():
    assert set(BACKWARD) == {"plain-backward", "fused-backward", "fused-backward-no-D", "fused-backward-fast",
                             "plain-backward-fast"}


@pytest.mark.parametrize("kernel,n,d,causal", _cases(BACKWARD, COUNTED))
def test_instrumented_bytes_equal_the_emulator_count(runner, kernel, n, d, causal):
    _, grads, counts = _run(runner, kernel, n, d, causal, instrumented=True)
    expected = count(kernel, n, d, causal)
    assert {t: c["read"] for t, c in counts.items()} == expected.reads
    assert {t: c["write"] for t, c in counts.items()} == expected.writes
    for g in grads:
        assert g.shape == (n, d) and np.isfinite(g).all()


# Checked sizes: ragged last query and key tiles, causal and full, every d step the
# lesson tiles differ by, small enough for the pure-Python float64 reference.
CHECKED = [(65, 64, True), (100, 16, False), (77, 32, True), (40, 128, False)]


@pytest.mark.parametrize("kernel,n,d,causal", _cases(["fused-backward", "plain-backward"], CHECKED))
def test_gradients_read_back_pass_the_float64_check(runner, kernel, n, d, causal):
    from cannery_host.wgpu_runner import check_backward

    (q, k, v, do, bc), (dq, dk, dv), _ = _run(runner, kernel, n, d, causal)
    report = check_backward(q, k, v, do, causal, dq, dk, dv, bc, _reference(n, d, causal, 0, bc))
    assert report["passed"], report["tensors"]
    for t in report["tensors"].values():
        assert t["nan_entries"] == 0


@pytest.mark.parametrize("kernel,n,d,causal", _cases(["fused-backward-no-D"], [(65, 64, True), (100, 16, False)]))
def test_the_backward_without_d_fails_the_check_on_dq_and_dk_only(runner, kernel, n, d, causal):
    from cannery_host.wgpu_runner import check_backward

    (q, k, v, do, bc), (dq, dk, dv), _ = _run(runner, kernel, n, d, causal)
    assert all(np.isfinite(g).all() for g in (dq, dk, dv))
    report = check_backward(q, k, v, do, causal, dq, dk, dv, bc, _reference(n, d, causal, 0, bc))
    assert not report["passed"]
    t = report["tensors"]
    assert t["dQ"]["worst_ratio"] > 100 and t["dK"]["worst_ratio"] > 100, t
    assert t["dV"]["passed"], t


def test_a_gpu_result_off_by_more_than_the_bound_fails_the_check(runner):
    """The check can fail: one entry of a right dK moved by 10x its bound is caught."""
    from cannery_host.wgpu_runner import check_backward

    (q, k, v, do, bc), (dq, dk, dv), _ = _run(runner, "fused-backward", 65, 64, True)
    reference = _reference(65, 64, True, 0, bc)
    bad = dk.astype(np.float64)
    bad[3, 5] = reference["ref"]["dK"][3][5] + 10 * reference["bound"]["dK"][3][5]
    report = check_backward(q, k, v, do, True, dq, bad, dv, bc, reference)
    assert not report["tensors"]["dK"]["passed"] and report["tensors"]["dQ"]["passed"]


def test_several_heads_in_one_dispatch_match_each_head_alone(runner):
    """(H, N, d) inputs: head h's gradients equal a one-head run on head h's inputs."""
    from cannery_host.wgpu_runner import forward_saved

    rng = np.random.default_rng(4)
    H, n, d = 3, 70, 32
    Q, K, V, dO = (rng.standard_normal((H, n, d)).astype(np.float32) for _ in range(4))
    O, L = forward_saved(Q, K, V, True)
    for kernel in ("fused-backward", "plain-backward"):
        many = runner.run_backward(kernel, Q, K, V, O, L, dO, True)[:3]
        for h in (0, 2):
            one = runner.run_backward(kernel, Q[h], K[h], V[h], O[h], L[h], dO[h], True)[:3]
            for a, b in zip(many, one, strict=True):
                np.testing.assert_allclose(a[h], b, rtol=1e-5, atol=1e-6)


def test_a_non_finite_l_and_a_wrong_direction_are_refused(runner):
    from cannery_host.wgpu_runner import KernelError

    q = np.zeros((4, 16), np.float32)
    lse = np.array([0.0, -np.inf, 0.0, 0.0], np.float32)
    with pytest.raises(KernelError, match="L must be finite"):
        runner.run_backward("fused-backward", q, q, q, q, lse, q)
    with pytest.raises(KernelError, match="use run_backward"):
        runner.run("fused-backward", q, q, q)
    with pytest.raises(KernelError, match="use run$"):
        runner.run_backward("fused", q, q, q, q, np.zeros(4, np.float32), q)


# ---- the tuned backward kernels --------------------------------------------------

FAST = "fused-backward-fast"
TUNED = [FAST, "plain-backward-fast"]
# Ragged N (77 and 300 are no multiple of any of their tiles, 64 or 128), causal and full, every d;
# 300 is a multiple of 4, so the plain's elementwise passes take their vec4 path there.
FAST_COUNTED = [(77, 16, True), (300, 16, False), (77, 32, False), (300, 32, True),
                (77, 64, True), (300, 64, False), (77, 128, False), (300, 128, True)]
# N = 77 already spans two tiles and several chunks of rows and keys at d >= 32; N = 300
# streams ten chunks of 31 rows past each key tile at d = 32. The reference is pure Python.
FAST_CHECKED = [(77, 16, False), (77, 16, True), (77, 32, True), (77, 64, False), (77, 64, True),
                (77, 128, True), (300, 32, True)]
def _subgroup_variants(kernel, d):
    """[True, False] (with and without subgroups) where a pass of the kernel has a subgroup
    shader at this d (manifest "with_subgroups" "file_by_d"); else [False]: the same shaders
    would run either way, so the case runs once."""
    lanes = any(str(d) in (spec.get("with_subgroups") or {}).get("file_by_d", {})
                for spec in MANIFEST["kernels"][kernel]["wgsl"])
    return [True, False] if lanes else [False]


def _sub_id(subgroups):
    return "with-subgroups" if subgroups else "without-subgroups"


def _tuned_cases(configs):
    return [pytest.param(kern, n, d, c, sub, id=f"{kern}-{n=}-{d=}-causal={c}-{_sub_id(sub)}")
            for kern in TUNED for n, d, c in configs for sub in _subgroup_variants(kern, d)]


def _device(runner, runner_no_subgroups, subgroups, kernel, d):
    """The device of one case; checks that it runs the subgroup shader of every pass that
    has one at this d (the _lanes.wgsl twin) on a device with subgroups, and the twin without."""
    r = runner if subgroups else runner_no_subgroups
    specs = MANIFEST["kernels"][kernel]["wgsl"]
    lanes = subgroups and any(str(d) in (s.get("with_subgroups") or {}).get("file_by_d", {}) for s in specs)
    if lanes and r.subgroup_min < d // 16:
        pytest.skip(f"this adapter's subgroups hold {r.subgroup_min}; d = {d} needs {d // 16}")
    want = [(s.get("with_subgroups") or {}).get("file_by_d", {}).get(str(d), s["file"]) if lanes else s["file"]
            for s in specs]
    assert r.shaders(kernel, d) == want
    return r


@pytest.mark.parametrize("kernel,n,d,causal,subgroups", _tuned_cases(FAST_COUNTED))
def test_the_tuned_backward_counts_what_the_manifest_declares(runner, runner_no_subgroups, kernel, n, d, causal,
                                                                subgroups):
    r = _device(runner, runner_no_subgroups, subgroups, kernel, d)
    _, grads, counts = _run(r, kernel, n, d, causal, seed=2, instrumented=True)
    expected = count(kernel, n, d, causal)
    assert {t: c["read"] for t, c in counts.items()} == expected.reads
    assert {t: c["write"] for t, c in counts.items()} == expected.writes
    # its own tiles: K read once per query tile of B_r rows, Q once per key tile of B_c keys
    t = MANIFEST["kernels"][kernel]["tiling"]
    br, bc = t["block_rows"][str(d)], t["block_cols"][str(d)]
    if not causal and kernel == FAST:
        assert expected.reads["K"] == (-(-n // br) + 1) * n * d * 4  # dq's query tiles, and dkv once
        assert expected.reads["Q"] == (-(-n // bc) + 1) * n * d * 4  # dkv's key tiles, and dq once
    if not causal and kernel != FAST:  # scores walks key tiles, dq query tiles; S, P, dP, dS go out and back
        assert expected.reads["K"] == (-(-n // br) + 1) * n * d * 4
        assert expected.writes["S"] == expected.reads["S"] == expected.writes["dS"] == n * n * 4
        assert expected.reads["dS"] == expected.reads["P"] == 2 * n * n * 4
    for g in grads:
        assert g.shape == (n, d) and np.isfinite(g).all()


@pytest.mark.parametrize("kernel,n,d,causal,subgroups", _tuned_cases(FAST_CHECKED))
def test_the_tuned_backward_passes_the_float64_check(runner, runner_no_subgroups, kernel, n, d, causal, subgroups):
    from cannery_host.wgpu_runner import check_backward

    r = _device(runner, runner_no_subgroups, subgroups, kernel, d)
    (q, k, v, do, bc), (dq, dk, dv), _ = _run(r, kernel, n, d, causal)
    report = check_backward(q, k, v, do, causal, dq, dk, dv, bc, _reference(n, d, causal, 0, bc))
    assert report["passed"], report["tensors"]
    assert all(t["nan_entries"] == 0 for t in report["tensors"].values())


@pytest.mark.parametrize("kernel", TUNED)
def test_a_tuned_backward_with_a_wrong_dq_fails_the_check(runner, kernel):
    """The check can fail the tuned kernels too: a dQ with two rows swapped."""
    from cannery_host.wgpu_runner import check_backward

    (q, k, v, do, bc), (dq, dk, dv), _ = _run(runner, kernel, 77, 64, True)
    bad = dq.copy()
    bad[[10, 11]] = bad[[11, 10]]
    report = check_backward(q, k, v, do, True, bad, dk, dv, bc, _reference(77, 64, True, 0, bc))
    assert not report["tensors"]["dQ"]["passed"] and report["tensors"]["dK"]["passed"]


def test_each_tuned_subgroup_shader_is_its_twin_with_only_the_lane_sum_changed():
    """bwd_fast_X.wgsl and bwd_fast_X_lanes.wgsl share their body (parts/bwd_fast_X_body.wgsl):
    the twin any device runs sums the lanes through workgroup memory (parts/lanes_memory.wgsl)
    and names no subgroup built-in; the subgroup shader says `enable subgroups;` first,
    sets SUBGROUPS and sums with three subgroupShuffleXor (parts/lanes_shuffle.wgsl). Every
    subgroup shader of the tuned kernels is one."""
    from cannery_host.wgpu_runner import KERNEL_DIR
    from planner.shaders import INCLUDE, read_source

    def code(name, joined=True):
        text = read_source(name) if joined else (KERNEL_DIR / name).read_text()
        return [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("//")]

    def includes(name):
        return [m.group(1) for m in map(INCLUDE.fullmatch, (KERNEL_DIR / name).read_text().splitlines()) if m]

    lanes = {f for kern in TUNED for spec in MANIFEST["kernels"][kern]["wgsl"]
             for f in (spec.get("with_subgroups") or {}).get("file_by_d", {}).values()}
    assert lanes == {"bwd_fast_dkv_lanes.wgsl", "bwd_fast_dq_lanes.wgsl", "bwd_fast_sdp_lanes.wgsl"}
    for name in sorted(lanes):
        twin = name.replace("_lanes", "")
        body = f"parts/{twin.replace('.wgsl', '_body.wgsl')}"
        assert includes(twin) == ["parts/header.wgsl", body, "parts/lanes_memory.wgsl"], twin
        assert includes(name) == ["parts/header.wgsl", body, "parts/lanes_shuffle.wgsl"], name
        assert code(twin, joined=False) == ["const SUBGROUPS: bool = false;"], twin
        assert code(name, joined=False)[0] == "enable subgroups;", name
        assert not any("subgroup" in line for line in code(twin)), twin
        assert sum("subgroupShuffleXor" in line for line in code(name)) == 3, name


@pytest.mark.parametrize("kernel", TUNED)
@pytest.mark.parametrize("d", [16, 32, 64, 128])
def test_every_tuned_tile_fits_what_its_shaders_support(kernel, d):
    """Each pass of a tuned kernel, with and without subgroups, at the manifest's tiles: at
    most 256 invocations and the declared workgroup memory, at most 4 vec4s of a chunk loaded
    by each invocation into named registers (nq0..nq3, nk0..nk3, nx0..nx3), whole numbers of
    R per tile, chunks of at least one row or key, the same tiles (so the same bytes) on
    either shader; the plain's key-tile passes write exactly the blocks its query-tile passes
    read back only when B_r = B_c."""
    from emulator.tiling import make_tiling
    from planner import pass_plan
    from planner.shaders import Shader, instrument, pass_variant, read_source

    tiling = make_tiling(kernel, 300, d, True)
    entry = MANIFEST["kernels"][kernel]
    assert tiling.block_rows % tiling.block_cols == 0  # the float32 mirrors' rule
    if kernel != FAST:
        assert tiling.block_rows == tiling.block_cols
    for index, spec in enumerate(entry["wgsl"]):
        for subgroup_min in (0, d // 16):
            file, constants = pass_variant(spec, d, tiling, subgroup_min)
            sh = Shader(instrument(read_source(file)), constants)
            need = pass_plan(kernel, index, tiling, 1, subgroup_min)
            assert need["invocations"] <= 256 and need["workgroup_bytes"] <= entry["workgroup_bytes"][str(d)]
            decls = sh.decls
            if "R" in decls:
                tile = sh.value("BC") if spec["grid"] == "key_tiles" else sh.value("BR")
                assert sh.value("R") in (1, 2, 4) and tile % sh.value("R") == 0, (file, d)
            for chunk, per in (("QC", "CPT"), ("KC", "CPT")):
                if chunk in decls:
                    assert sh.value(chunk) >= 1, (file, d)
                if per in decls:
                    assert 1 <= sh.value(per) <= 4, (file, d)
            if file.endswith("_lanes.wgsl"):
                assert spec["with_subgroups"]["min_subgroup_size_by_d"][str(d)] == d // 16


# ---- the lesson kernels on the tuned shaders ----------------------------------------------

# The lesson kernels run the tuned shaders at the lesson's tiles (kernels_wgsl/README.md): their
# bytes must be the lesson's for every M the lab takes, from 4,096 to 65,536 B, odd ones
# included: (M, N, d, causal), with B_r x B_c of 32x16 (d = 16) and 16x8 (d = 32) at 4,096 B;
# 46x23 at 6,000 B (odd key tiles: one key an invocation; with N = 100 causal, blocks that end
# off a vec4, so the elementwise passes take single floats); 18x9 (d = 64) at 10,000 B; 78x39
# (d = 32) at 20,000 B; 256x128 (d = 16) and 32x16 (d = 128) at 32,768 B; 512x256 (d = 16, 256
# invocations in the dq pass) and 128x64 (d = 64) at 65,536 B; 62x31 (d = 128) at 65,535 B; and
# checked against float64, 30x15 (d = 128) at 31,000 B. plain-backward's scores and dp passes
# keep the lesson's bench (M/2 + M/4 B), so past the device's workgroup memory they are skipped.
LESSON = ["fused-backward", "fused-backward-no-D", "plain-backward"]
LESSON_CHECKED = ["fused-backward", "plain-backward"]
LESSON_M_CHECKED = [(6000, 100, 16, True), (31000, 77, 128, True), (65535, 77, 128, True)]
LESSON_M = [(4096, 70, 16, True), (4096, 77, 32, False), (6000, 100, 16, True), (10000, 77, 64, True),
            (20000, 130, 32, True), (32768, 300, 16, False), (32768, 77, 128, True), (65536, 300, 16, True),
            (65536, 200, 64, False), (65535, 130, 128, True)]


@pytest.fixture(scope="module")
def lesson_runners(runner):
    """Two devices at the adapter's largest limits, with and without subgroups. The planner
    (planner) holds each pass's declared workgroup memory, not M, to the device: the
    lesson shaders that plain-backward's scores and dp passes run declare M/2 + M/4, the
    tuned shaders of every other pass fit their chunks to 16,384 B whatever M."""
    from cannery_host.wgpu_runner import Runner

    return {True: Runner(limits="max"), False: Runner(limits="max", subgroups=False)}


def _lesson_device(lesson_runners, subgroups, kernel, d, m):
    """The device of one case at M bytes: every pass at the lesson's tiles declares at most
    256 invocations and, a tuned shader, WebGPU's default 16,384 B of workgroup memory (a
    lesson shader: M); skipped, saying so, where the device has less than a pass declares."""
    from emulator.tiling import make_tiling
    from planner import pass_plan

    r = lesson_runners[subgroups]
    tiling = make_tiling(kernel, 300, d, True, m)
    assert tiling.block_rows == 2 * tiling.block_cols
    most = 0
    for i, spec in enumerate(MANIFEST["kernels"][kernel]["wgsl"]):
        need = pass_plan(kernel, i, tiling, 1, r.subgroup_min)
        tuned = need["file"].startswith("bwd_fast_")
        assert need["workgroup_bytes"] <= (16384 if tuned else max(m, 16384)), (kernel, spec["pass"], d, m, need)
        assert need["invocations"] <= 256, (kernel, spec["pass"], d, m, need)
        most = max(most, need["workgroup_bytes"])
    if most > r.max_wg_bytes:
        pytest.skip(f"{kernel} at M = {m} declares {most} B of workgroup memory; this device has {r.max_wg_bytes}")
    return r


def _m_cases(kernels, configs):
    """Each kernel at each (M, N, d, causal), with and without subgroups as _subgroup_variants says."""
    return [pytest.param(kern, m, n, d, c, sub, id=f"{kern}-M={m}-{n=}-{d=}-causal={c}-{_sub_id(sub)}")
            for kern in kernels for m, n, d, c in configs for sub in _subgroup_variants(kern, d)]


@pytest.mark.parametrize("kernel,m,n,d,causal,subgroups", _m_cases(LESSON, LESSON_M))
def test_the_lesson_kernels_count_the_lesson_bytes_at_every_m(lesson_runners, kernel, m, n, d, causal, subgroups):
    r = _lesson_device(lesson_runners, subgroups, kernel, d, m)
    _, grads, counts = _run(r, kernel, n, d, causal, seed=3, instrumented=True, workgroup_bytes=m)
    expected = count(kernel, n, d, causal, m)
    assert {t: c["read"] for t, c in counts.items()} == expected.reads
    assert {t: c["write"] for t, c in counts.items()} == expected.writes
    for g in grads:
        assert g.shape == (n, d) and np.isfinite(g).all()


@pytest.mark.parametrize("kernel,m,n,d,causal,subgroups", _m_cases(LESSON_CHECKED, LESSON_M_CHECKED))
def test_the_lesson_kernels_pass_the_float64_check_at_other_m(lesson_runners, kernel, m, n, d, causal, subgroups):
    from cannery_host.wgpu_runner import check_backward

    r = _lesson_device(lesson_runners, subgroups, kernel, d, m)
    (q, k, v, do, bc), (dq, dk, dv), _ = _run(r, kernel, n, d, causal, workgroup_bytes=m)
    report = check_backward(q, k, v, do, causal, dq, dk, dv, bc, _reference(n, d, causal, 0, bc))
    assert report["passed"], report["tensors"]
