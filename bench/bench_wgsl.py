"""Native benchmark of the WGSL attention kernels (wgpu-py), with PyTorch SDPA as reference.

Usage (the figures in docs/BENCHMARKS.md came from the command written there):

    python -m bench.bench_wgsl [--n 1024 4096 16384] [--d 16 64 128] [--heads 1 32]
        [--kernels plain fused fused-fast] [--limits default max] [--budget-s 480]
        [--fallback-n 4096] [--json out.json] [--md out.md]

Where the device has subgroups, a kernel with a ``with_subgroups`` shader in the manifest
runs that shader (each row records which: "shader"). ``--fallback-n`` also times those
kernels at those N on a device opened without subgroups (rows with "subgroups": false),
the shaders a browser without the feature runs.

Order (llm.c's dev/cuda): the float64 reference, the kernels, a check of every kernel
and head dimension against the reference on this very device, and only then timing.

FLOP convention: 4 N^2 d per head for full attention (QK^T and PV, 2 FLOP a
multiply-add); causal counts half of that, 2 N^2 d. GFLOP/s = that / median time.
GB/s uses the emulator's byte count for the lesson kernels (one head times heads).

Timing: see cannery_host.wgsl.Runner.time (warm-up, samples of >= 10 ms of GPU work,
>= 5 samples where the budget allows, median; timestamp queries when available).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from cannery_host.wgsl import MANIFEST, KernelError, Runner, TooSlow, gflops

ROOT = Path(__file__).resolve().parent.parent


def reference(Q, K, V, causal):
    """float64 attention on the CPU: (H, N, d) -> (H, N, d)."""
    Q, K, V = (np.asarray(x, np.float64) for x in (Q, K, V))
    n, d = Q.shape[-2:]
    S = Q @ np.swapaxes(K, -1, -2) / math.sqrt(d)
    if causal:
        S = np.where(np.tril(np.ones((n, n), bool)), S, -np.inf)
    S -= S.max(-1, keepdims=True)
    P = np.exp(S)
    P /= P.sum(-1, keepdims=True)
    return P @ V


def check_all(runner: Runner, kernels, ds) -> list:
    """Every kernel and d at N = 300 (ragged), full and causal, 2 heads: max |O - ref|."""
    rng = np.random.default_rng(7)
    rows = []
    for d in ds:
        Q, K, V = (rng.standard_normal((2, 300, d)).astype(np.float32) for _ in range(3))
        for causal in (False, True):
            ref = reference(Q, K, V, causal)
            for kern in kernels:
                try:
                    O, _ = runner.run(kern, Q, K, V, causal)
                except KernelError:
                    continue  # does not fit at these limits; checked where it runs
                err = float(np.abs(O - ref).max())
                ok = bool(np.isfinite(O).all() and err < 1e-4)
                rows.append({"kernel": kern, "d": d, "causal": causal, "max_abs_error": err, "ok": ok,
                             "shader": runner.shader(kern, d), "subgroups": runner.subgroup_min > 0})
                if not ok:
                    raise SystemExit(f"check failed: {kern} d={d} causal={causal}: max error {err}")
    return rows


def traffic_bytes(kernel, n, d, causal, heads):
    """Emulator's global-memory bytes for one run (every kernel of the manifest)."""
    from emulator.traffic import count
    return count(kernel, n, d, causal).total_bytes * heads


def time_torch(n, d, heads, causal, min_sample_ms=10.0, samples=5):
    """PyTorch scaled_dot_product_attention, float32, CUDA events; None without CUDA."""
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
    q, k, v = (torch.randn(1, heads, n, d, device="cuda", dtype=torch.float32, generator=g) for _ in range(3))
    f = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # noqa: E731
    f()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); f(); e.record(); torch.cuda.synchronize()
    one = max(s.elapsed_time(e), 1e-3)
    reps = max(1, math.ceil(min_sample_ms / one))
    out = []
    for _ in range(samples):
        s.record()
        for _ in range(reps):
            f()
        e.record()
        torch.cuda.synchronize()
        out.append(s.elapsed_time(e) / reps)
    out.sort()
    return {"medianMs": out[len(out) // 2], "samples": out, "method": "cuda-events",
            "backend": torch.__version__, "device": torch.cuda.get_device_name()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1024, 4096, 16384])
    ap.add_argument("--d", type=int, nargs="+", default=[16, 64, 128])
    ap.add_argument("--heads", type=int, nargs="+", default=[1, 32])
    ap.add_argument("--kernels", nargs="+", default=[k for k, e in MANIFEST["kernels"].items()
                             if k != "fused-no-rescale" and e["wgsl"] and e.get("direction", "forward") == "forward"])
    ap.add_argument("--limits", nargs="+", default=["default", "max"])
    ap.add_argument("--causal", nargs="+", default=["full", "causal"])
    ap.add_argument("--budget-s", type=float, default=480.0, help="stop starting new timings after this")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--max-run-s", type=float, default=8.0, help="skip a configuration predicted to take longer a run")
    ap.add_argument("--max-config-s", type=float, default=10.0, help="take fewer samples past this")
    ap.add_argument("--fallback-n", type=int, nargs="*", default=[],
                    help="also time kernels that have a subgroup shader without subgroups, at these N")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--summary", type=Path, help="print the side-by-side table of a saved --json run and exit")
    ap.add_argument("--md", type=Path)
    a = ap.parse_args(argv)
    if a.summary:
        print(summary(json.loads(a.summary.read_text())))
        return
    t_start = time.perf_counter()
    results = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "argv": sys.argv,
               "rows": [], "checks": {}, "torch": []}
    if not a.no_torch:
        for heads in a.heads:
            for n in a.n:
                for d in a.d:
                    for cm in a.causal:
                        try:
                            t = time_torch(n, d, heads, cm == "causal")
                        except Exception as e:  # OOM or a backend refusing fp32
                            t = {"error": repr(e)}
                        if t is None:
                            break
                        t.update({"n": n, "d": d, "heads": heads, "causal": cm == "causal"})
                        if "medianMs" in t:
                            t["gflops"] = gflops(n, d, heads, t["causal"]) / (t["medianMs"] * 1e6)
                        results["torch"].append(t)
                        print(json.dumps({k: v for k, v in t.items() if k != "samples"}), flush=True)
    default_refused = set()
    for mode in a.limits:
        runner = Runner(limits=mode)
        time_rows(a, runner, mode, results, default_refused, t_start, a.n, a.kernels)
        del runner
        if a.fallback_n:
            alt = [k for k in a.kernels if MANIFEST["kernels"][k]["wgsl"][0].get("with_subgroups")]
            runner = Runner(limits=mode, subgroups=False)
            time_rows(a, runner, mode, results, default_refused, t_start, a.fallback_n, alt,
                      fallback=lambda k, d: str(d) in MANIFEST["kernels"][k]["wgsl"][0]["with_subgroups"]["file_by_d"])
            del runner
    results["elapsed_s"] = time.perf_counter() - t_start
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))
    table = markdown(results)
    if a.md:
        a.md.write_text(table)
    print(table)


def time_rows(a, runner, mode, results, default_refused, t_start, ns, kernels, fallback=None):
    """Check, then time, every (heads, N, d, mask, kernel) on one device; rows into results.

    ``fallback(kernel, d)``, given for a device opened without subgroups, picks the
    configurations whose subgroup shader this run stands in for; their rows get
    "fallback": true and stay out of ``summary``'s main table.
    """
    sg = runner.subgroup_min > 0
    results.setdefault("adapter", runner.info)
    results.setdefault("limits", {})[mode] = {"max-storage-buffer-binding-size": runner.max_binding,
                                               "max-buffer-size": runner.max_buffer,
                                               "timestamps": runner.timestamps}
    print(f"# limits={mode}: binding {runner.max_binding:,} B, buffer {runner.max_buffer:,} B, "
          f"timestamps {runner.timestamps}, subgroups {sg} (min size {runner.subgroup_min}), "
          f"adapter {runner.info}", flush=True)
    checks = check_all(runner, kernels, a.d)
    results["checks"][mode if sg else mode + " (no subgroups)"] = checks
    print(f"# limits={mode}: {len(checks)} checks passed (N=300, 2 heads, each kernel and d that fits, "
          f"full and causal; max |O - ref| {max([c['max_abs_error'] for c in checks] or [0]):.2e})", flush=True)
    for heads in a.heads:
        for n in ns:
            for d in a.d:
                for cm in a.causal:
                    causal = cm == "causal"
                    for kern in kernels:
                        if fallback and not fallback(kern, d):
                            continue
                        key = (kern, n, d, heads, causal, sg)
                        # At the adapter's maximums, run only what default limits refused
                        # (the same kernel at the same size runs the same code either way).
                        if mode != a.limits[0] and key not in default_refused:
                            continue
                        row = {"limits": mode, "kernel": kern, "n": n, "d": d, "heads": heads, "causal": causal,
                               "subgroups": sg, "shader": runner.shader(kern, d)}
                        if fallback:
                            row["fallback"] = True
                        if time.perf_counter() - t_start > a.budget_s:
                            row["skipped"] = "time budget of the run spent"
                        else:
                            try:
                                r = runner.time(kern, n, d, heads, causal, max_run_ms=a.max_run_s * 1e3,
                                                max_config_ms=a.max_config_s * 1e3)
                                row.update(r)
                                row["gflops"] = gflops(n, d, heads, causal) / (r["medianMs"] * 1e6)
                                tb = traffic_bytes(kern, n, d, causal, heads)
                                if tb:
                                    row["bytes"] = tb
                                    row["gbps"] = tb / (r["medianMs"] * 1e6)
                            except KernelError as e:
                                row["refused"] = str(e)
                                default_refused.add(key)
                            except TooSlow as e:
                                row["skipped"] = str(e)
                        results["rows"].append(row)
                        print(json.dumps({k: v for k, v in row.items() if k != "samples"}), flush=True)


def summary(results, kernels=("plain", "fused", "fused-fast-16k", "fused-fast")) -> str:
    """Side-by-side table: GFLOP/s (median ms) per kernel and PyTorch SDPA fp32.

    Each cell takes the row from the first limits mode that ran it (a * marks a run
    possible only at the adapter's maximums); "—" is refused or skipped (see the full table).
    """
    first = results["argv"][results["argv"].index("--limits") + 1] if "--limits" in results["argv"] else "default"
    got = {}
    for r in results["rows"]:
        if r.get("fallback"):
            continue
        key = (r["kernel"], r["n"], r["d"], r["heads"], r["causal"])
        if "medianMs" in r and key not in got:
            got[key] = r
    sdpa = {(t["n"], t["d"], t["heads"], t["causal"]): t for t in results.get("torch", []) if "medianMs" in t}

    def cell(r):
        if r is None:
            return "—"
        ms = r["medianMs"]
        star = "*" if r.get("limits") not in (None, first) else ""
        return f"{r['gflops']:,.0f} ({ms:.3g} ms){star}"

    head = "| heads | N | d | mask | " + " | ".join(kernels) + " | SDPA fp32 |"
    lines = [head, "|" + "---:|" * 3 + "---|" + "---:|" * (len(kernels) + 1)]
    keys = sorted({k[1:] for k in got} | set(sdpa), key=lambda k: (k[2], k[0], k[1], k[3]))
    for n, d, heads, causal in keys:
        cells = [cell(got.get((k, n, d, heads, causal))) for k in kernels]
        cells.append(cell(sdpa.get((n, d, heads, causal))))
        lines.append(f"| {heads} | {n:,} | {d} | {'causal' if causal else 'full'} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n" + fallback_table(results)


def fallback_table(results) -> str:
    """Kernels with a subgroup shader: with subgroups beside without ("" if none ran)."""
    alt = {(r["kernel"], r["n"], r["d"], r["heads"], r["causal"]): r for r in results["rows"]
           if r.get("fallback") and "medianMs" in r}
    if not alt:
        return ""
    main = {(r["kernel"], r["n"], r["d"], r["heads"], r["causal"]): r for r in results["rows"]
            if not r.get("fallback") and "medianMs" in r}
    lines = ["", "| kernel | heads | N | d | mask | with subgroups | without subgroups | ratio |",
             "|---|---:|---:|---:|---|---|---|---:|"]
    for key, b in sorted(alt.items(), key=lambda kv: (kv[0][2], kv[0][0], kv[0][3], kv[0][1], kv[0][4])):
        a_ = main.get(key)
        if a_ is None:
            continue
        k, n, d, heads, causal = key
        lines.append(f"| {k} | {heads} | {n:,} | {d} | {'causal' if causal else 'full'} | "
                     f"{a_['gflops']:,.0f} ({a_['medianMs']:.3g} ms, {a_.get('shader', '?')}) | "
                     f"{b['gflops']:,.0f} ({b['medianMs']:.3g} ms, {b.get('shader', '?')}) | "
                     f"{b['medianMs'] / a_['medianMs']:.2f}× |")
    return "\n".join(lines) + "\n"


def markdown(results) -> str:
    """One table: rows (N, d, heads, causal), columns per kernel and limits mode, GFLOP/s."""
    lines = ["| limits | heads | N | d | mask | kernel (shader) | median ms | GFLOP/s | GB/s (emulator bytes) | samples | method |",
             "|---|---:|---:|---:|---|---|---:|---:|---:|---:|---|"]
    for r in results["rows"]:
        mask = "causal" if r["causal"] else "full"
        shader = f" ({r['shader']}{', no subgroups' if r.get('fallback') else ''})" if "shader" in r else ""
        head = f"| {r['limits']} | {r['heads']} | {r['n']:,} | {r['d']} | {mask} | {r['kernel']}{shader} |"
        if "refused" in r:
            lines.append(head + f" refused: {r['refused']} | | | | |")
        elif "skipped" in r:
            lines.append(head + f" skipped: {r['skipped']} | | | | |")
        else:
            gb = f"{r['gbps']:.0f}" if "gbps" in r else ""
            lines.append(head + f" {r['medianMs']:.3f} | {r['gflops']:.0f} | {gb} | {len(r['samples'])}×{r['reps']} | {r['method']} |")
    if results.get("torch"):
        lines += ["", "| PyTorch SDPA fp32 | heads | N | d | mask | median ms | GFLOP/s |", "|---|---:|---:|---:|---|---:|---:|"]
        for t in results["torch"]:
            mask = "causal" if t["causal"] else "full"
            if "medianMs" in t:
                lines.append(f"| {t.get('backend', '')} | {t['heads']} | {t['n']:,} | {t['d']} | {mask} | {t['medianMs']:.3f} | {t['gflops']:.0f} |")
            else:
                lines.append(f"| error | {t['heads']} | {t['n']:,} | {t['d']} | {mask} | {t.get('error', '')} | |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
