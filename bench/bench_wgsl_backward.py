"""Native benchmark of the WGSL backward kernels (wgpu-py), beside PyTorch SDPA's backward.

Usage (the issue's configuration: 32 heads, N = 4,096, d = 64 and 128, float32):

    python -m bench.bench_wgsl_backward [--n 4096] [--d 64 128] [--heads 32]
        [--causal full causal] [--kernels fused-backward plain-backward]
        [--forward fused fused-fast] [--no-torch] [--budget-s 480] [--passes] [--ceilings]
        [--repeat 1] [--json bench/results/wgsl-backward.json]
        [--summary bench/results/wgsl-backward.json]

Order (as bench/bench_wgsl.py): every backward kernel and d is first checked on this very
device against the exact float64 gradients (emulator.backward.reference, each entry of dQ,
dK, dV within emulator.backward.bounds; N = 77, ragged, full and causal, O and L from the
emulator's float32 forward); the run stops if one fails. Only then is anything timed.

What is timed: the backward passes alone, every pass the manifest lists for the kernel
(fused-backward: D, then dK and dV per key tile, then dQ per query tile; plain-backward:
its seven passes through global memory), on inputs Q, K, V, O, dO random and L a stand-in
logsumexp (cannery_host.wgpu_runner.timing_lse; no pass's work depends on the values). Beside it,
our forward kernels (``--forward``) at the same sizes, for backward ÷ forward time, and
PyTorch's ``scaled_dot_product_attention`` backward in float32 with TF32 off, timed as
``torch.autograd.grad`` of its output (forward run once, outside the timing).

FLOP convention (FlashAttention-2, arXiv:2307.08691, section 4.1): forward 4 N² d per head,
backward 2.5 times that, 10 N² d; causal counts half of each. GFLOP/s = FLOP / median time.
GB/s uses the emulator's byte count (emulator.traffic.count) times heads.

Timing: cannery_host.wgpu_runner.Runner.time (warm-up, samples of at least 10 ms of GPU work, at
least 5 samples where the budget allows, median; timestamp queries when available).
SDPA: CUDA events, the same sample rule. ``--repeat R`` times every kernel of a configuration
R times, interleaved (kernel a, b, c, a, b, c, ...), so that a load that comes and goes on a
shared machine falls on all of them; the row's median and range are over all its samples.

``--passes`` also times each pass of a multi-pass kernel alone (the same dispatches with the
other passes left out; their buffers hold what the setup left, the work does not depend on
it), with the bytes that pass moves (emulator.traffic's per-pass count) and GB/s.
FLOP of a pass alone (2 a multiply-add, per head, causal half): a matrix pass 2 N² d per
matrix product it forms (plain's scores, dp and dq one, its dkv two; the fused dkv pass four,
S, dP, dV and dK; the fused dq pass three, S, dP and dQ), the elementwise passes 2 per score
(softmax: subtract, exp; ds: subtract, multiply), the D pass 2 N d.

``--ceilings`` measures the copy bandwidth the passes are held to with the roofline's copy
probe (cannery_host/probes.py, probes/copy.wgsl: the one copy ceiling the lab's roofline and
bench.bench_roofline use), bytes read plus written; and, with PyTorch and CUDA, records
bench.bench_wgsl's device-to-device copy and float32 matrix product beside it.

On a CPU adapter (lavapipe, SwiftShader) the tables add each row's CPU time per run
(Runner.time's "cpuMedianMs": this process's CPU time, whose threads include the adapter's
workers): on a machine shared with other work the wall-clock samples wait for the CPU, the
CPU time does not, so it is the fairer figure for comparing kernels of one run there.

``--summary FILE`` prints the tables of a saved run.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from cannery_host.wgpu_runner import (
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


def pass_traffic(kernel, n, d, causal, heads) -> dict:
    """Bytes each pass of ``kernel`` moves, {pass name: bytes}, for ``heads`` heads."""
    from emulator.traffic import count
    return {name: b * heads for name, b in count(kernel, n, d, causal).per_pass.items()}


#: Matrix products (2 N² d FLOP each) a pass forms, by pass name; plain's and fused's differ.
MATMULS = {"plain": {"scores": 1, "dp": 1, "dq": 1, "dkv": 2}, "fused": {"dkv": 4, "dq": 3}}
ELEMENTWISE_FLOP = {"softmax": 2, "ds": 2}  # per score


def pass_flop(kernel, pass_name, n, d, heads, causal) -> float:
    """FLOP of one backward pass alone (see the module's convention)."""
    from planner import writes_scores

    kind = "plain" if writes_scores(kernel) else "fused"
    if pass_name == "preprocess":
        return 2.0 * n * d * heads
    if pass_name in ELEMENTWISE_FLOP:
        f = ELEMENTWISE_FLOP[pass_name] * n * n
    else:
        f = MATMULS[kind][pass_name] * 2.0 * n * n * d
    return f * heads / (2 if causal else 1)


def copy_ceiling(runner: Runner) -> dict:
    """The copy ceiling on ``runner``'s device, measured one way everywhere: the roofline's
    copy probe (cannery_host.probes.measure_copy, probes/copy.wgsl, planned by
    planner.probe_plan from the device's limits), bytes read plus written per
    second. Returns {"copy_gbps", "copy_ms", "copy_bytes", "samples", "reps", "method",
    "shader"}."""
    import planner
    from cannery_host import probes

    plan = planner.probe_plan(runner.limits)
    c = probes.measure_copy(runner, plan, time.perf_counter() + plan["budget_ms"] / 2e3)
    return {"copy_gbps": c["bytes_per_second"] / 1e9, "copy_ms": c["ms_per_run"], "copy_bytes": c["bytes_per_run"],
            "samples": c["samples"], "reps": c["reps"], "method": c["method"],
            "shader": "probes/copy.wgsl, the roofline's copy probe"}


def _timed(runner, kern, n, d, heads, causal, a, passes=None) -> dict:
    """One Runner.time call with the bench's budget rules; a row's timing fields or why not."""
    try:
        return runner.time(kern, n, d, heads, causal, max_run_ms=a.max_run_s * 1e3,
                           max_config_ms=a.max_config_s * 1e3, passes=passes)
    except KernelError as e:
        return {"refused": str(e)}
    except TooSlow as e:
        return {"skipped": str(e)}


def _merge(row: dict, timings: list) -> None:
    """Fold repeated timings into ``row``: every sample, their median and range."""
    good = [t for t in timings if "medianMs" in t]
    if not good:
        row.update({k: v for k, v in timings[0].items() if k in ("refused", "skipped")})
        return
    samples = sorted(x for t in good for x in t["samples"])
    cpu = sorted(x for t in good for x in t.get("cpuSamples", []))
    row.update({k: v for k, v in good[0].items() if k not in ("samples", "medianMs", "cpuSamples", "cpuMedianMs")})
    row["samples"] = samples
    row["medianMs"] = samples[len(samples) // 2]
    row["rangeMs"] = [samples[0], samples[-1]]
    row["repeatMedians"] = [t["medianMs"] for t in good]
    if cpu:
        row["cpuSamples"] = cpu
        row["cpuMedianMs"] = cpu[len(cpu) // 2]
        row["cpuRangeMs"] = [cpu[0], cpu[-1]]


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
    ap.add_argument("--no-subgroups", action="store_true", help="open the device without the subgroup feature")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--passes", action="store_true", help="also time each pass of a backward kernel alone")
    ap.add_argument("--ceilings", action="store_true", help="measure the copy bandwidth (WGSL, and PyTorch)")
    ap.add_argument("--repeat", type=int, default=1, help="time each configuration's kernels this often, interleaved")
    ap.add_argument("--budget-s", type=float, default=480.0, help="stop starting new timings after this")
    ap.add_argument("--max-run-s", type=float, default=30.0,
                    help="skip a configuration predicted to take longer a run (the lesson-tiled kernels are slow)")
    ap.add_argument("--max-config-s", type=float, default=10.0, help="take fewer samples past this")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    ap.add_argument("--summary", type=Path, help="print the tables of a saved run and stop")
    a = ap.parse_args(argv)
    if a.summary:
        print(summary(json.loads(a.summary.read_text())))
        return
    t_start = time.perf_counter()
    t0 = time.gmtime()
    results = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", t0), "date": time.strftime("%Y-%m-%d", t0),
               "argv": sys.argv,
               "flop_convention": "forward 4 N^2 d per head, backward 2.5x forward (10 N^2 d); causal half",
               "rows": [], "torch": [], "checks": []}
    runner = Runner(limits=a.limits, subgroups=not a.no_subgroups)
    results["adapter"] = runner.info
    # A CPU adapter runs its workers in this process: its CPU time per run is the work done.
    results["cpu_adapter"] = any(x in runner.info["device"].lower() for x in ("llvmpipe", "swiftshader"))
    results["limits"] = a.limits
    results["subgroup_min"] = runner.subgroup_min
    print(f"# adapter {runner.info}, limits={a.limits}, timestamps {runner.timestamps}, "
          f"subgroups {runner.subgroup_min}", flush=True)
    results["checks"] = check_kernels(runner, a.kernels, a.d)
    print(f"# {len(results['checks'])} backward checks passed against float64 (N = {CHECK_N})", flush=True)

    if a.ceilings:
        # one copy ceiling, the roofline's probe; PyTorch's figures are kept beside it, for reference
        results["ceilings"] = {"probe": copy_ceiling(runner)}
        try:
            from bench.bench_wgsl import measure_ceilings
            results["ceilings"]["torch"] = measure_ceilings()
        except Exception as e:  # no torch, no CUDA, out of memory
            results["ceilings"]["torch"] = {"error": repr(e)}
        print(json.dumps({"ceilings": {k: {x: y for x, y in (v or {}).items() if x != "samples"}
                                       for k, v in results["ceilings"].items()}}), flush=True)

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

    # Every size with the first mask before any with the next (full attention first), so that a
    # budget that runs out cuts the later masks.
    for cm in a.causal:
        for heads in a.heads:
            for n in a.n:
                for d in a.d:
                    causal = cm == "causal"
                    kernels = list(a.kernels) + list(a.forward)
                    rows = {}
                    timings = {k: [] for k in kernels}
                    pass_timings = {k: {} for k in kernels}
                    for _ in range(max(1, a.repeat)):
                        for kern in kernels:
                            if time.perf_counter() - t_start > a.budget_s:
                                continue
                            timings[kern].append(_timed(runner, kern, n, d, heads, causal, a))
                            specs = MANIFEST["kernels"][kern]["wgsl"]
                            if a.passes and len(specs) > 1 and "medianMs" in timings[kern][-1]:
                                for pi, spec in enumerate(specs):
                                    pass_timings[kern].setdefault(spec["pass"], []).append(
                                        _timed(runner, kern, n, d, heads, causal, a, passes=(pi,)))
                    for kern in kernels:
                        fwd = MANIFEST["kernels"][kern].get("direction", "forward") == "forward"
                        row = {"kernel": kern, "direction": "forward" if fwd else "backward",
                               "n": n, "d": d, "heads": heads, "causal": causal,
                               "shader": runner.shader(kern, d), "shaders": runner.shaders(kern, d)}
                        if not timings[kern]:
                            row["skipped"] = "time budget of the run spent"
                        else:
                            _merge(row, timings[kern])
                        if "medianMs" in row:
                            flop = gflops(n, d, heads, causal) if fwd else backward_gflops(n, d, heads, causal)
                            row["gflops"] = flop / (row["medianMs"] * 1e6)
                            row["bytes"] = traffic_bytes(kern, n, d, causal, heads)
                            row["gbps"] = row["bytes"] / (row["medianMs"] * 1e6)
                        per_pass = pass_traffic(kern, n, d, causal, heads) if pass_timings[kern] else {}
                        for pi, spec in enumerate(MANIFEST["kernels"][kern]["wgsl"]):
                            if spec["pass"] not in pass_timings[kern]:
                                continue
                            pr = {"pass": spec["pass"], "shader": row["shaders"][pi]}
                            _merge(pr, pass_timings[kern][spec["pass"]])
                            if "medianMs" in pr:
                                pr["bytes"] = per_pass[spec["pass"]]
                                pr["gbps"] = pr["bytes"] / (pr["medianMs"] * 1e6)
                                pr["flop"] = pass_flop(kern, spec["pass"], n, d, heads, causal)
                                pr["gflops"] = pr["flop"] / (pr["medianMs"] * 1e6)
                            row.setdefault("passes", []).append(pr)
                        rows[kern] = row
                        results["rows"].append(row)
                        quiet = ("samples", "cpuSamples", "passes")
                        print(json.dumps({k: v for k, v in row.items() if k not in quiet}), flush=True)
                        for pr in row.get("passes", []):
                            print("  " + json.dumps({k: v for k, v in pr.items() if k not in quiet}), flush=True)
    results["elapsed_s"] = time.perf_counter() - t_start
    results["summary"] = summary(results)
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps(results, indent=1))
    print(results["summary"])
    print(f"# wrote {a.json}")


def _rate(x: float) -> str:
    """GFLOP/s for a table: whole numbers from 100, three significant digits below."""
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def _ms(r, key="medianMs", span="rangeMs") -> str:
    """Median ms, with the samples' range where there is one."""
    lo_hi = r.get(span)
    return f"{r[key]:.3f} ({lo_hi[0]:.3f}–{lo_hi[1]:.3f})" if lo_hi else f"{r[key]:.3f}"


def copy_gbps(results):
    """The copy ceiling of a run, GB/s, and where it came from: the roofline's copy probe
    (copy_ceiling), the one copy ceiling the lab and the benchmarks share; (None, None)
    without --ceilings, or for a run recorded before the probe was used here."""
    c = (results.get("ceilings") or {}).get("probe") or {}
    if "copy_gbps" in c:
        return c["copy_gbps"], "the roofline's copy probe"
    return None, None


def summary(results) -> str:
    """Markdown: per (heads, N, d, mask), each backward kernel's median ms (and range),
    GFLOP/s, bytes and GB/s, its throughput as a share of SDPA backward's, its time over our
    fastest forward's; then each pass timed alone, with GB/s and its share of the copy
    ceiling; then the ratios the issue's goals name."""
    timed = [r for r in results["rows"] if "medianMs" in r]
    sdpa = {(t["heads"], t["n"], t["d"], t["causal"]): t for t in results["torch"] if "medianMs" in t}
    keys = sorted({(r["heads"], r["n"], r["d"], r["causal"]) for r in timed})
    ceiling, ceiling_label = copy_gbps(results)
    cpu = bool(results.get("cpu_adapter"))
    cpu_head = " CPU ms (range) |" if cpu else ""
    lines = ["| heads | N | d | mask | kernel | median ms (range) |" + cpu_head + " GFLOP/s (backward = 2.5 x "
             "forward FLOP) | bytes counted | GB/s | vs SDPA bwd fp32 | bwd / our fastest fwd time |",
             "|---:|---:|---:|---|---|---:|" + ("---:|" if cpu else "") + "---:|---:|---:|---:|---:|"]

    def cpu_cell(r):
        return f" {_ms(r, 'cpuMedianMs', 'cpuRangeMs')} |" if cpu and "cpuMedianMs" in r else (" |" if cpu else "")
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
            lines.append(f"| {heads} | {n:,} | {d} | {mask} | {r['kernel']} | {_ms(r)} |{cpu_cell(r)} "
                         f"{_rate(r['gflops'])} | {r['bytes']:,} | {_rate(r['gbps'])} | {share} | {ratio} |")
        if ref:
            lines.append(f"| {heads} | {n:,} | {d} | {mask} | SDPA backward fp32 ({ref['backend']}, "
                         f"{ref.get('grad_fn', '')}) | {ref['medianMs']:.3f} |{' |' if cpu else ''} "
                         f"{_rate(ref['gflops'])} | | | 100% | |")
        for r in fwd:
            lines.append(f"| {heads} | {n:,} | {d} | {mask} | forward {r['kernel']} ({r.get('shader', '')}) | "
                         f"{_ms(r)} |{cpu_cell(r)} {_rate(r['gflops'])} (4 N² d) | {r['bytes']:,} | "
                         f"{_rate(r['gbps'])} | | |")
    not_run = [r for r in results["rows"] if "medianMs" not in r]
    for r in not_run:
        why = r.get("refused") or r.get("skipped")
        lines.append(f"| {r['heads']} | {r['n']:,} | {r['d']} | {'causal' if r['causal'] else 'full'} | "
                     f"{r['kernel']} | not run: {why} |{' |' if cpu else ''} | | | | |")
    passes = [(r, pr) for r in timed for pr in r.get("passes", []) if "medianMs" in pr]
    if passes:
        head = f"share of the copy ceiling ({ceiling_label}, {ceiling:,.1f} GB/s)" if ceiling else "share of copy"
        lines += ["", "Each pass alone:", "",
                  f"| heads | N | d | mask | kernel | pass | shader | median ms (range) |{cpu_head} bytes | GB/s "
                  f"| {head} | GFLOP/s |", "|---:|---:|---:|---|---|---|---|---:|" + ("---:|" if cpu else "")
                  + "---:|---:|---:|---:|"]
        for r, pr in passes:
            share = f"{pr['gbps'] / ceiling:.0%}" if ceiling else "—"
            lines.append(f"| {r['heads']} | {r['n']:,} | {r['d']} | {'causal' if r['causal'] else 'full'} | "
                         f"{r['kernel']} | {pr['pass']} | {pr['shader']} | {_ms(pr)} |{cpu_cell(pr)} {pr['bytes']:,} | "
                         f"{_rate(pr['gbps'])} | {share} | {_rate(pr['gflops'])} |")
    goals = []
    for key in keys:
        heads, n, d, causal = key
        here = {r["kernel"]: r for r in timed if (r["heads"], r["n"], r["d"], r["causal"]) == key}
        fwd = [r for r in here.values() if r["direction"] == "forward"]
        best = min(fwd, key=lambda r: r["medianMs"]) if fwd else None
        ref = sdpa.get(key)
        for fast, plain in (("fused-backward-fast", "plain-backward-fast"), ("fused-backward-fast", "plain-backward"),
                            ("fused-backward", "plain-backward")):
            if fast in here and plain in here:
                cells = [f"{here[plain]['medianMs'] / here[fast]['medianMs']:.2f}x"]
                cells.append(f"{here[fast]['medianMs'] / best['medianMs']:.2f}x ({best['kernel']})" if best else "—")
                if cpu:
                    bc = min(fwd, key=lambda r: r["cpuMedianMs"]) if fwd else None
                    cells.append(f"{here[plain]['cpuMedianMs'] / here[fast]['cpuMedianMs']:.2f}x")
                    cells.append(f"{here[fast]['cpuMedianMs'] / bc['cpuMedianMs']:.2f}x ({bc['kernel']})"
                                 if bc else "—")
                cells.append(f"{ref['medianMs'] / here[fast]['medianMs']:.0%}" if ref else "—")
                goals.append(f"| {heads} | {n:,} | {d} | {'causal' if causal else 'full'} | {fast} | {plain} | "
                             + " | ".join(cells) + " |")
    if goals:
        cpu_cols = " plain ÷ fused (CPU time) | fused ÷ our fastest forward (CPU time) |" if cpu else ""
        lines += ["", "| heads | N | d | mask | fused | plain | plain ÷ fused (time) | fused ÷ our fastest forward "
                  "(time) |" + cpu_cols + " fused ÷ SDPA backward (speed) |",
                  "|---:|---:|---:|---|---|---|---:|---:|" + ("---:|---:|" if cpu else "") + "---:|"] + goals
    if ceiling:
        measured = [f"{c['copy_gbps']:,.1f} GB/s over {c['copy_bytes'] // 2:,} B ({key})"
                    for key, c in (results.get("ceilings") or {}).items() if c and "copy_gbps" in c]
        lines += ["", f"Copy ceiling: {ceiling:,.1f} GB/s ({ceiling_label}, bytes read plus written); "
                  f"measured: {'; '.join(measured)}."]
    if cpu:
        lines += ["", "CPU ms: this process's CPU time per run (the adapter's worker threads run in it), "
                  "the work a kernel took whatever else shares the machine."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
