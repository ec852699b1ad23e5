"""The worker ops a GPU backward run uses: backward_inputs and check_backward_output (lab_api/__init__.py)."""
from __future__ import annotations

import pytest

import lab_api as api
from emulator import backward as bwd
from emulator import mirrors
from emulator.inputs import random_qkv
from emulator.tiling import lesson_blocks


def _params(n, d=16, causal=True, kernel="fused", seed=3):
    return {"direction": "backward", "kernel": kernel, "n": str(n), "d": str(d), "causal": causal,
            "seed": str(seed), "workgroup_bytes": "16384"}


def _flat(rows):
    return [x for row in rows for x in row]


def test_backward_inputs_are_the_checks_seeded_inputs_and_float32_forward():
    r = api.handle({"op": "backward_inputs", "params": _params(70)})
    assert r["ok"], r
    x = r["result"]
    q, k, v = random_qkv(70, 16, 3)
    do = bwd.random_do(70, 16, 3)
    o, lse = bwd.forward32(q, k, v, True, block_cols=x["block_cols"])
    assert (x["Q"], x["K"], x["V"], x["dO"], x["O"], x["L"]) == (_flat(q), _flat(k), _flat(v), _flat(do), _flat(o), lse)
    assert (x["block_rows"], x["block_cols"], x["kernel"]) == (128, 64, "fused-backward")


def _mirror(n, d, causal, seed, kernel="fused-backward"):
    """The mirror's gradients (found by the manifest's "mirror" key) at the lesson's tiles for M = 16,384 B."""
    br, bc = lesson_blocks(d, 16384)
    q, k, v = random_qkv(n, d, seed)
    do = bwd.random_do(n, d, seed)
    o, lse = bwd.forward32(q, k, v, causal, block_cols=bc)
    x = {"Q": q, "K": k, "V": v, "O": o, "L": lse, "dO": do, "causal": causal, "mask": None}
    out = mirrors.run(kernel, x, br, bc)
    return {"dQ": _flat(out["dQ"]), "dK": _flat(out["dK"]), "dV": _flat(out["dV"])}


def test_the_mirrors_gradients_pass_and_the_broken_ones_fail_on_dq_and_dk():
    good = api.handle({"op": "check_backward_output", "params": _params(70), "outputs": _mirror(70, 16, True, 3)})
    assert good["ok"] and good["result"]["passed"], good
    assert good["result"]["identity_residual"] < 1e-12
    bad = api.handle({"op": "check_backward_output", "params": _params(70),
                      "outputs": _mirror(70, 16, True, 3, "fused-backward-no-D")})["result"]
    assert not bad["passed"]
    assert [t for t in ("dQ", "dK", "dV") if not bad["tensors"][t]["passed"]] == ["dQ", "dK"]


def test_a_nan_fails_and_a_short_output_is_refused():
    out = _mirror(40, 16, False, 1)
    out["dV"][5] = "nan"
    rep = api.handle({"op": "check_backward_output", "params": _params(40, causal=False, seed=1),
                      "outputs": out})["result"]
    assert not rep["tensors"]["dV"]["passed"] and rep["tensors"]["dV"]["nan_entries"] == 1
    out["dV"] = out["dV"][:-1]
    r = api.handle({"op": "check_backward_output", "params": _params(40, causal=False, seed=1), "outputs": out})
    assert not r["ok"] and "dV" in r["errors"][0]["message"]


@pytest.mark.parametrize("op", ["backward_inputs", "check_backward_output"])
def test_both_stop_at_the_backward_checks_n_limit(op):
    r = api.handle({"op": op, "params": _params(bwd.CHECK_MAX_N + 1), "outputs": {}})
    assert not r["ok"] and r["errors"][0]["field"] == "n"
    assert f"N = {bwd.CHECK_MAX_N:,}" in r["errors"][0]["message"]
