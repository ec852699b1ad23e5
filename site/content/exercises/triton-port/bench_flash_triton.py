"""Benchmark for exercise 3: your Triton flash_attention beside PyTorch's
scaled_dot_product_attention (SDPA) and attention written out by hand, on
your CUDA GPU: time and peak memory, forward and forward+backward.

    python3 bench_flash_triton.py                                # starter.py, the default grid
    python3 bench_flash_triton.py --module solution --n 4096 --d 64 --dtype bfloat16
    python3 bench_flash_triton.py --module solution --json out.json --md out.md
    python3 bench_flash_triton.py --summary out.json            # its tables again, no GPU needed

First it prints which attention SDPA picks for each (dtype, d, mask): the
ATen operation (flash, cuDNN, memory-efficient or math) and the GPU kernels
it launched, read from torch.profiler. Then, for each (dtype, d, mask, N)
and each direction (forward; forward+backward with a random dO):

  check   your O (and dQ, dK, dV) against SDPA's, and one head against
          float64 attention where N ≤ 4,096; a kernel past the bound is
          reported and not timed. Bound: 1e-4 (float32), 1e-2 (float16) and
          5e-2 (bfloat16) times max(1, max |reference|), looser than the
          tests' because N goes to 16,384 here; the tests are the real check.
  time    triton.testing.do_bench: median milliseconds (its default of about
          100 ms of repetitions after 25 ms of warm-up, the L2 cache flushed
          before each run), for your kernel, for SDPA as it picks (backend
          "auto"), for SDPA held to each backend it has (--backends, through
          torch.nn.attention.sdpa_kernel), and for attention by hand
          (softmax(q kᵀ/√d) v in the inputs' dtype, the N×N table in memory).
  memory  torch.cuda.max_memory_allocated during one run, less what was
          allocated before it (the inputs, and dO): bytes beyond the inputs,
          outputs and gradients included. An out-of-memory error is caught
          and recorded as such (ms and peak_bytes null).

TF32 is off for PyTorch (torch.backends.cuda.matmul.allow_tf32 = False, and
cuDNN's), so float32 SDPA is float32 arithmetic, like a kernel that passes
input_precision="ieee".

FLOP convention: 4·N²·d per head for the forward (Q·Kᵀ and P·V, 2 FLOP per
multiply-add), half that for causal; forward+backward counts 3.5 times the
forward (the backward's five products), for every kernel alike;
TFLOP/s = FLOP / median time. The same convention as the project's
docs/BENCHMARKS.md.

Each row of --json: dtype, n, d, batch, heads, causal, kernel ("triton
(MODULE)", "sdpa" or "by hand"), backend (SDPA: "auto" or the one it was
held to; else null), ran (the backend the profiler saw run), direction
("forward" or "forward+backward"), flop, ms, tflops, peak_bytes,
check_ok, max_err_vs_sdpa, max_err_vs_float64_head0 and error (null, or why
there is no time: "out of memory", "check failed", "not available: …").

Exit status 0 when every kernel passed its check, 1 otherwise, 2 without a GPU.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
import time

DIRECTIONS = ("forward", "forward+backward")
FORWARD_BACKWARD_FLOP = (7, 2)  # forward+backward FLOP = forward FLOP · 7 / 2: the backward's five products
DEVICE = "cuda"  # where the inputs live (a test of the record format sets "cpu" with TRITON_INTERPRET=1)
CHECK_BOUND = {"float32": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}
#: SDPA's ATen operation for each backend, as the profiler names it.
SDPA_OPS = {"aten::_scaled_dot_product_flash_attention": "flash",
            "aten::_scaled_dot_product_cudnn_attention": "cudnn",
            "aten::_scaled_dot_product_efficient_attention": "efficient",
            "aten::_scaled_dot_product_flash_attention_for_cpu": "flash (cpu)",
            "aten::_scaled_dot_product_attention_math": "math"}


def flops(batch: int, heads: int, n: int, d: int, causal: bool, direction: str = "forward") -> int:
    """FLOP of one attention pass: 4·N²·d per head forward, half for causal,
    3.5 times that forward+backward (integer; ValueError for another direction)."""
    per_head = 4 * n * n * d
    forward = batch * heads * (per_head // 2 if causal else per_head)
    if direction == "forward":
        return forward
    if direction == "forward+backward":
        return forward * FORWARD_BACKWARD_FLOP[0] // FORWARD_BACKWARD_FLOP[1]
    raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")


def tflops(flop: int, ms: float) -> float:
    """TFLOP/s from a FLOP count and a time in milliseconds."""
    return flop / (ms * 1e-3) / 1e12


def backend_of(op_names) -> str | None:
    """The SDPA backend named by the ATen operations a profile saw (None if none of them)."""
    for name in op_names:
        if name in SDPA_OPS:
            return SDPA_OPS[name]
    return None


def kernel_name(name: str) -> str:
    """A GPU kernel's name cut before its template arguments and parameter list."""
    for stop in ("<", "("):
        name = name.split(stop)[0]
    return name.removeprefix("void ").strip()


def by_hand(q, k, v, causal: bool):
    """softmax(q kᵀ/√d) v in the inputs' dtype: the N×N scores and probabilities in memory."""
    import torch
    n, d = q.shape[-2], q.shape[-1]
    s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(d))
    if causal:
        s = s.masked_fill(torch.ones((n, n), dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def _sdpa(backend):
    """SDPA, free to pick (backend "auto") or held to one backend."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    held = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION, "math": SDPBackend.MATH}

    def run(q, k, v, causal):
        if backend == "auto":
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        with sdpa_kernel([held[backend]]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return run


def what_sdpa_runs(q, k, v, causal: bool, direction: str) -> dict:
    """{"backend", "ops", "kernels"}: SDPA's choice for these inputs, from one profiled run."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    fn = _sdpa("auto")
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        if direction == "forward":
            with torch.no_grad():
                fn(q, k, v, causal)
        else:
            leaves = [t.detach().requires_grad_() for t in (q, k, v)]
            o = fn(*leaves, causal)
            torch.autograd.grad(o, leaves, torch.ones_like(o))
        if DEVICE == "cuda":
            torch.cuda.synchronize()
    ops = sorted({e.key for e in prof.key_averages() if e.key.startswith("aten::_scaled_dot_product")})
    kernels = sorted({kernel_name(e.name) for e in prof.events()
                      if e.device_type == torch.autograd.DeviceType.CUDA and "elementwise" not in e.name
                      and "fill" not in e.name.lower()})
    return {"backend": backend_of(ops), "ops": ops, "kernels": kernels}


def _run_once(fn, q, k, v, do, causal, direction):
    """One pass: the output, and with forward+backward the three gradients (from autograd.grad)."""
    import torch
    if direction == "forward":
        with torch.no_grad():
            return [fn(q, k, v, causal)]
    o = fn(q, k, v, causal)
    return [o, *torch.autograd.grad(o, (q, k, v), do)]


def BENCH(fn, return_mode="median"):
    """triton.testing.do_bench (a test of the record format puts a CPU clock in its place)."""
    from triton.testing import do_bench
    return do_bench(fn, return_mode=return_mode)


def peak_bytes(once) -> int:
    """Bytes allocated at most during one call of once(), beyond what was allocated before it."""
    import torch
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    out = once()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - before
    del out
    return peak


def _reference_head0(q, k, v, do, causal, direction):
    """[O, dQ, dK, dV] (or [O]) of head 0 of batch 0 in float64."""
    import torch
    leaves = [t[0, 0].detach().double().requires_grad_() for t in (q, k, v)]
    o = by_hand(*leaves, causal)
    if direction == "forward":
        return [o.detach()]
    return [o.detach(), *torch.autograd.grad(o, leaves, do[0, 0].double())]


def run(args) -> tuple[list, dict, bool]:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    mod = importlib.import_module(args.module)
    tma = {"auto": None, "on": True, "off": False}[args.tma]
    extra = dict(kw.split("=", 1) for kw in args.kw)
    extra = {k: v if not v.lstrip("-").isdigit() else bool(int(v)) if v in ("0", "1") else int(v)
             for k, v in extra.items()}
    if tma is not None:
        extra["tma"] = tma

    def ours(q, k, v, causal):
        return mod.flash_attention(q, k, v, causal=causal, **extra)

    label = f"triton ({args.module})" + ("" if tma is None else f", tma {args.tma}") + \
        "".join(f", {kw}" for kw in args.kw)
    rows, picked, all_ok = [], {}, True
    tuned = {"autotune": [], "backward_times": {}}
    started = time.monotonic()
    for dt in args.dtype:
        for d in args.d:
            for causal in map(bool, args.causal):
                ns = list(args.n)
                if args.focus and (dt, d, causal) == (args.focus[0], int(args.focus[1]), args.focus[2] == "1"):
                    ns += [n for n in args.focus_n if n not in ns]
                for n in ns:
                    if time.monotonic() - started > args.budget_s:
                        print(f"budget of {args.budget_s} s spent; stopping before {dt} d={d} N={n}", file=sys.stderr)
                        return rows, picked, all_ok, tuned
                    for direction in args.direction:
                        kernels = [("sdpa", "auto", _sdpa("auto")), (label, None, ours)]  # SDPA first: the check
                        if n in (args.backends_n or args.n):
                            kernels += [("sdpa", b, _sdpa(b)) for b in args.backends]
                        if n in (args.by_hand_n or ns):
                            kernels.append(("by hand", None, by_hand))
                        got = measure(args, kernels, dt, d, causal, n, direction, picked, lambda: _tuned(mod, tuned))
                        all_ok = all_ok and all(r["check_ok"] is not False for r in got)
                        rows += got
                        if args.json:  # after every size, so that a run cut short still leaves its rows
                            _write_json(args, rows, picked, tuned, partial=True)
    return rows, picked, all_ok, tuned


def _tuned(mod, tuned: dict) -> None:
    """Add what the module's autotuners chose since the last call (each config's median ms) and its
    BACKWARD_TIMES, if it has them, to tuned."""
    import triton
    seen = {(t["kernel"], t["key"]) for t in tuned["autotune"]}
    for name, obj in vars(mod).items():
        if not isinstance(obj, triton.runtime.autotuner.Autotuner) or not getattr(obj, "configs_timings", None):
            continue
        for key, best in obj.cache.items():
            if (name, str(key)) in seen or best not in obj.configs_timings:
                continue
            tuned["autotune"].append({"kernel": name, "key": str(key), "best": str(best),
                                      "ms": {str(c): t[0] if isinstance(t, list) else t
                                             for c, t in obj.configs_timings.items()}})
    for key, times in getattr(mod, "BACKWARD_TIMES", {}).items():
        tuned["backward_times"][" ".join(map(str, key))] = times


def measure(args, kernels, dt: str, d: int, causal: bool, n: int, direction: str, picked: dict,
            after_first=lambda: None) -> list:
    """One row per (name, backend, fn) of kernels at one size: checked, then timed and measured."""
    import torch
    g = torch.Generator(device=DEVICE).manual_seed(n + d)
    shape = (args.batch, args.heads, n, d)
    q, k, v, do = (torch.randn(shape, generator=g, device=DEVICE).to(getattr(torch, dt)) for _ in range(4))
    if direction == "forward":
        do = None
    else:
        q, k, v = (t.requires_grad_() for t in (q, k, v))
    key = f"{dt} d={d} {'causal' if causal else 'full'} {direction}"
    if key not in picked:
        picked[key] = what_sdpa_runs(q, k, v, causal, direction)
        print(f"SDPA, {key}: {picked[key]['backend']} ({', '.join(picked[key]['ops'])}); "
              f"kernels: {', '.join(picked[key]['kernels'])}", file=sys.stderr)
    base = {"dtype": dt, "n": n, "d": d, "batch": args.batch, "heads": args.heads, "causal": causal,
            "direction": direction, "flop": flops(args.batch, args.heads, n, d, causal, direction)}
    ref64 = _reference_head0(q, k, v, do, causal, direction) if n <= 4096 else None
    sdpa_out, rows = None, []
    for name, backend, fn in kernels:
        row = dict(base, kernel=name, backend=backend, ran=None, ms=None, tflops=None, peak_bytes=None,
                   check_ok=None, max_err_vs_sdpa=None, max_err_vs_float64_head0=None, error=None)
        if name == "sdpa":
            row["ran"] = picked[key]["backend"] if backend == "auto" else backend

        def once(fn=fn):
            return _run_once(fn, q, k, v, do, causal, direction)

        try:
            out = once()  # the first run also compiles and autotunes
            if name == "sdpa" and backend == "auto":
                sdpa_out = [t.detach() for t in out]
            elif name.startswith("triton"):
                after_first()
                with torch.no_grad():
                    row.update(_check(out, sdpa_out, ref64, dt))
                sdpa_out = None
            del out
            if row["check_ok"] is False:
                row["error"] = "check failed"
            else:
                row["peak_bytes"] = peak_bytes(once)
                row["ms"] = BENCH(once, return_mode="median")
                row["tflops"] = tflops(row["flop"], row["ms"])
        except torch.cuda.OutOfMemoryError:
            row["error"] = "out of memory"
        except RuntimeError as exc:  # a backend that does not take these inputs
            if name != "sdpa" or backend == "auto":
                raise
            row["error"] = "not available: " + str(exc).strip().splitlines()[0][:200]
        torch.cuda.empty_cache()
        rows.append(row)
        print(_line(row), file=sys.stderr)
    return rows


def _check(out, sdpa_out, ref64, dt) -> dict:
    """check_ok and the largest errors of our pass against SDPA's and float64 head 0 (None where not run)."""
    import torch
    errs_sdpa, errs64, ok = [], [], True
    for i, t in enumerate(out):
        if not torch.isfinite(t).all():
            ok = False
        if sdpa_out is not None:
            r = sdpa_out[i]
            e = (t.double() - r.double()).abs().max().item()
            errs_sdpa.append(e)
            ok = ok and math.isfinite(e) and e <= CHECK_BOUND[dt] * max(1.0, r.abs().max().item())
        if ref64 is not None:
            r = ref64[i]
            e = (t[0, 0].double() - r).abs().max().item()
            errs64.append(e)
            ok = ok and math.isfinite(e) and e <= CHECK_BOUND[dt] * max(1.0, r.abs().max().item())
    return {"check_ok": ok, "max_err_vs_sdpa": max(errs_sdpa) if errs_sdpa else None,
            "max_err_vs_float64_head0": max(errs64) if errs64 else None}


def _line(row: dict) -> str:
    who = row["kernel"] + (f" [{row['backend']}]" if row["backend"] else "")
    if row["ms"] is None:
        t = row["error"]
    else:
        t = f"{row['ms']:.3f} ms, {row['tflops']:.1f} TFLOP/s, {row['peak_bytes'] / 2**20:,.1f} MiB"
    return (f"{who:>28} {row['dtype']} d={row['d']} {'causal' if row['causal'] else 'full  '} "
            f"N={row['n']:,} {row['direction']}: {t}")


def _fmt_ms(row) -> str:
    return row["error"] if row["ms"] is None else f"{row['ms']:.3f}"


def _fmt_mib(row) -> str:
    return "out of memory" if row["error"] == "out of memory" else \
        ("" if row["peak_bytes"] is None else f"{row['peak_bytes'] / 2**20:,.1f}")


def markdown(rows: list) -> str:
    """Two tables: time beside SDPA (as it picks, and each backend), and peak memory."""
    groups = {}
    for r in rows:
        groups.setdefault((r["dtype"], r["d"], r["causal"], r["n"], r["direction"]), []).append(r)
    backends = sorted({r["backend"] for r in rows if r["kernel"] == "sdpa" and r["backend"] != "auto"})
    out = ["| dtype | d | mask | N | direction | Triton ms | SDPA ms (picks) | share of SDPA's speed | "
           + " | ".join(f"SDPA {b} ms" for b in backends) + (" | " if backends else "") + "by hand ms |",
           "|---|---:|---|---:|---|---:|---:|---:|" + "---:|" * len(backends) + "---:|"]
    for (dt, d, causal, n, direction), rs in groups.items():
        tri = next(r for r in rs if r["kernel"].startswith("triton"))
        auto = next(r for r in rs if r["kernel"] == "sdpa" and r["backend"] == "auto")
        share = "" if tri["ms"] is None or auto["ms"] is None else f"{auto['ms'] / tri['ms']:.0%}"
        cells = [next((_fmt_ms(r) for r in rs if r["backend"] == b), "") for b in backends]
        hand = next((_fmt_ms(r) for r in rs if r["kernel"] == "by hand"), "")
        out.append(f"| {dt} | {d} | {'causal' if causal else 'full'} | {n:,} | {direction} | {_fmt_ms(tri)} | "
                   f"{_fmt_ms(auto)} ({auto['ran']}) | {share} | " + "".join(c + " | " for c in cells) + hand + " |")
    out += ["", "| dtype | d | mask | N | direction | Triton MiB | SDPA MiB | by hand MiB |",
            "|---|---:|---|---:|---|---:|---:|---:|"]
    for (dt, d, causal, n, direction), rs in groups.items():
        tri = next(r for r in rs if r["kernel"].startswith("triton"))
        auto = next(r for r in rs if r["kernel"] == "sdpa" and r["backend"] == "auto")
        hand = next((_fmt_mib(r) for r in rs if r["kernel"] == "by hand"), "")
        out.append(f"| {dt} | {d} | {'causal' if causal else 'full'} | {n:,} | {direction} | {_fmt_mib(tri)} | "
                   f"{_fmt_mib(auto)} | {hand} |")
    return "\n".join(out) + "\n"


def summary(data: dict, focus=("bfloat16", 64, True)) -> str:
    """Markdown of a saved run (--json): at its largest N, each (dtype, d, mask) beside SDPA as it
    picks and held to FlashAttention-2, forward and forward+backward; then peak memory at every N
    for the focus (dtype, d, causal). Standard library only (docs/BENCHMARKS.md prints it)."""
    rows = data["rows"]

    def find(dt, d, causal, n, direction, kernel, backend=None):
        for r in rows:
            if (r["dtype"], r["d"], r["causal"], r["n"], r["direction"]) == (dt, d, causal, n, direction) and \
                    (r["kernel"].startswith("triton") if kernel == "triton" else r["kernel"] == kernel) and \
                    r["backend"] == backend:
                return r
        return None

    def ms(r):
        return "" if r is None else (r["error"] if r["ms"] is None else f"{r['ms']:.3f}")

    def share(ours, theirs):
        if ours is None or theirs is None or ours["ms"] is None or theirs["ms"] is None:
            return ""
        return f"{theirs['ms'] / ours['ms']:.0%} ({ours['ms'] / theirs['ms']:.3f})"

    top = max(r["n"] for r in rows)
    cases = sorted({(r["dtype"], r["d"], r["causal"]) for r in rows if r["n"] == top},
                   key=lambda c: (c[0] != "float16", c[1], c[2]))
    out = [f"N = {top:,}, {rows[0]['batch']} × {rows[0]['heads']} heads. Share of SDPA's speed = SDPA's time / ours "
           "(in brackets: our time / SDPA's, the goal's ratio).", "",
           "| dtype | d | mask | direction | Triton ms | SDPA ms (picks) | share of SDPA's speed "
           "| SDPA FlashAttention-2 ms | share of FA2's speed |",
           "|---|---:|---|---|---:|---:|---:|---:|---:|"]
    for dt, d, causal in cases:
        for direction in DIRECTIONS:
            tri = find(dt, d, causal, top, direction, "triton")
            auto = find(dt, d, causal, top, direction, "sdpa", "auto")
            fa2 = find(dt, d, causal, top, direction, "sdpa", "flash")
            if tri is None or auto is None:
                continue
            out.append(f"| {dt} | {d} | {'causal' if causal else 'full'} | {direction} | {ms(tri)} | "
                       f"{ms(auto)} ({auto['ran']}) | {share(tri, auto)} | {ms(fa2)} | {share(tri, fa2)} |")
    dt, d, causal = focus
    ns = sorted({r["n"] for r in rows if (r["dtype"], r["d"], r["causal"]) == (dt, d, causal)})
    out += ["", f"Peak memory beyond the inputs, MiB ({dt}, d = {d}, {'causal' if causal else 'full'}):", "",
            "| N | direction | by hand | SDPA | Triton |", "|---:|---|---:|---:|---:|"]
    for n in ns:
        for direction in DIRECTIONS:
            cells = [find(dt, d, causal, n, direction, k, b) for k, b in
                     (("by hand", None), ("sdpa", "auto"), ("triton", None))]
            out.append(f"| {n:,} | {direction} | " + " | ".join(_fmt_mib(c) if c else "" for c in cells) + " |")
    return "\n".join(out) + "\n"


def _warm(args) -> None:
    """Compile every autotuner config the run will use into Triton's on-disk cache, in --warm
    processes at a time: each (dtype, d, mask) in --warm-chunks processes, each of which keeps
    every --warm-chunks-th config of each autotuner and runs both directions once at N = 1,024."""
    import subprocess
    jobs = [(dt, d, c, i) for dt in args.dtype for d in args.d for c in args.causal for i in range(args.warm_chunks)]
    here = os.path.abspath(__file__)
    procs, t0 = [], time.monotonic()
    for dt, d, c, i in jobs:
        while len([p for p in procs if p.poll() is None]) >= args.warm:
            time.sleep(0.2)
        procs.append(subprocess.Popen([sys.executable, here, "--warm-one", args.module, dt, str(d), str(c),
                                       ",".join(args.direction), args.tma, str(i), str(args.warm_chunks)]))
    bad = [p.args for p in procs if p.wait() != 0]
    print(f"warmed {len(jobs)} (dtype, d, mask, share of configs) in {time.monotonic() - t0:.0f} s"
          + (f"; failed: {bad}" if bad else ""), file=sys.stderr)


def _warm_one(module, dt, d, causal, directions, tma, chunk="0", chunks="1") -> int:
    import torch
    import triton
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    mod = importlib.import_module(module)
    for obj in vars(mod).values():
        if isinstance(obj, triton.runtime.autotuner.Autotuner) and len(obj.configs) > 1:
            obj.configs = obj.configs[int(chunk)::int(chunks)] or obj.configs[:1]
    dtype = getattr(torch, dt)
    q, k, v, do = (torch.randn((1, 2, 1024, int(d)), device="cuda", dtype=dtype) for _ in range(4))
    kw = {} if tma == "auto" else {"tma": tma == "on"}
    o = mod.flash_attention(q, k, v, causal=causal == "1", **kw)
    if "forward+backward" in directions.split(","):
        q, k, v = (t.requires_grad_() for t in (q, k, v))
        torch.autograd.grad(mod.flash_attention(q, k, v, causal=causal == "1", **kw), (q, k, v), do)
    torch.cuda.synchronize()
    return 0 if torch.isfinite(o).all() else 1


def _meta(args, argv) -> dict:
    import platform

    import torch
    import triton
    return {"started": args.started, "seconds": round(time.monotonic() - args.t0, 1),
            "command": " ".join([os.path.basename(sys.argv[0])] + argv),
            "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
            "cuda": torch.version.cuda, "python": platform.python_version(), "tf32": False,
            "flop_convention": "4*N^2*d per head forward, half for causal; forward+backward 3.5 times the forward",
            "timing": "triton.testing.do_bench, median ms",
            "memory": "torch.cuda.max_memory_allocated during one pass, less memory_allocated before it (bytes)"}


def _write_json(args, rows, picked, tuned, partial=False) -> None:
    """The run's record (--json): meta, SDPA's picks, the rows, and what the autotuners measured."""
    data = {"meta": dict(_meta(args, args.argv), partial=partial), "sdpa_picks": picked, "rows": rows, "tuned": tuned}
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--warm-one"]:
        return _warm_one(*argv[1:])
    if argv[:1] == ["--summary"]:  # --summary RUN.json: the tables of a saved run, no GPU needed
        with open(argv[1], encoding="utf-8") as f:
            print(summary(json.load(f)), end="")
        return 0
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--module", default="starter", help="the file (without .py) that defines flash_attention")
    p.add_argument("--n", type=int, nargs="+", default=[1024, 4096, 16384])
    p.add_argument("--d", type=int, nargs="+", default=[64, 128])
    p.add_argument("--dtype", nargs="+", default=["float16", "bfloat16"], choices=["float32", "float16", "bfloat16"])
    p.add_argument("--causal", type=int, nargs="+", default=[0, 1], choices=[0, 1])
    p.add_argument("--direction", nargs="+", default=list(DIRECTIONS), choices=DIRECTIONS)
    p.add_argument("--backends", nargs="*", default=["flash", "efficient", "cudnn"],
                   choices=["flash", "efficient", "cudnn", "math"], help="SDPA backends to time, each held alone")
    p.add_argument("--backends-n", type=int, nargs="*", help="time the held backends only at these N (default: all)")
    p.add_argument("--by-hand-n", type=int, nargs="*", help="run attention by hand only at these N (default: all)")
    p.add_argument("--focus", nargs=3, metavar=("DTYPE", "D", "CAUSAL"),
                   help="the case that also runs at --focus-n (the page's by-N and memory tables)")
    p.add_argument("--focus-n", type=int, nargs="*", default=[], help="more N, for the --focus case only")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--tma", choices=["auto", "on", "off"], default="auto",
                   help="pass tma= to flash_attention (solution.py takes it); auto passes nothing")
    p.add_argument("--kw", nargs="*", default=[], metavar="NAME=VALUE",
                   help="more keyword arguments for flash_attention (0 and 1 pass False and True)")
    p.add_argument("--warm", type=int, default=0, help="first compile the kernels in this many processes at once")
    p.add_argument("--warm-chunks", type=int, default=1, help="split each autotuner's configs over this many of them")
    p.add_argument("--warm-only", action="store_true", help="compile (with --warm processes), then stop")
    p.add_argument("--budget-s", type=float, default=480.0, help="stop starting new sizes after this many seconds")
    p.add_argument("--json", help="write every row, SDPA's picks, the GPU and versions to this file")
    p.add_argument("--md", help="write the Markdown tables to this file")
    args = p.parse_args(argv)
    try:
        import torch
        import triton  # noqa: F401
    except ImportError as exc:
        print(f"This benchmark needs PyTorch and Triton on an NVIDIA GPU ({exc}).", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("This benchmark needs a CUDA GPU; PyTorch sees none.", file=sys.stderr)
        return 2
    args.started, args.t0, args.argv = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), time.monotonic(), argv
    if args.warm:
        _warm(args)
    if args.warm_only:
        return 0
    rows, picked, ok, tuned = run(args)
    table = markdown(rows)
    print(table)
    if args.json:
        _write_json(args, rows, picked, tuned)
    if args.md:
        with open(args.md, "w", encoding="utf-8") as f:
            f.write(f"<!-- {json.dumps(_meta(args, argv))} -->\n" + table)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
