"""Native benchmark of the WGSL backward kernels (wgpu-py), beside PyTorch SDPA's backward.

Usage (the issue's configuration: 32 heads, N = 4,096, d = 64 and 128, float32):

    python -m bench.bench_wgsl_backward [--n 4096] [--d 64 128] [--heads 32]
        [--causal full causal] [--kernels fused-backward plain-backward]
        [--forward fused fused-fast] [--no-torch] [--budget-s 480]
        [--json bench/results/wgsl-backward.json]

Order (as bench/bench_wgsl.py): every backward kernel and d is first checked on this very
device against the exact float64 gradients (emulator.backward.reference, each entry of dQ,
dK, dV within emulator.backward.bounds; N = 77, ragged, full and causal, O and L from the
emulator's float32 forward); the run stops if one fails. Only then is anything timed.

What is timed: the backward passes alone, every pass the manifest lists for the kernel
(fused-backward: D, then dK and dV per key tile, then dQ per query tile; plain-backward:
its seven passes through global memory), on inputs Q, K, V, O, dO random and L a stand-in
logsumexp (cannery_host.wgsl.timing_lse; no pass's work depends on the values). Beside it,
our forward kernels (``--forward``) at the same sizes, for backward ÷ forward time, and
PyTorch's ``scaled_dot_product_attention`` backward in float32 with TF32 off, timed as
``torch.autograd.grad`` of its output (forward run once, outside the timing).

FLOP convention (FlashAttention-2, arXiv:2307.08691, section 4.1): forward 4 N² d per head,
backward 2.5 times that, 10 N² d; causal counts half of each. GFLOP/s = FLOP / median time.
GB/s uses the emulator's byte count (emulator.traffic.count) times heads.

Timing: cannery_host.wgsl.Runner.time (warm-up, samples of at least 10 ms of GPU work, at
least 5 samples where the budget allows, median; timestamp queries when available).
SDPA: CUDA events, the same sample rule.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from cannery_host.wgsl import (
    MANIFEST,
    KernelError,
    Runner,
    TooSlow,
    backward_gflops,
    check_backward,
    gflops,
)
from emulator.tiling import make_tiling

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_JSON = ROOT / "bench" / "results" / "wgsl-backward.json"
CHECK_N = 77  # ragged at every lesson tile; small enough for the pure-Python float64 reference


def check_kernels(runner: Runner, kernels, ds) -> list:
    """Each backward kernel at each d, full and causal, against float64 (see module doc)."""
    from emulator import backward as bw
    from emulator.inputs import random_qkv

    rows = []
    for d in ds:
        q, k, v = random_qkv(CHECK_N, d, 11)
        do = bw.random_do(CHECK_N, d, 11)
        f = lambda x: np.array(x, np.float32)  # noqa: E731
        for causal in (False, True):
            shared = {}  # one float64 reference per (d, mask, B_c), shared by the kernels
            for kern in kernels:
                bc = make_tiling(kern, 1, d).block_cols
                o, lse = bw.forward32(q, k, v, causal, None, bc)
                dq, dk, dv, _ = runner.run_backward(kern, f(q), f(k), f(v), f(o), f(lse), f(do), causal)
                rep = check_backward(q, k, v, do, causal, dq, dk, dv, bc, shared.get(bc))
                shared[bc] = rep["reference"]
                row = {"kernel": kern, "n": CHECK_N, "d": d, "causal": causal, "passed": rep["passed"],
                       "worst_ratio": {t: r["worst_ratio"] for t, r in rep["tensors"].items()},
                       "max_abs_error": {t: r["max_abs_error"] for t, r in rep["tensors"].items()}}
                rows.append(row)
                print(json.dumps(row), flush=True)
                if not rep["passed"]:
                    raise SystemExit(f"check failed before timing: {kern} d={d} causal={causal}: {rep}")
    return rows


def time_torch_backward(n, d, heads, causal, min_sample_ms=10.0, samples=5):
    """PyTorch SDPA backward, float32, TF32 off, CUDA events; None without torch or CUDA."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(1, heads, n, d, device="cuda", dtype=torch.float32, generator=g).requires_grad_()
               for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    do = torch.randn(out.shape, device="cuda", dtype=torch.float32, generator=g)

    def f():
        return torch.autograd.grad(out, (q, k, v), do, retain_graph=True)

    f()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    f()
    e.record()
    torch.cuda.synchronize()
    one = max(s.elapsed_time(e), 1e-3)
    reps = max(1, math.ceil(min_sample_ms / one))
    times = []
    for _ in range(samples):
        s.record()
        for _ in range(reps):
            f()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) / reps)
    times.sort()
    return {"medianMs": times[len(times) // 2], "samples": times, "reps": reps, "method": "cuda-events",
            "backend": torch.__version__, "device": torch.cuda.get_device_name(),
            "grad_fn": type(out.grad_fn).__name__}


def traffic_bytes(kernel, n, d, causal, heads):
    from emulator.traffic import count
    return count(kernel, n, d, causal).total_bytes * heads


def main(argv=None):
    backward = [k for k, e in MANIFEST["kernels"].items()
                if e.get("direction") == "backward" and e["wgsl"] and k != "fused-backward-no-D"]
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[4096])
    ap.add_argument("--d", type=int, nargs="+", default=[64, 128])
    ap.add_argument("--heads", type=int, nargs="+", default=[32])
    ap.add_argument("--causal", nargs="+", default=["full", "causal"], choices=["full", "causal"])
    ap.add_argument("--kernels", nargs="+", default=backward)
    ap.add_argument("--forward", nargs="+", default=["fused", "fused-fast"],
                    help="forward kernels timed at the same sizes, for backward / forward time")
    ap.add_argument("--limits", default="max", choices=["default", "max"])
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--budget-s", type=float, default=480.0, help="stop starting new timings after this")
    ap.add_argument("--max-run-s", type=float, default=30.0,
                    help="skip a configuration predicted to take longer a run (the lesson-tiled kernels are slow)")
    ap.add_argument("--max-config-s", type=float, default=10.0, help="take fewer samples past this")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    a = ap.parse_args(argv)
    t_start = time.perf_counter()
    results = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "argv": sys.argv,
               "flop_convention": "forward 4 N^2 d per head, backward 2.5x forward (10 N^2 d); causal half",
               "rows": [], "torch": [], "checks": []}
    runner = Runner(limits=a.limits)
    results["adapter"] = runner.info
    results["limits"] = a.limits
    print(f"# adapter {runner.info}, limits={a.limits}, timestamps {runner.timestamps}", flush=True)
    results["checks"] = check_kernels(runner, a.kernels, a.d)
    print(f"# {len(results['checks'])} backward checks passed against float64 (N = {CHECK_N})", flush=True)

    if not a.no_torch:
        for heads in a.heads:
            for n in a.n:
                for d in a.d:
                    for cm in a.causal:
                        causal = cm == "causal"
                        try:
                            t = time_torch_backward(n, d, heads, causal)
                        except Exception as e:  # OOM or a backend refusing fp32
                            t = {"error": repr(e)}
                        if t is None:
                            break
                        t.update({"n": n, "d": d, "heads": heads, "causal": causal})
                        if "medianMs" in t:
                            t["gflops"] = backward_gflops(n, d, heads, causal) / (t["medianMs"] * 1e6)
                        results["torch"].append(t)
                        print(json.dumps({k: v for k, v in t.items() if k != "samples"}), flush=True)

    for heads in a.heads:
        for n in a.n:
            for d in a.d:
                for cm in a.causal:
                    causal = cm == "causal"
                    for kern in list(a.kernels) + list(a.forward):
                        fwd = MANIFEST["kernels"][kern].get("direction", "forward") == "forward"
                        row = {"kernel": kern, "direction": "forward" if fwd else "backward",
                               "n": n, "d": d, "heads": heads, "causal": causal}
                        if fwd:
                            row["shader"] = runner.shader(kern, d)
                        if time.perf_counter() - t_start > a.budget_s:
                            row["skipped"] = "time budget of the run spent"
                        else:
                            try:
                                r = runner.time(kern, n, d, heads, causal, max_run_ms=a.max_run_s * 1e3,
                                                max_config_ms=a.max_config_s * 1e3)
                                row.update(r)
                                flop = gflops(n, d, heads, causal) if fwd else backward_gflops(n, d, heads, causal)
                                row["gflops"] = flop / (r["medianMs"] * 1e6)
                                row["bytes"] = traffic_bytes(kern, n, d, causal, heads)
                                row["gbps"] = row["bytes"] / (r["medianMs"] * 1e6)
                            except KernelError as e:
                                row["refused"] = str(e)
                            except TooSlow as e:
                                row["skipped"] = str(e)
                        results["rows"].append(row)
                        print(json.dumps({k: v for k, v in row.items() if k != "samples"}), flush=True)
    results["elapsed_s"] = time.perf_counter() - t_start
    results["summary"] = summary(results)
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps(results, indent=1))
    print(results["summary"])
    print(f"# wrote {a.json}")


def _rate(x: float) -> str:
    """GFLOP/s for a table: whole numbers from 100, three significant digits below."""
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def summary(results) -> str:
    """Markdown: per (heads, N, d, mask), each backward kernel's ms and GFLOP/s, its
    throughput as a share of SDPA backward's, and its time over our fastest forward's."""
    timed = [r for r in results["rows"] if "medianMs" in r]
    sdpa = {(t["heads"], t["n"], t["d"], t["causal"]): t for t in results["torch"] if "medianMs" in t}
    keys = sorted({(r["heads"], r["n"], r["d"], r["causal"]) for r in timed})
    lines = ["| heads | N | d | mask | kernel | median ms | GFLOP/s (backward = 2.5 x forward FLOP) "
             "| vs SDPA bwd fp32 | bwd / our fastest fwd time |",
             "|---:|---:|---:|---|---|---:|---:|---:|---:|"]
    for key in keys:
        heads, n, d, causal = key
        fwd = [r for r in timed if r["direction"] == "forward" and (r["heads"], r["n"], r["d"], r["causal"]) == key]
        best = min(fwd, key=lambda r: r["medianMs"]) if fwd else None
        ref = sdpa.get(key)
        mask = "causal" if causal else "full"
        for r in timed:
            if r["direction"] != "backward" or (r["heads"], r["n"], r["d"], r["causal"]) != key:
                continue
            share = f"{r['gflops'] / ref['gflops']:.0%}" if ref else "—"
            ratio = f"{r['medianMs'] / best['medianMs']:.2f}x ({best['kernel']})" if best else "—"
            lines.append(f"| {heads} | {n:,} | {d} | {mask} | {r['kernel']} | {r['medianMs']:.3f} | "
                         f"{_rate(r['gflops'])} | {share} | {ratio} |")
        if ref:
            lines.append(f"| {heads} | {n:,} | {d} | {mask} | SDPA backward fp32 ({ref['backend']}) | "
                         f"{ref['medianMs']:.3f} | {_rate(ref['gflops'])} | 100% | |")
        for r in fwd:
            lines.append(f"| {heads} | {n:,} | {d} | {mask} | forward {r['kernel']} ({r.get('shader', '')}) | "
                         f"{r['medianMs']:.3f} | {_rate(r['gflops'])} (4 N² d) | | |")
    not_run = [r for r in results["rows"] if "medianMs" not in r]
    for r in not_run:
        why = r.get("refused") or r.get("skipped")
        lines.append(f"| {r['heads']} | {r['n']:,} | {r['d']} | {'causal' if r['causal'] else 'full'} | "
                     f"{r['kernel']} | not run: {why} | | | |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
