"""Sweep of exercise 3's fast Triton kernels (solution_fast.py) on a CUDA GPU, kernel by kernel.

    python3 bench/sweep_triton_fast.py --json OUT.json [--warm 12] [--cases bfloat16:128:0 float16:64:1]

For each case (dtype, d, causal) at N = 16,384, 1 x 32 heads, it times, each launch alone with
triton.testing.do_bench (median ms): SDPA as it picks (its backend read by the profiler), forward
and forward+backward; solution.py's kernels at their run-3 picks (the baseline); and every variant
of solution_fast.py's forward, dK/dV, dQ and atomic-dQ kernels in VARIANTS (block sizes, warps,
stages, warp specialization, a persistent grid), each checked first against SDPA's O or gradients
(max |ours - SDPA| within 1e-2 (float16) or 5e-2 (bfloat16) times max(1, max |SDPA|)), and the
backward's pre-pass D = rowsum(dO o O). --warm P first compiles every variant in P processes at
N = 1,024 (one binary serves every N). Writes every row to --json and prints a table per case.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "site", "content", "exercises", "triton-port")
sys.path.insert(0, os.path.abspath(HERE))  # solution.py, solution_fast.py, bench_flash_triton.py

B, H, N = 1, 32, 16384
BOUND = {"float16": 1e-2, "bfloat16": 5e-2}
# (BLOCK_M, BLOCK_N, warps, stages, flags); flags WS (warp-specialized loop), PERSIST (forward), maxnreg.
VARIANTS = {
    "forward": [(128, 64, 4, 2, {}), (128, 64, 4, 3, {}), (128, 64, 4, 4, {}), (64, 64, 4, 2, {}),
                (64, 64, 4, 3, {}), (128, 128, 8, 2, {}), (128, 64, 8, 3, {}), (128, 32, 4, 3, {}),
                (128, 64, 4, 2, {"WS": True}), (128, 128, 8, 2, {"WS": True}),
                (128, 64, 4, 2, {"PERSIST": True}), (64, 64, 4, 2, {"PERSIST": True}),
                (128, 128, 8, 2, {"PERSIST": True})],
    "dkdv": [(32, 128, 4, 3, {}), (32, 128, 4, 4, {}), (32, 128, 4, 5, {}), (32, 64, 4, 3, {}), (32, 64, 4, 4, {}),
             (64, 128, 8, 2, {}), (64, 128, 8, 3, {}), (64, 64, 4, 2, {}), (64, 64, 4, 3, {}), (32, 128, 8, 3, {}),
             (64, 128, 4, 3, {}), (64, 128, 8, 2, {"WS": True}), (32, 128, 4, 3, {"WS": True}),
             (64, 64, 4, 3, {"WS": True})],
    "dq": [(128, 64, 8, 2, {}), (128, 64, 8, 3, {}), (128, 32, 8, 3, {}), (64, 64, 4, 3, {}), (128, 32, 4, 3, {}),
           (128, 128, 8, 2, {}), (64, 32, 4, 3, {}), (128, 64, 8, 2, {"WS": True})],
    "atomic": [(64, 128, 8, 3, {}), (64, 128, 8, 2, {}), (64, 64, 4, 3, {}), (32, 128, 8, 3, {})],
}
# solution.py's kernels at run 3's picks (bench/results/triton_h200_run3.json), per (d, causal, dtype).
BASELINE = {"forward": {(128, 0): (128, 64, 4, 2), (128, 1): (128, 64, 4, 2), (64, 0): (64, 64, 4, 2),
                        (64, 1): (64, 64, 4, 2)},
            "dkdv": {(128, 0): (32, 64, 4, 3), (128, 1): (64, 128, 8, 2), (64, 0): (32, 128, 4, 3),
                     (64, 1): (32, 64, 4, 2)},
            "dq": {(128, 0): (128, 64, 8, 3), (128, 1): (128, 64, 8, 3), (64, 0): (128, 64, 8, 3),
                   (64, 1): (128, 64, 8, 3)}}
CASES = ["bfloat16:128:0", "float16:64:1", "bfloat16:64:0", "float16:128:1"]


def label(kernel, v):
    bm, bn, w, s, f = v
    return f"{kernel} M{bm} N{bn} w{w} s{s}" + "".join(f" {k}" + ("" if val is True else f"={val}")
                                                      for k, val in f.items())


def jobs(cases):
    out = [(c, "baseline-" + k, (*BASELINE[k][(int(c.split(":")[1]), int(c.split(":")[2]))], {}))
           for c in cases for k in BASELINE]
    return out + [(c, k, v) for c in cases for k, vs in VARIANTS.items() for v in vs]


def launchers(dt, d, causal, n):
    """Inputs at N = n and a function that runs one job's kernel once and returns its outputs."""
    import solution
    import solution_fast as sf
    import torch
    import triton
    triton.set_allocator(solution._scratch)
    g = torch.Generator(device="cuda").manual_seed(n + d)
    dtype = getattr(torch, dt)
    q, k, v, do = (torch.randn((B, H, n, d), generator=g, device="cuda").to(dtype) for _ in range(4))
    qk_scale, sm_scale = solution.LOG2E.value / math.sqrt(d), 1 / math.sqrt(d)
    state = {}

    def fwd_inputs():  # O and L from solution.py's forward at its run-3 pick, D from them
        if "lse" not in state:
            run("baseline-forward", (*BASELINE["forward"][(d, int(causal))], {}))
            state["o"], state["lse"] = state.pop("last")
            state["delta"] = (state["o"].float() * do.float()).sum(-1)
        return state["o"], state["lse"], state["delta"]

    def run(kernel, variant):
        bm, bn, w, s, f = variant
        f = dict(f)
        extra = {"num_warps": w, "num_stages": s}
        if "maxnreg" in f:
            extra["maxnreg"] = f.pop("maxnreg")
        if kernel in ("forward", "baseline-forward"):
            o = torch.empty_like(q)
            lse = torch.empty((B, H, n), device="cuda", dtype=torch.float32)
            tiles = triton.cdiv(n, bm)
            if kernel == "forward":
                persist = f.get("PERSIST", False)
                grid = (min(torch.cuda.get_device_properties(0).multi_processor_count, tiles * B * H),) if persist \
                    else (tiles, B * H)
                sf._flash_forward_fast[grid](q, k, v, o, lse, n, B * H, qk_scale, D=d, BLOCK_M=bm, BLOCK_N=bn,
                                             CAUSAL=causal, EVEN=n % 128 == 0, WS=f.get("WS", False),
                                             PERSIST=persist, **extra)
            else:
                solution._flash_forward.fn[(tiles, B * H)](q, k, v, o, lse, n, qk_scale, D=d, BLOCK_M=bm, BLOCK_N=bn,
                                                           CAUSAL=causal, EVEN=n % 128 == 0, TMA=True,
                                                           PRECISION="tf32", **extra)
            state["last"] = (o, lse)
            return [o]
        o, lse, delta = fwd_inputs()
        args = dict(N=n, qk_scale=qk_scale, sm_scale=sm_scale, D=d, CAUSAL=causal, BLOCK_M=bm, BLOCK_N=bn, **extra)
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        if kernel == "dkdv":
            sf._backward_dkdv_fast[(triton.cdiv(n, bn), B * H)](q, k, v, do, lse, delta, dk, dv, dq, DQ_ATOMIC=False,
                                                                WS=f.get("WS", False), **args)
            return [dk, dv]
        if kernel == "baseline-dkdv":
            solution._backward_dkdv[(triton.cdiv(n, bn), B * H)](q, k, v, do, lse, delta, dk, dv, dq,
                                                                 DQ_ATOMIC=False, TMA=False, PRECISION="tf32", **args)
            return [dk, dv]
        if kernel == "dq":
            sf._backward_dq_fast[(triton.cdiv(n, bm), B * H)](q, k, v, do, lse, delta, dq, WS=f.get("WS", False),
                                                              **args)
            return [dq]
        if kernel == "baseline-dq":
            solution._backward_dq[(triton.cdiv(n, bm), B * H)](q, k, v, do, lse, delta, dq, PRECISION="tf32", **args)
            return [dq]
        if kernel == "atomic":
            dq32 = torch.zeros(q.shape, device="cuda", dtype=torch.float32)
            sf._backward_dkdv_fast[(triton.cdiv(n, bn), B * H)](q, k, v, do, lse, delta, dk, dv, dq32,
                                                                DQ_ATOMIC=True, WS=f.get("WS", False), **args)
            return [dq32.to(q.dtype), dk, dv]
        if kernel == "preprocess":
            out = torch.empty_like(lse)
            solution._backward_preprocess[(triton.cdiv(n, 64), B * H)](o, do, out, n, D=d, BLOCK_M=64)
            return [out]
        raise ValueError(kernel)

    return (q, k, v, do), run


def warm_one(i, p, cases, ok_file):
    """Compile every p-th job from the i-th; note each that compiled and ran in ok_file."""
    for j, (case, kernel, variant) in enumerate(jobs(cases)):
        if j % p != i:
            continue
        dt, d, c = case.split(":")
        try:
            _, run = launchers(dt, int(d), c == "1", 1024)
            run(kernel, variant)
            import torch
            torch.cuda.synchronize()
            with open(ok_file, "a", encoding="utf-8") as fh:
                fh.write(f"{case} {label(kernel, variant)}\n")
        except Exception as exc:  # noqa: BLE001 - a variant that does not compile is reported by the timing pass
            print(f"warm {case} {label(kernel, variant)}: {type(exc).__name__}: {str(exc)[:200]}", file=sys.stderr)
    import torch
    torch.cuda.synchronize()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--json", required=True)
    p.add_argument("--warm", type=int, default=0)
    p.add_argument("--cases", nargs="+", default=CASES)
    p.add_argument("--warm-one", nargs=2, type=int)
    p.add_argument("--warm-only", action="store_true", help="compile (with --warm processes), then stop")
    p.add_argument("--warm-s", type=float, default=240, help="stop the compile workers after this many seconds")
    p.add_argument("--budget-s", type=float, default=200)
    a = p.parse_args()
    if a.warm_one:
        warm_one(*a.warm_one, a.cases, a.json + ".warm-ok")
        return 0
    t0 = time.monotonic()
    if a.warm:
        if os.path.exists(a.json + ".warm-ok"):
            os.remove(a.json + ".warm-ok")
        procs = [subprocess.Popen([sys.executable, __file__, "--json", a.json, "--warm-one", str(i), str(a.warm),
                                   "--cases", *a.cases]) for i in range(a.warm)]
        for pr in procs:
            try:
                pr.wait(timeout=max(1.0, a.warm_s - (time.monotonic() - t0)))
            except subprocess.TimeoutExpired:
                pr.kill()
                print(f"warm: a worker ran past {a.warm_s} s and was stopped", file=sys.stderr)
        print(f"warm: {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
    if a.warm_only:
        return 0
    import bench_flash_triton as bft
    import torch
    import torch.nn.functional as F
    from triton.testing import do_bench
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    warmed = None  # after a warm pass, only the jobs that compiled there (a compile that hangs stays out)
    if os.path.exists(a.json + ".warm-ok"):
        with open(a.json + ".warm-ok", encoding="utf-8") as fh:
            warmed = set(fh.read().splitlines())

    def bench(fn):
        return do_bench(fn, warmup=10, rep=60, return_mode="median")

    for case in a.cases:
        dt, d, c = case.split(":")
        d, causal = int(d), c == "1"
        (q, k, v, do), run = launchers(dt, d, causal, N)
        fwd_flop = bft.flops(B, H, N, d, causal)
        # SDPA: its pick, its forward, forward+backward, and its O and gradients for the checks.
        leaves = [t.detach().clone().requires_grad_() for t in (q, k, v)]
        picked = bft.what_sdpa_runs(q, k, v, causal, "forward+backward")
        o_ref = F.scaled_dot_product_attention(*leaves, is_causal=causal)
        grads = torch.autograd.grad(o_ref, leaves, do)
        ref = {"o": o_ref.detach(), "dq": grads[0], "dk": grads[1], "dv": grads[2]}
        with torch.no_grad():
            f_ms = bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal))  # noqa: B023

        def fb():
            o = F.scaled_dot_product_attention(*leaves, is_causal=causal)  # noqa: B023 - called at once
            return torch.autograd.grad(o, leaves, do)  # noqa: B023
        fb_ms = bench(fb)
        base = {"dtype": dt, "d": d, "causal": causal, "n": N, "batch": B, "heads": H}
        rows.append(dict(base, kernel="sdpa forward", backend=picked["backend"], kernels=picked["kernels"], ms=f_ms))
        rows.append(dict(base, kernel="sdpa forward+backward", backend=picked["backend"], ms=fb_ms))
        print(f"== {case}: SDPA ({picked['backend']}) forward {f_ms:.3f} ms, forward+backward {fb_ms:.3f} ms, "
              f"backward {fb_ms - f_ms:.3f} ms", file=sys.stderr, flush=True)
        names = {"forward": ["o"], "baseline-forward": ["o"], "dkdv": ["dk", "dv"], "baseline-dkdv": ["dk", "dv"],
                 "dq": ["dq"], "baseline-dq": ["dq"], "atomic": ["dq", "dk", "dv"], "preprocess": []}
        flop = {"forward": fwd_flop, "dkdv": 2 * fwd_flop, "dq": 3 * fwd_flop // 2, "atomic": 5 * fwd_flop // 2}
        todo = [(cs, kn, vv) for cs, kn, vv in jobs([case])] + [(case, "preprocess", (64, 64, 4, 1, {}))]
        for _, kernel, variant in todo:
            row = dict(base, kernel=kernel, variant=label(kernel, variant), ms=None, tflops=None, err=None, error=None)
            if time.monotonic() - t0 > a.budget_s:
                row["error"] = "budget"
                rows.append(row)
                continue
            if warmed is not None and kernel != "preprocess" and f"{case} {row['variant']}" not in warmed:
                row["error"] = "did not compile or run in the warm pass"
                rows.append(row)
                print(f"{case} {row['variant']}: {row['error']}", file=sys.stderr, flush=True)
                continue
            try:
                out = run(kernel, variant)
                errs = []
                for name, t in zip(names[kernel], out, strict=False):
                    r = ref[name]
                    errs.append((t.double() - r.double()).abs().max().item() / max(1.0, r.abs().max().item()))
                row["err"] = max(errs) if errs else None
                if errs and not all(math.isfinite(e) and e <= BOUND[dt] for e in errs):
                    row["error"] = "check failed"
                else:
                    row["ms"] = bench(lambda kernel=kernel, variant=variant: run(kernel, variant))  # noqa: B023
                    fl = flop.get(kernel.removeprefix("baseline-"))
                    row["tflops"] = fl / row["ms"] / 1e9 if fl else None
            except Exception as exc:  # noqa: BLE001 - recorded, the sweep goes on
                row["error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:160] if str(exc) else ''}"
            torch.cuda.empty_cache()
            rows.append(row)
            t = row["error"] if row["ms"] is None else f"{row['ms']:.3f} ms" + (
                f", {row['tflops']:.0f} TFLOP/s" if row["tflops"] else "")
            print(f"{case} {row['variant']}: {t}" + (f" (err {row['err']:.1e})" if row["err"] is not None else ""),
                  file=sys.stderr, flush=True)
        with open(a.json, "w", encoding="utf-8") as fh:
            json.dump({"gpu": torch.cuda.get_device_name(0), "rows": rows}, fh, indent=1)
    # The best of each kernel per case.
    for case in a.cases:
        dt, d, c = case.split(":")
        print(f"\n{case}")
        for kernel in ("forward", "baseline-forward", "dkdv", "baseline-dkdv", "dq", "baseline-dq", "atomic",
                       "preprocess", "sdpa forward", "sdpa forward+backward"):
            got = sorted((r for r in rows if r["kernel"] == kernel and (r["dtype"], r["d"], r["causal"]) ==
                          (dt, int(d), c == "1") and r["ms"] is not None), key=lambda r: r["ms"])
            print(f"  {kernel}: " + "; ".join(f"{r.get('variant', r.get('backend'))} {r['ms']:.3f}" for r in got[:3]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
