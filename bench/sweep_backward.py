"""Time the tuned backward kernels' passes (bwd_fast_*.wgsl) at other tiles and other rows or
keys per invocation (R) than the manifest declares, to choose them.

    python -m bench.sweep_backward --n 4096 --heads 32 --d 16 64 128 [--budget-s 120]
        [--json bench/results/wgsl-backward-sweep.json]

Each configuration is patched into the in-memory manifest (the file is not changed): for
one kernel (fused-backward-fast or plain-backward-fast), its tiles B_r x B_c at d, and/or
override constants of some passes (the same ones for the pass's subgroup shader). It is
checked first on this device against float64 gradients from NumPy at N = 130 (ragged,
full and causal; largest |error| over the largest |gradient| below 1e-4: a screen, not the
per-entry bound of emulator.backward, which bench.bench_wgsl_backward applies to the
manifest's own configurations), then the named pass (or the whole kernel) is timed with
cannery_host.wgpu_runner.Runner.time at the given size, full attention. A configuration that a
tile change makes move other bytes says so in its line ("bytes"). The order of CONFIGS is
the order of importance: the run stops starting new ones after --budget-s.
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

import numpy as np

from cannery_host import wgpu_runner as host
from emulator.tiling import MANIFEST
from emulator.traffic import count

FUSED, PLAIN = "fused-backward-fast", "plain-backward-fast"

# (kernel, d, tiles (B_r, B_c) or None, {pass name: constants}, pass timed alone or None = all)
CONFIGS = [
    (FUSED, 64, None, {}, None),
    (FUSED, 64, None, {"dkv": {"R": 1}, "dq": {"R": 1}}, None),
    (FUSED, 64, (128, 128), {}, None),
    (FUSED, 64, (128, 64), {}, None),
    (FUSED, 64, None, {"dkv": {"R": 1}}, "dkv"),
    (FUSED, 64, None, {}, "dkv"),
    (FUSED, 64, None, {"dq": {"R": 1}}, "dq"),
    (FUSED, 64, None, {}, "dq"),
    (FUSED, 128, None, {}, None),
    (FUSED, 128, (32, 32), {"dkv": {"R": 1}, "dq": {"R": 1}}, None),
    (FUSED, 128, (64, 32), {"dkv": {"R": 1}}, None),
    (FUSED, 16, None, {}, None),
    (FUSED, 16, None, {"dkv": {"R": 1}, "dq": {"R": 1}}, None),
    (FUSED, 16, (64, 64), {}, None),
    (PLAIN, 64, (128, 128), {}, None),
    (PLAIN, 64, None, {"scores": {"R": 4}}, "scores"),
    (PLAIN, 64, None, {"scores": {"R": 1}}, "scores"),
    (PLAIN, 64, None, {}, "scores"),
    (PLAIN, 64, None, {"dq": {"R": 4}}, "dq"),
    (PLAIN, 64, None, {"dq": {"R": 1}}, "dq"),
    (PLAIN, 64, None, {}, "dq"),
    (PLAIN, 64, None, {"dkv": {"R": 1}}, "dkv"),
    (PLAIN, 64, None, {}, "dkv"),
    (PLAIN, 128, None, {"scores": {"R": 2}}, "scores"),
    (PLAIN, 128, None, {"dq": {"R": 2}}, "dq"),
    (PLAIN, 128, None, {"dkv": {"R": 1}}, "dkv"),
    (PLAIN, 16, None, {"scores": {"R": 4}}, "scores"),
    (PLAIN, 16, None, {"dq": {"R": 4}}, "dq"),
    (PLAIN, 16, None, {"dkv": {"R": 1}}, "dkv"),
    (PLAIN, 64, None, {"softmax": {"WG": 256}}, "softmax"),
    (PLAIN, 64, None, {"softmax": {"WG": 128}}, "softmax"),
    (PLAIN, 64, None, {}, "softmax"),
    (PLAIN, 64, None, {"ds": {"WG": 256}}, "ds"),
    (PLAIN, 64, None, {}, "ds"),
]


def reference(Q, K, V, dO, causal):
    """O, L, dQ, dK, dV in float64 (NumPy), one head: Q, K, V, dO (N, d)."""
    Q, K, V, dO = (np.asarray(x, np.float64) for x in (Q, K, V, dO))
    n, d = Q.shape
    S = Q @ K.T / np.sqrt(d)
    if causal:
        S = np.where(np.tril(np.ones((n, n), bool)), S, -np.inf)
    m = S.max(1, keepdims=True)
    E = np.exp(S - m)
    total = E.sum(1, keepdims=True)
    P = E / total
    O = P @ V
    dS = P * (dO @ V.T - (dO * O).sum(1, keepdims=True))
    return O, (m + np.log(total))[:, 0], dS @ K / np.sqrt(d), dS.T @ Q / np.sqrt(d), P.T @ dO


def patched(kernel, d, tiles, constants):
    """A copy of the manifest's entry for ``kernel`` with these tiles at d and these pass
    constants (given to the pass and to its subgroup shader at d)."""
    e = copy.deepcopy(MANIFEST["kernels"][kernel])
    if tiles:
        e["tiling"]["block_rows"][str(d)], e["tiling"]["block_cols"][str(d)] = tiles
    for spec in e["wgsl"]:
        c = constants.get(spec["pass"])
        if not c:
            continue
        spec.setdefault("constants_by_d", {}).setdefault(str(d), {}).update(c)
        alt = spec.get("with_subgroups")
        if alt and str(d) in alt["file_by_d"]:
            alt["constants_by_d"].setdefault(str(d), {}).update(c)
    return e


def screen(runner, kernel, d) -> float:
    """Largest |error| / largest |gradient| over dQ, dK, dV at N = 130, full and causal."""
    rng = np.random.default_rng(3)
    Q, K, V, dO = (rng.standard_normal((130, d)).astype(np.float32) for _ in range(4))
    worst = 0.0
    for causal in (False, True):
        O, L, *want = reference(Q, K, V, dO, causal)
        got = runner.run_backward(kernel, Q, K, V, O.astype(np.float32), L.astype(np.float32), dO, causal)[:3]
        for g, w in zip(got, want, strict=True):
            worst = max(worst, float(np.abs(g - w).max() / np.abs(w).max()))
    return worst


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--d", type=int, nargs="+", default=[16, 64, 128])
    ap.add_argument("--limits", default="max", choices=["default", "max"])
    ap.add_argument("--budget-s", type=float, default=120.0)
    ap.add_argument("--json", type=Path, default=Path("bench/results/wgsl-backward-sweep.json"))
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    runner = host.Runner(limits=a.limits)
    out = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "argv": sys.argv,
           "adapter": runner.info, "subgroup_min": runner.subgroup_min, "n": a.n, "heads": a.heads, "rows": []}
    print(f"# adapter {runner.info}, subgroups {runner.subgroup_min}", flush=True)
    for kernel, d, tiles, constants, pass_name in CONFIGS:
        if d not in a.d:
            continue
        row = {"kernel": kernel, "d": d, "tiles": tiles, "constants": constants, "pass": pass_name or "all"}
        if time.perf_counter() - t0 > a.budget_s:
            row["skipped"] = "budget spent"
            out["rows"].append(row)
            continue
        saved = MANIFEST["kernels"][kernel]
        MANIFEST["kernels"][kernel] = patched(kernel, d, tiles, constants)
        runner._pipelines.clear()
        try:
            row["shaders"] = runner.shaders(kernel, d)
            row["rel_error"] = screen(runner, kernel, d)
            if row["rel_error"] > 1e-4:
                row["skipped"] = "failed the float64 screen"
            else:
                specs = MANIFEST["kernels"][kernel]["wgsl"]
                passes = None
                if pass_name is not None:
                    passes = (next(i for i, s in enumerate(specs) if s["pass"] == pass_name),)
                r = runner.time(kernel, a.n, d, a.heads, False, passes=passes, max_config_ms=3000.0)
                row.update({k: r[k] for k in ("medianMs", "samples", "reps", "method")})
                traffic = count(kernel, a.n, d, False)
                row["bytes"] = (traffic.total_bytes if pass_name is None else traffic.per_pass[pass_name]) * a.heads
                row["gbps"] = row["bytes"] / (row["medianMs"] * 1e6)
        except host.KernelError as e:
            row["refused"] = str(e)
        finally:
            MANIFEST["kernels"][kernel] = saved
            runner._pipelines.clear()
        out["rows"].append(row)
        brief = {k: row[k] for k in ("kernel", "d", "tiles", "constants", "pass", "rel_error", "medianMs", "gbps",
                                     "skipped", "refused") if k in row}
        print(json.dumps(brief), flush=True)
    out["elapsed_s"] = time.perf_counter() - t0
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps(out, indent=1))
    print(f"# wrote {a.json} ({out['elapsed_s']:.0f} s)")


if __name__ == "__main__":
    main()
