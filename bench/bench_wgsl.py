"""Native benchmark of the WGSL attention kernels (wgpu-py), with PyTorch SDPA as reference.

Usage (the figures in docs/BENCHMARKS.md came from the command written there):

    python -m bench.bench_wgsl [--n 1024 4096 16384] [--d 16 64 128] [--heads 1 32]
        [--kernels plain fused fused-fast] [--limits default max] [--budget-s 480]
        [--fallback-n 4096] [--passes] [--ceilings] [--json out.json] [--md out.md]
        [--roofline docs/roofline.svg]
    python -m bench.bench_wgsl --summary bench/results/h200.json [--roofline docs/roofline.svg]

Where the device has subgroups, a kernel with a ``with_subgroups`` shader in the manifest
runs that shader (each row records which: "shader"). ``--fallback-n`` also times those
kernels at those N on a device opened without subgroups (rows with "subgroups": false),
the shaders a browser without the feature runs.

Order (llm.c's dev/cuda): the float64 reference, the kernels, a check of every kernel
and head dimension against the reference on this very device, and only then timing.

FLOP convention: 4 N^2 d per head for full attention (QK^T and PV, 2 FLOP a
multiply-add); causal counts half of that, 2 N^2 d. GFLOP/s = that / median time.
Timed alone (``--passes``), plain's scores and P V passes count 2 N^2 d each, and its
softmax 5 FLOP per score (max, subtract, exp, add, multiply). Bytes are the emulator's
count for the kernel's tiles (or the pass's share of it), one head times heads; for
SDPA, the least any kernel must move: Q, K, V read and O written once (4 N d floats).
Arithmetic intensity = FLOP / bytes. ``--ceilings`` measures the card's copy bandwidth
(a device-to-device copy through PyTorch, bytes read plus written) and PyTorch's float32
matrix product (TF32 off), the two roofs of ``--roofline``, and the WGSL roofline probes
(bench.bench_roofline's copy and FMA kernels) on the same device. For each multi-pass
forward kernel besides the lesson's plain (plain-reg), the summary then holds its softmax
pass against both copy bandwidths and its scores and P V passes against fused-reg's and the
fastest fused kernel's GFLOP/s.

Timing: see cannery_host.wgpu_runner.Runner.time (warm-up, samples of >= 10 ms of GPU work,
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

from cannery_host.wgpu_runner import MANIFEST, KernelError, Runner, TooSlow, gflops
from emulator.traffic import SOFTMAX_FLOP_PER_SCORE

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



def pass_bytes(kernel, pass_name, n, d, causal, heads):
    """Bytes one pass of ``kernel`` moves: the emulator's walk of that pass's manifest
    formulas at the kernel's tiles (emulator.traffic.count's per_pass), one head times heads.
    For plain's passes: scores reads Q r d and K kv d and writes S r kv; softmax reads S and
    writes P, r kv each; P V reads P r kv and V kv d and writes O r d."""
    from emulator.traffic import count
    return count(kernel, n, d, causal).per_pass[pass_name] * heads


def pass_flop(pass_name, n, d, heads, causal):
    """FLOP of one pass (see the module's convention)."""
    f = {"scores": 2.0 * n * n * d, "pv": 2.0 * n * n * d, "softmax": SOFTMAX_FLOP_PER_SCORE * n * n}[pass_name]
    return f * heads / (2 if causal else 1)


def rates(row, flop, nbytes):
    """Add bytes, GB/s, GFLOP/s and FLOP/byte to a timed row."""
    ms = row["medianMs"]
    row["flop"] = flop
    row["gflops"] = flop / (ms * 1e6)
    if nbytes:
        row["bytes"] = nbytes
        row["gbps"] = nbytes / (ms * 1e6)
        row["intensity"] = flop / nbytes
    return row


def measure_ceilings():
    """The card's copy bandwidth and float32 matrix rate through PyTorch (CUDA events,
    median of 9 after a warm-up): a 2 GiB device-to-device copy (GB/s counts bytes read
    plus written) and an 8192 x 8192 x 8192 float32 product with TF32 off. None without CUDA."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False

    def med(f, reps=9):
        f()
        torch.cuda.synchronize()
        out = []
        for _ in range(reps):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            f()
            e.record()
            torch.cuda.synchronize()
            out.append(s.elapsed_time(e))
        out.sort()
        return out[len(out) // 2]

    src = torch.empty(2**29, device="cuda", dtype=torch.float32)
    dst = torch.empty_like(src)
    copy_ms = med(lambda: dst.copy_(src))
    src = dst = None  # free 4 GiB before the matrix product
    m = 8192
    x = torch.randn(m, m, device="cuda")
    y = torch.randn(m, m, device="cuda")
    mm_ms = med(lambda: x @ y)
    props = torch.cuda.get_device_properties(0)
    return {"copy_gbps": 2 * 2**31 / (copy_ms * 1e6), "copy_ms": copy_ms, "copy_bytes": 2 * 2**31,
            "sgemm_gflops": 2.0 * m**3 / (mm_ms * 1e6), "sgemm_ms": mm_ms,
            "sm_count": props.multi_processor_count, "device": torch.cuda.get_device_name()}


def measure_probes():
    """The roofline probes of the lab's Time card on this device (bench.bench_roofline's
    measurement, at WebGPU's default limits): {"copy_gbps" (bytes read plus written by
    probes/copy.wgsl), "fma_gflops"}; {"error": ...} where they cannot run."""
    from cannery_host.probes import measure
    try:
        got = measure(Runner(limits="default"))
    except (KernelError, RuntimeError) as e:
        return {"error": repr(e)}
    return {"copy_gbps": got["copy"]["bytes_per_second"] / 1e9, "fma_gflops": got["fma"]["flop_per_second"] / 1e9}


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
    s.record()
    f()
    e.record()
    torch.cuda.synchronize()
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
    ap.add_argument("--passes", action="store_true", help="also time each pass of a multi-pass kernel alone")
    ap.add_argument("--ceilings", action="store_true", help="measure copy bandwidth and fp32 matmul through PyTorch")
    ap.add_argument("--roofline", type=Path, help="write the roofline SVG of the run")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--summary", type=Path, help="print the side-by-side table of a saved --json run and exit")
    ap.add_argument("--md", type=Path)
    a = ap.parse_args(argv)
    if a.summary:
        saved = json.loads(a.summary.read_text())
        print(summary(saved))
        if a.roofline:
            a.roofline.write_text(roofline_svg(saved))
        return
    t_start = time.perf_counter()
    t0 = time.gmtime()
    results = {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", t0), "date": time.strftime("%Y-%m-%d", t0),
               "argv": sys.argv,
               "rows": [], "checks": {}, "torch": []}
    if a.ceilings:
        results["ceilings"] = measure_ceilings()
        print(json.dumps({"ceilings": results["ceilings"]}), flush=True)
        results["probes"] = measure_probes()
        print(json.dumps({"probes": results["probes"]}), flush=True)
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
                            rates(t, gflops(n, d, heads, t["causal"]), 4 * 4 * n * d * heads)
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
    print(summary(results))
    if a.roofline:
        a.roofline.write_text(roofline_svg(results))


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
                                rates(row, gflops(n, d, heads, causal), traffic_bytes(kern, n, d, causal, heads))
                                specs = MANIFEST["kernels"][kern]["wgsl"]
                                if a.passes and len(specs) > 1:
                                    for pi, spec in enumerate(specs):
                                        pr = {k: v for k, v in row.items()
                                              if k in ("limits", "kernel", "n", "d", "heads", "causal", "subgroups")}
                                        pr["pass"] = spec["pass"]
                                        pr["shader"] = spec["file"]
                                        pr.update(runner.time(kern, n, d, heads, causal, passes=(pi,),
                                                              max_run_ms=a.max_run_s * 1e3,
                                                              max_config_ms=a.max_config_s * 1e3))
                                        rates(pr, pass_flop(spec["pass"], n, d, heads, causal),
                                              pass_bytes(kern, spec["pass"], n, d, causal, heads))
                                        row.setdefault("passes", []).append(pr)
                                        print(json.dumps({k: v for k, v in pr.items() if k != "samples"}), flush=True)
                            except KernelError as e:
                                row["refused"] = str(e)
                                default_refused.add(key)
                            except TooSlow as e:
                                row["skipped"] = str(e)
                        results["rows"].append(row)
                        print(json.dumps({k: v for k, v in row.items() if k not in ("samples", "passes")}), flush=True)


LESSON = ("plain", "fused")


def _main_rows(results):
    """First timed row per (kernel, n, d, heads, causal), fallback rows left out."""
    got = {}
    for r in results["rows"]:
        if r.get("fallback"):
            continue
        key = (r["kernel"], r["n"], r["d"], r["heads"], r["causal"])
        if "medianMs" in r and key not in got:
            got[key] = r
    return got


def summary(results) -> str:
    """The doc's tables for a saved run: per kernel (and per pass of plain) the bytes
    counted, median ms, GB/s, GFLOP/s and FLOP per byte beside PyTorch SDPA fp32; then the
    ratios the goals are stated in; then, where run, each subgroup kernel without subgroups.
    A * marks a run possible only at the adapter's maximum limits."""
    first = results["argv"][results["argv"].index("--limits") + 1] if "--limits" in results["argv"] else "default"
    got = _main_rows(results)
    sdpa = {(t["n"], t["d"], t["heads"], t["causal"]): t for t in results.get("torch", []) if "medianMs" in t}
    kernels = [k for k in MANIFEST["kernels"] if any(key[0] == k for key in got)]
    ceil = results.get("ceilings") or {}

    def cells(r, label, shader):
        star = "*" if r.get("limits") not in (None, first) else ""
        nb = f"{r['bytes']:,}" if "bytes" in r else "—"
        gb = f"{r['gbps']:,.0f}" if "gbps" in r else "—"
        ai = f"{r['intensity']:.3g}" if "intensity" in r else "—"
        return (f"| {label}{star} | {shader} | {nb} | {r['medianMs']:.3g} | {gb} | "
                f"{r['gflops']:,.0f} | {ai} |")

    out = []
    keys = sorted({k[1:] for k in got} | set(sdpa), key=lambda k: (k[2], k[0], k[1], k[3]))
    for n, d, heads, causal in keys:
        out += ["", f"{heads} heads, N = {n:,}, d = {d}, {'causal' if causal else 'full'}:", "",
                "| kernel | shader | bytes counted | ms | GB/s | GFLOP/s | FLOP/byte |",
                "|---|---|---:|---:|---:|---:|---:|"]
        for k in kernels:
            r = got.get((k, n, d, heads, causal))
            if r is None:
                continue
            shader = " + ".join(pr["shader"] for pr in r["passes"]) if r.get("passes") else r.get("shader", "")
            out.append(cells(r, k, shader))
            for pr in r.get("passes", []):
                out.append(cells(pr, f"{k}: {pr['pass']} alone", pr.get("shader", "")))
        t = sdpa.get((n, d, heads, causal))
        if t is not None:
            out.append(cells(t, "SDPA fp32 (bytes: Q, K, V, O once)", f"PyTorch {t.get('backend', '')}"))

    out += ["", ("| heads | N | d | mask | plain ÷ fused (time) | fused ÷ SDPA (speed) | fastest fused ÷ SDPA "
                 "| softmax pass ÷ copy bandwidth | scores, P V passes ÷ fused (GFLOP/s) |"),
            "|---:|---:|---:|---|---:|---:|---|---:|---|"]
    for n, d, heads, causal in keys:
        pl, fu = got.get(("plain", n, d, heads, causal)), got.get(("fused", n, d, heads, causal))
        t = sdpa.get((n, d, heads, causal))
        fused_rows = [got[(k, n, d, heads, causal)] for k in kernels
                      if k.startswith("fused") and k != "fused-no-rescale" and (k, n, d, heads, causal) in got]
        best = min(fused_rows, key=lambda r: r["medianMs"]) if fused_rows else None
        c1 = f"{pl['medianMs'] / fu['medianMs']:.2f}×" if pl and fu else "—"
        c2 = f"{100 * t['medianMs'] / fu['medianMs']:.0f}%" if fu and t else "—"
        c3 = f"{100 * t['medianMs'] / best['medianMs']:.0f}% ({best['kernel']})" if best and t else "—"
        passes = {pr["pass"]: pr for pr in (pl or {}).get("passes", [])}
        sm = passes.get("softmax")
        c4 = f"{100 * sm['gbps'] / ceil['copy_gbps']:.0f}%" if sm and ceil.get("copy_gbps") else "—"
        c5 = (", ".join(f"{passes[p]['gflops'] / fu['gflops']:.2f}" for p in ("scores", "pv") if p in passes)
              if fu and passes else "—")
        out.append(f"| {heads} | {n:,} | {d} | {'causal' if causal else 'full'} | {c1} | {c2} | {c3} | {c4} | {c5} |")
    return "\n".join(out[1:]) + "\n" + passes_table(results, got, kernels, keys, ceil) + fallback_table(results)


# The fused kernel a plain kernel's matrix passes are held to: the one with the same register tiling,
# so that a ratio of FLOP rates compares two kernels made with the same care.
REG = "fused-reg"


def passes_table(results, got, kernels, keys, ceil) -> str:
    """Each multi-pass forward kernel but the lesson's plain (which the table above holds),
    where its passes were timed: its softmax pass's GB/s against the copy bandwidth (PyTorch's,
    and the WGSL copy probe's where the run has it: ``probe_copy_gbps``), its scores and P V
    passes' GFLOP/s against fused-reg's and the fastest fused kernel's, and the time of the
    whole kernel against the lesson's plain and the fastest fused. "" if none ran."""
    probe = (results.get("probes") or {}).get("copy_gbps")
    multi = [k for k in kernels if k != LESSON[0] and len(MANIFEST["kernels"][k]["wgsl"]) > 1
             and MANIFEST["kernels"][k].get("direction", "forward") == "forward"]
    lines = []
    for n, d, heads, causal in keys:
        for k in multi:
            r = got.get((k, n, d, heads, causal))
            if not r or not r.get("passes"):
                continue
            passes = {pr["pass"]: pr for pr in r["passes"]}
            reg = got.get((REG, n, d, heads, causal))
            fused_rows = [got[(f, n, d, heads, causal)] for f in kernels
                          if f.startswith("fused") and f != "fused-no-rescale" and (f, n, d, heads, causal) in got]
            best = min(fused_rows, key=lambda x: x["medianMs"]) if fused_rows else None
            pl = got.get((LESSON[0], n, d, heads, causal))
            sm = passes.get("softmax")

            def share(ref, key="gflops", x=None):
                return f"{x[key] / ref:.2f}" if x and ref else "—"

            c_copy = f"{100 * sm['gbps'] / ceil['copy_gbps']:.0f}%" if sm and ceil.get("copy_gbps") else "—"
            c_probe = f"{100 * sm['gbps'] / probe:.0f}%" if sm and probe else "—"
            c_reg = ", ".join(share(reg["gflops"] if reg else None, x=passes.get(p)) for p in ("scores", "pv"))
            c_best = "—"
            if best:
                c_best = ", ".join(share(best["gflops"], x=passes.get(p)) for p in ("scores", "pv"))
                c_best += f" ({best['kernel']})"
            c_plain = f"{pl['medianMs'] / r['medianMs']:.2f}×" if pl else "—"
            c_fused = f"{r['medianMs'] / best['medianMs']:.2f}× ({best['kernel']})" if best else "—"
            lines.append(f"| {k} | {heads} | {n:,} | {d} | {'causal' if causal else 'full'} | {c_copy} | {c_probe} | "
                         f"{c_reg} | {c_best} | {c_plain} | {c_fused} |")
    if not lines:
        return ""
    return "\n".join(["", "| kernel | heads | N | d | mask | softmax pass ÷ copy (PyTorch) | softmax pass ÷ copy "
                       f"(WGSL probe) | scores, P V passes ÷ {REG} (GFLOP/s) | scores, P V passes ÷ fastest fused "
                       "(GFLOP/s) | lesson's plain ÷ it (time) | it ÷ fastest fused (time) |",
                       "|---|---:|---:|---:|---|---:|---:|---|---|---:|---|", *lines]) + "\n"


def roofline_svg(results, heads=None, n=None) -> str:
    """A log-log roofline (GFLOP/s against FLOP per byte) of one run as an SVG string:
    the measured copy bandwidth and two compute roofs (the fp32 datasheet peak, 132 SMs x
    128 lanes x 2 FLOP x 1.98 GHz = 66.9 TFLOP/s, and PyTorch's measured fp32 matrix
    product), and a point per kernel, plain pass and SDPA at the run's largest head count
    and first N, full attention."""
    ceil = results.get("ceilings") or {}
    bw, mm = ceil.get("copy_gbps", 4220.0), ceil.get("sgemm_gflops")
    peak = 132 * 128 * 2 * 1.98  # GFLOP/s, NVIDIA H200 SXM: SMs x fp32 lanes x FMA x boost GHz
    got = _main_rows(results)
    heads = heads or max(k[3] for k in got)
    n = n or min(k[1] for k in got if k[3] == heads)
    pts = []
    for (k, nn, d, hh, causal), r in got.items():
        if nn != n or hh != heads or causal:
            continue
        if "intensity" in r:
            pts.append((k, d, r["intensity"], r["gflops"]))
        for pr in r.get("passes", []):
            pts.append((f"{k}: {pr['pass']}", d, pr["intensity"], pr["gflops"]))
    for t in results.get("torch", []):
        if t.get("n") == n and t.get("heads") == heads and not t.get("causal") and "intensity" in t:
            pts.append(("SDPA fp32", t["d"], t["intensity"], t["gflops"]))
    W, H, L, T, Rm, B = 760, 520, 70, 20, 230, 50
    x0, x1, y0, y1 = -1.0, 4.0, 2.0, 5.0  # log10 ranges

    def X(v):
        return L + (math.log10(v) - x0) / (x1 - x0) * (W - L - Rm)

    def Y(v):
        return H - B - (math.log10(v) - y0) / (y1 - y0) * (H - T - B)

    o = [(f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
          'font-family="sans-serif" font-size="12" role="img" aria-labelledby="rt rd">'),
         (f'<title id="rt">Roofline of the WGSL kernels and PyTorch SDPA on an NVIDIA H200, fp32, {heads} heads, '
          f'N = {n:,}, full attention</title>'),
         (f'<desc id="rd">Log-log axes: arithmetic intensity in FLOP per byte across, GFLOP/s up. The slanted roof '
          f'is the measured copy bandwidth, {bw:,.0f} GB/s; the flat roofs are the fp32 datasheet peak, '
          f'{peak:,.0f} GFLOP/s, and the measured fp32 matrix product. Each point is one kernel at one d.</desc>'),
         f'<rect x="0" y="0" width="{W}" height="{H}" fill="#fff"/>']
    for e in range(int(x0), int(x1) + 1):
        o.append(f'<line x1="{X(10**e):.1f}" y1="{T}" x2="{X(10**e):.1f}" y2="{H - B}" stroke="#ddd"/>')
        o.append(f'<text x="{X(10**e):.1f}" y="{H - B + 16}" text-anchor="middle">{10**e:g}</text>')
    for e in range(int(y0), int(y1) + 1):
        o.append(f'<line x1="{L}" y1="{Y(10**e):.1f}" x2="{W - Rm}" y2="{Y(10**e):.1f}" stroke="#ddd"/>')
        o.append(f'<text x="{L - 6}" y="{Y(10**e) + 4:.1f}" text-anchor="end">{10**e:,.0f}</text>')
    o.append(f'<text x="{(L + W - Rm) / 2:.0f}" y="{H - 12}" text-anchor="middle">arithmetic intensity (FLOP per byte '
             f'of global memory, emulator counts)</text>')
    o.append(f'<text x="16" y="{(T + H - B) / 2:.0f}" text-anchor="middle" transform="rotate(-90 16 '
             f'{(T + H - B) / 2:.0f})">GFLOP/s</text>')
    knee = peak / bw
    o.append(f'<polyline fill="none" stroke="#000" stroke-width="2" points="{X(10**x0):.1f},{Y(bw * 10**x0):.1f} '
             f'{X(knee):.1f},{Y(peak):.1f} {X(10**x1):.1f},{Y(peak):.1f}"/>')
    o.append(f'<text x="{X(0.2):.1f}" y="{Y(bw * 0.2) - 8:.1f}" '
             f'transform="rotate(-{math.degrees(math.atan((H - T - B) / (y1 - y0) / ((W - L - Rm) / (x1 - x0)))):.1f} '
             f'{X(0.2):.1f} {Y(bw * 0.2) - 8:.1f})">copy {bw:,.0f} GB/s (measured)</text>')
    o.append(f'<text x="{X(10**x1) - 4:.1f}" y="{Y(peak) - 6:.1f}" text-anchor="end">'
             f'fp32 peak {peak / 1000:.1f} TFLOP/s (datasheet)</text>')
    if mm:
        o.append(f'<line x1="{X(mm / bw):.1f}" y1="{Y(mm):.1f}" x2="{X(10**x1):.1f}" y2="{Y(mm):.1f}" '
                 'stroke="#000" stroke-dasharray="6 4"/>')
        o.append(f'<text x="{X(10**x1) - 4:.1f}" y="{Y(mm) + 16:.1f}" text-anchor="end">PyTorch fp32 matmul '
                 f'{mm / 1000:.1f} TFLOP/s (measured)</text>')
    colours = {16: "#1b7837", 32: "#762a83", 64: "#2166ac", 128: "#b2182b"}
    shapes = {}
    names = sorted({p[0] for p in pts}, key=lambda s: (not s.startswith("plain"), s))
    for i, name in enumerate(names):
        shapes[name] = i
    for name, d, ai, gf in pts:
        cx, cy, c, i = X(ai), Y(gf), colours.get(d, "#444"), shapes[name]
        o.append(_marker(i, cx, cy, c) + f'<title>{name}, d = {d}: {ai:.3g} FLOP/B, {gf:,.0f} GFLOP/s</title></g>')
    ly = T + 10
    o.append(f'<text x="{W - Rm + 14}" y="{ly}" font-weight="bold">kernel (shape)</text>')
    for name in names:
        ly += 18
        o.append(_marker(shapes[name], W - Rm + 20, ly - 4, "#444") + "</g>")
        o.append(f'<text x="{W - Rm + 32}" y="{ly}">{name}</text>')
    ly += 26
    o.append(f'<text x="{W - Rm + 14}" y="{ly}" font-weight="bold">head dimension (colour)</text>')
    for d in sorted({p[1] for p in pts}):
        ly += 18
        o.append(f'<rect x="{W - Rm + 15}" y="{ly - 10}" width="10" height="10" fill="{colours.get(d, "#444")}"/>'
                 f'<text x="{W - Rm + 32}" y="{ly}">d = {d}</text>')
    o.append("</svg>")
    return "\n".join(o) + "\n"


def _marker(i, x, y, c):
    """An open <g> with marker shape i at (x, y) in colour c."""
    r = 5
    if i % 4 == 0:
        m = f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{c}"/>'
    elif i % 4 == 1:
        m = f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r}" height="{2 * r}" fill="{c}"/>'
    elif i % 4 == 2:
        m = (f'<polygon points="{x:.1f},{y - r - 1:.1f} {x + r + 1:.1f},{y + r:.1f} {x - r - 1:.1f},{y + r:.1f}" '
             f'fill="{c}"/>')
    else:
        m = (f'<polygon points="{x:.1f},{y - r - 1:.1f} {x + r + 1:.1f},{y:.1f} {x:.1f},{y + r + 1:.1f} '
             f'{x - r - 1:.1f},{y:.1f}" fill="{c}"/>')
    if i >= 4:  # second round of shapes: hollow
        m = m.replace(f'fill="{c}"', f'fill="none" stroke="{c}" stroke-width="2"')
    return "<g>" + m


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
    lines = ["| limits | heads | N | d | mask | kernel (shader) | median ms | GFLOP/s | GB/s (emulator bytes) | "
             "samples | method |",
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
            lines.append(head + f" {r['medianMs']:.3f} | {r['gflops']:.0f} | {gb} | "
                                f"{len(r['samples'])}×{r['reps']} | {r['method']} |")
    if results.get("torch"):
        lines += ["", "| PyTorch SDPA fp32 | heads | N | d | mask | median ms | GFLOP/s |",
                  "|---|---:|---:|---:|---|---:|---:|"]
        for t in results["torch"]:
            mask = "causal" if t["causal"] else "full"
            if "medianMs" in t:
                lines.append(f"| {t.get('backend', '')} | {t['heads']} | {t['n']:,} | {t['d']} | {mask} | "
                             f"{t['medianMs']:.3f} | {t['gflops']:.0f} |")
            else:
                lines.append(f"| error | {t['heads']} | {t['n']:,} | {t['d']} | {mask} | {t.get('error', '')} | |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
