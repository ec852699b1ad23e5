"""Time the tuned forward kernels at other tiles and override constants than the manifest
declares, beside PyTorch SDPA float32, to choose them.

    python -m bench.sweep_forward --n 4096 --heads 32 --d 16 64 128 [--budget-s 240]
        [--only plain-reg] [--json bench/results/wgsl-forward-sweep.json]

Each configuration is patched into the in-memory manifest (the file is not changed): for one
kernel, its tiles B_r x B_c at d (with the workgroup memory its shader then declares), and/or
override constants of one of its passes (the same ones for the pass's subgroup shader);
"memory" drops the subgroup shader, so the variant any device runs is timed. It is checked
first on this device against float64 (NumPy) at N = 130 (ragged, full and causal; largest
|error| over the largest |O| below 1e-4: a screen, not bench.bench_wgsl's check of the
manifest's own configurations), then timed with cannery_host.wgpu_runner.Runner.time at the given
size, full attention (one pass alone where a pass is named). The order of CONFIGS is the
order of importance: the run stops starting new ones after --budget-s.
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path

import numpy as np

from bench.bench_wgsl import pass_bytes, pass_flop, time_torch
from cannery_host import wgpu_runner as host
from emulator.tiling import MANIFEST

REG, FAST, PLAIN, PLAIN_REG, ROWS = "fused-reg", "fused-fast", "plain", "plain-reg", "fused-rows"

# (kernel, d, tiles (B_r, B_c) or None, {pass name: constants}, memory variant, pass timed alone or None)
CONFIGS = [
    # The row-tiled fused kernel (issue 33): whole rows of Q and O an invocation, or their
    # lanes. At d = 128 and 64: rows in lanes 8 invocations apart (LS), the manifest's
    # constants, the shader without subgroups (memory), no prefetch, other tiles, four
    # neighbouring lanes; then d = 32 and 16 (docs/BENCHMARKS.md, "fused-rows").
    (ROWS, 128, (128, 16), {"fused": {"TD": 4, "R": 2, "LS": 8}}, False, None),
    (ROWS, 128, (128, 32), {"fused": {"TD": 4, "R": 2, "LS": 8}}, False, None),
    (ROWS, 128, (64, 16), {"fused": {"TD": 4, "R": 2, "LS": 8}}, False, None),
    (ROWS, 128, (128, 16), {"fused": {"TD": 4, "R": 1, "LS": 8}}, False, None),
    (ROWS, 128, (128, 16), {"fused": {"TD": 2, "R": 1, "LS": 8}}, False, None),
    (ROWS, 128, None, {}, False, None),
    (ROWS, 64, None, {}, False, None),
    (ROWS, 64, None, {"fused": {"TD": 2, "R": 2, "LS": 8}}, False, None),
    (ROWS, 64, None, {"fused": {"TD": 4, "R": 2, "LS": 8}}, False, None),
    (ROWS, 64, (256, 32), {"fused": {"TD": 4, "R": 2, "LS": 8}}, False, None),
    (ROWS, 64, None, {}, True, None),
    (ROWS, 64, None, {"fused": {"PREFETCH": False}}, False, None),
    (ROWS, 64, (64, 32), {}, False, None),
    (ROWS, 64, (256, 32), {}, False, None),
    (ROWS, 64, (256, 16), {}, False, None),
    (ROWS, 128, None, {}, True, None),
    (ROWS, 128, (128, 32), {}, False, None),
    (ROWS, 128, (64, 16), {"fused": {"TD": 4}}, False, None),
    (ROWS, 128, (128, 16), {"fused": {"PREFETCH": False}}, False, None),
    (ROWS, 32, None, {}, False, None),
    (ROWS, 32, None, {"fused": {"R": 1}}, False, None),
    (ROWS, 32, (128, 32), {}, False, None),
    (ROWS, 32, (256, 64), {}, False, None),
    (ROWS, 16, None, {}, False, None),
    (ROWS, 16, (256, 64), {}, False, None),
    (REG, 64, None, {}, False, None),
    (REG, 64, None, {"fused": {"TM": 8}}, False, None),
    (REG, 64, None, {"fused": {"KSWZ": 15}}, False, None),
    (REG, 64, None, {"fused": {"PREFETCH": False}}, False, None),
    (REG, 64, (64, 32), {"fused": {"SHARE": True}}, False, None),
    (REG, 64, (128, 16), {"fused": {"SHARE": True, "QPAD": 1, "KPAD": 0, "KSWZ": 7, "PPAD": 0}}, False, None),
    (REG, 16, (128, 16), {"fused": {"SHARE": True}}, False, None),
    (FAST, 64, None, {}, False, None),
    # The register-tiled plain, the fair baseline: each pass alone at the manifest's tiles, then
    # the softmax's invocations a row (the manifest's 64 at N <= 4,096; 128, its choice past
    # 4,096 keys; 256), padded tiles instead of the bank swizzles, other tiles.
    (PLAIN_REG, 64, None, {}, False, "scores"),
    (PLAIN_REG, 64, None, {}, False, "softmax"),
    (PLAIN_REG, 64, None, {}, False, "pv"),
    (PLAIN_REG, 64, None, {"softmax": {"WG": 128}}, False, "softmax"),
    (PLAIN_REG, 64, None, {"softmax": {"WG": 256}}, False, "softmax"),
    (PLAIN_REG, 64, None, {"scores": {"KSWZ": 0, "QPAD": 1, "KPAD": 1}}, False, "scores"),
    (PLAIN_REG, 64, None, {"pv": {"PSWZ": 0, "PPAD": 1}}, False, "pv"),
    (PLAIN_REG, 64, (64, 32), {}, False, "scores"),
    (PLAIN_REG, 64, (64, 32), {}, False, "pv"),
    (PLAIN_REG, 128, None, {}, False, "scores"),
    (PLAIN_REG, 128, None, {}, False, "pv"),
    (PLAIN_REG, 128, (32, 32), {}, False, "scores"),
    (PLAIN_REG, 16, None, {}, False, "scores"),
    (PLAIN_REG, 16, None, {}, False, "pv"),
    (PLAIN_REG, 16, None, {"pv": {"TM": 4}}, False, "pv"),
    (PLAIN_REG, 16, (128, 64), {}, False, "scores"),
    (PLAIN_REG, 16, (128, 64), {}, False, "pv"),
    # d = 16: tiles whose share of P an invocation loads stays at 8 vec4s or fewer, so the
    # next tile is held in registers (the runs above without it were 4x slower), with two
    # rows an invocation or four (TM); PSWZ stays below B_c / 4. Then each tiling's scores,
    # and the whole kernel beside fused-reg's.
    (REG, 16, None, {}, False, None),
    (PLAIN_REG, 16, (128, 32), {}, False, "pv"),
    (PLAIN_REG, 16, (64, 32), {"pv": {"TM": 4}}, False, "pv"),
    (PLAIN_REG, 16, (64, 32), {}, False, "pv"),
    (PLAIN_REG, 16, (128, 16), {"pv": {"PSWZ": 3}}, False, "pv"),
    (PLAIN_REG, 16, (256, 32), {}, False, "pv"),
    (PLAIN_REG, 16, (256, 16), {"pv": {"PSWZ": 3}}, False, "pv"),
    (PLAIN_REG, 16, (128, 32), {}, False, "scores"),
    (PLAIN_REG, 16, (64, 32), {}, False, "scores"),
    (PLAIN_REG, 16, (256, 32), {}, False, "scores"),
    (PLAIN_REG, 16, None, {}, False, None),
    (PLAIN_REG, 16, (128, 32), {}, False, None),
    (PLAIN_REG, 16, (64, 32), {}, False, None),
]


def reference(Q, K, V, causal):
    """O in float64 (NumPy), one head: Q, K, V (N, d)."""
    Q, K, V = (np.asarray(x, np.float64) for x in (Q, K, V))
    n, d = Q.shape
    S = Q @ K.T / np.sqrt(d)
    if causal:
        S = np.where(np.tril(np.ones((n, n), bool)), S, -np.inf)
    P = np.exp(S - S.max(1, keepdims=True))
    return (P / P.sum(1, keepdims=True)) @ V


def patched(kernel, d, tiles, constants, memory):
    """A copy of the manifest's entry for ``kernel`` with these tiles at d, these pass
    constants (given to the pass and to its subgroup shader at d), and, with ``memory``, no
    subgroup shader. New tiles declare up to the adapter-independent 65,536 B; the planner
    measures what the shader really declares."""
    e = copy.deepcopy(MANIFEST["kernels"][kernel])
    if tiles:
        e["tiling"]["block_rows"][str(d)], e["tiling"]["block_cols"][str(d)] = tiles
        e.setdefault("workgroup_bytes", {})[str(d)] = 65536
    for spec in e["wgsl"]:
        if memory:
            spec.pop("with_subgroups", None)
        c = constants.get(spec["pass"])
        if not c:
            continue
        spec.setdefault("constants_by_d", {}).setdefault(str(d), {}).update(c)
        alt = spec.get("with_subgroups")
        if alt and str(d) in alt["file_by_d"]:
            alt["constants_by_d"].setdefault(str(d), {}).update(c)
    return e


def screen(runner, kernel, d) -> float:
    """Largest |error| / largest |O| at N = 130, two heads, full and causal."""
    rng = np.random.default_rng(5)
    worst = 0.0
    for causal in (False, True):
        Q, K, V = (rng.standard_normal((2, 130, d)).astype(np.float32) for _ in range(3))
        got, _ = runner.run(kernel, Q, K, V, causal)
        want = np.stack([reference(Q[h], K[h], V[h], causal) for h in range(2)])
        worst = max(worst, float(np.abs(got - want).max() / np.abs(want).max()))
    return worst


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--d", type=int, nargs="+", default=[16, 64, 128])
    ap.add_argument("--limits", default="max", choices=["default", "max"])
    ap.add_argument("--budget-s", type=float, default=240.0)
    ap.add_argument("--json", type=Path, default=Path("bench/results/wgsl-forward-sweep.json"))
    ap.add_argument("--only", nargs="+", help="run only the configurations of these kernels")
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    runner = host.Runner(limits=a.limits)
    out = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "argv": sys.argv,
           "adapter": runner.info, "subgroup_min": runner.subgroup_min, "max_workgroup_bytes": runner.max_wg_bytes,
           "n": a.n, "heads": a.heads, "torch": [], "rows": []}
    print(f"# adapter {runner.info}, subgroups {runner.subgroup_min}, workgroup memory {runner.max_wg_bytes} B",
          flush=True)
    for d in a.d:
        t = time_torch(a.n, d, a.heads, False)
        if t:
            t["d"] = d
            out["torch"].append(t)
            print(json.dumps({"sdpa_fp32": d, "medianMs": t["medianMs"], "samples": t["samples"]}), flush=True)
    for kernel, d, tiles, constants, memory, pass_name in CONFIGS:
        if d not in a.d or (a.only and kernel not in a.only):
            continue
        row = {"kernel": kernel, "d": d, "tiles": tiles, "constants": constants, "memory": memory,
               "pass": pass_name or "all"}
        if time.perf_counter() - t0 > a.budget_s:
            row["skipped"] = "budget spent"
            out["rows"].append(row)
            continue
        saved = MANIFEST["kernels"][kernel]
        MANIFEST["kernels"][kernel] = patched(kernel, d, tiles, constants, memory)
        runner._pipelines.clear()
        try:
            row["shaders"] = runner.shaders(kernel, d)
            row["rel_error"] = screen(runner, kernel, d)
            if not row["rel_error"] < 1e-4 and not any(c.get("DIAG") for c in constants.values()):
                row["skipped"] = "failed the float64 screen"
            else:
                specs = MANIFEST["kernels"][kernel]["wgsl"]
                passes = None
                if pass_name is not None:
                    passes = (next(i for i, s in enumerate(specs) if s["pass"] == pass_name),)
                r = runner.time(kernel, a.n, d, a.heads, False, passes=passes, max_config_ms=3000.0)
                row.update({k: r[k] for k in ("medianMs", "samples", "reps", "method")})
                if pass_name is None:
                    row["gflops"] = host.gflops(a.n, d, a.heads, False) / (row["medianMs"] * 1e6)
                else:  # the pass's own FLOP and bytes (bench.bench_wgsl's convention)
                    row["gflops"] = pass_flop(pass_name, a.n, d, a.heads, False) / (row["medianMs"] * 1e6)
                    row["gbps"] = pass_bytes(kernel, pass_name, a.n, d, False, a.heads) / (row["medianMs"] * 1e6)
        except host.KernelError as e:
            row["refused"] = str(e)
        finally:
            MANIFEST["kernels"][kernel] = saved
            runner._pipelines.clear()
        out["rows"].append(row)
        brief = {k: row[k] for k in ("kernel", "d", "tiles", "constants", "memory", "pass", "shaders", "rel_error",
                                     "medianMs", "gflops", "gbps", "skipped", "refused") if k in row}
        print(json.dumps(brief), flush=True)
    out["elapsed_s"] = time.perf_counter() - t0
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps(out, indent=1))
    sdpa = {t["d"]: t["medianMs"] for t in out["torch"]}
    print("| kernel | d | tiles | constants | memory | pass | ms | GFLOP/s | GB/s | ÷ SDPA speed |")
    for r in out["rows"]:
        if "medianMs" in r:
            share = f"{sdpa[r['d']] / r['medianMs']:.2f}" if r["d"] in sdpa and r["pass"] == "all" else ""
            gb = f"{r['gbps']:.0f}" if "gbps" in r else ""
            print(f"| {r['kernel']} | {r['d']} | {r['tiles']} | {r['constants']} | {r['memory']} | {r['pass']} | "
                  f"{r['medianMs']:.3f} | {r['gflops']:.0f} | {gb} | {share} |")
        else:
            print(f"| {r['kernel']} | {r['d']} | {r['tiles']} | {r['constants']} | {r['memory']} | {r['pass']} | "
                  f"{r.get('skipped') or r.get('refused', '')[:60]} | | | |")
    print(f"# wrote {a.json} ({out['elapsed_s']:.0f} s)")


if __name__ == "__main__":
    main()
