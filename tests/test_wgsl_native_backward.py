"""The WGSL backward kernels of kernels_wgsl/ (bwd_*.wgsl), run natively through wgpu-py
(lavapipe here and on CI).

What is held here (issue 15, "WGSL backward kernels, timed"):
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
from emulator.tiling import MANIFEST
from emulator.traffic import count

pytestmark = pytest.mark.gpu

BACKWARD = [name for name, e in MANIFEST["kernels"].items() if e["direction"] == "backward" and e["wgsl"]]


@pytest.fixture(scope="module")
def runner():
    """One wgpu-py device at WebGPU's default limits (plus the 9th storage buffer the
    instrumented dkv pass binds, where the adapter offers it), or a skip saying why not."""
    try:
        from cannery_host.wgsl import KernelError, Runner
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


def _run(runner, kernel, n, d, causal, seed=0, instrumented=False):
    from emulator.tiling import make_tiling

    bc = make_tiling(kernel, 1, d).block_cols
    q, k, v, do, o, lse = _inputs(n, d, causal, seed, bc)
    f = lambda x: np.array(x, np.float32)  # noqa: E731
    dq, dk, dv, counts = runner.run_backward(kernel, f(q), f(k), f(v), f(o), f(lse), f(do), causal,
                                             instrumented=instrumented)
    return (q, k, v, do, bc), (dq, dk, dv), counts


# Ragged N (1, 65, 77, 100, 300 are no multiple of any tile), causal and full, d = 16 to 128.
COUNTED = [(1, 16, True), (65, 64, True), (77, 64, False), (100, 16, False), (100, 16, True),
           (300, 32, True), (65, 128, True), (40, 128, False)]


def test_every_backward_kernel_has_a_wgsl_build():
    assert set(BACKWARD) == {"plain-backward", "fused-backward", "fused-backward-no-D"}


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
    from cannery_host.wgsl import check_backward

    (q, k, v, do, bc), (dq, dk, dv), _ = _run(runner, kernel, n, d, causal)
    report = check_backward(q, k, v, do, causal, dq, dk, dv, bc, _reference(n, d, causal, 0, bc))
    assert report["passed"], report["tensors"]
    for t in report["tensors"].values():
        assert t["nan_entries"] == 0


@pytest.mark.parametrize("kernel,n,d,causal", _cases(["fused-backward-no-D"], [(65, 64, True), (100, 16, False)]))
def test_the_backward_without_d_fails_the_check_on_dq_and_dk_only(runner, kernel, n, d, causal):
    from cannery_host.wgsl import check_backward

    (q, k, v, do, bc), (dq, dk, dv), _ = _run(runner, kernel, n, d, causal)
    assert all(np.isfinite(g).all() for g in (dq, dk, dv))
    report = check_backward(q, k, v, do, causal, dq, dk, dv, bc, _reference(n, d, causal, 0, bc))
    assert not report["passed"]
    t = report["tensors"]
    assert t["dQ"]["worst_ratio"] > 100 and t["dK"]["worst_ratio"] > 100, t
    assert t["dV"]["passed"], t


def test_a_gpu_result_off_by_more_than_the_bound_fails_the_check(runner):
    """The check can fail: one entry of a right dK moved by 10x its bound is caught."""
    from cannery_host.wgsl import check_backward

    (q, k, v, do, bc), (dq, dk, dv), _ = _run(runner, "fused-backward", 65, 64, True)
    reference = _reference(65, 64, True, 0, bc)
    bad = dk.astype(np.float64)
    bad[3, 5] = reference["ref"]["dK"][3][5] + 10 * reference["bound"]["dK"][3][5]
    report = check_backward(q, k, v, do, True, dq, bad, dv, bc, reference)
    assert not report["tensors"]["dK"]["passed"] and report["tensors"]["dQ"]["passed"]


def test_several_heads_in_one_dispatch_match_each_head_alone(runner):
    """(H, N, d) inputs: head h's gradients equal a one-head run on head h's inputs."""
    from cannery_host.wgsl import forward_saved

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
    from cannery_host.wgsl import KernelError

    q = np.zeros((4, 16), np.float32)
    lse = np.array([0.0, -np.inf, 0.0, 0.0], np.float32)
    with pytest.raises(KernelError, match="L must be finite"):
        runner.run_backward("fused-backward", q, q, q, q, lse, q)
    with pytest.raises(KernelError, match="use run_backward"):
        runner.run("fused-backward", q, q, q)
    with pytest.raises(KernelError, match="use run$"):
        runner.run_backward("fused", q, q, q, q, np.zeros(4, np.float32), q)
