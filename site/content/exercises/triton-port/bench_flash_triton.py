"""Benchmark for exercise 3: your Triton flash_attention beside PyTorch's
scaled_dot_product_attention (SDPA), on your CUDA GPU.

    python3 bench_flash_triton.py                                # starter.py, the default grid
    python3 bench_flash_triton.py --module solution --n 4096 --d 64 --dtype float16
    python3 bench_flash_triton.py --module solution --json out.json --md out.md

For each (dtype, d, causal, N) it first checks, then times:

  check   one head of your O against float64 attention (N ≤ 4,096) and all of
          O against SDPA's; a kernel past the bound is reported and not timed.
          Bound: 1e-4 (float32) and 1e-2 (float16) times max(1, max|V|), looser
          than the tests' because N goes to 16,384 here; the tests are the
          real check.
  time    triton.testing.do_bench: median milliseconds of back-to-back runs
          (its default of about 100 ms of repetitions after 25 ms of warm-up,
          the L2 cache flushed before each run), for your kernel and for SDPA
          on the same inputs.

TF32 is off for PyTorch (torch.backends.cuda.matmul.allow_tf32 = False, and
cuDNN's), so float32 SDPA is float32 arithmetic, like a kernel that passes
input_precision="ieee". SDPA picks its own backend.

FLOP convention: 4·N²·d per head (Q·Kᵀ and P·V, 2 FLOP per multiply-add),
half that for causal, for both kernels alike; TFLOP/s = FLOP / median time.
The same convention as the project's docs/BENCHMARKS.md.

Exit status 0 when every kernel passed its check, 1 otherwise.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import platform
import sys
import time


def flops(batch: int, heads: int, n: int, d: int, causal: bool) -> int:
    """FLOP of one attention forward: 4·N²·d per head, half for causal (integer)."""
    per_head = 4 * n * n * d
    return batch * heads * (per_head // 2 if causal else per_head)


def tflops(flop: int, ms: float) -> float:
    """TFLOP/s from a FLOP count and a time in milliseconds."""
    return flop / (ms * 1e-3) / 1e12


CHECK_BOUND = {"float32": 1e-4, "float16": 1e-2}


def _reference_one_head(q, k, v, causal):
    import torch
    n, d = q.shape[-2], q.shape[-1]
    s = (q[0, 0].double() @ k[0, 0].double().T) / math.sqrt(d)
    if causal:
        s = s.masked_fill(torch.ones((n, n), dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v[0, 0].double()


def run(args) -> tuple[list, bool]:
    import torch
    import torch.nn.functional as F
    from triton.testing import do_bench

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    flash_attention = importlib.import_module(args.module).flash_attention
    dtypes = {"float32": torch.float32, "float16": torch.float16}
    rows, all_ok = [], True
    started = time.monotonic()
    for dt in args.dtype:
        for d in args.d:
            for causal in args.causal:
                for n in args.n:
                    if time.monotonic() - started > args.budget_s:
                        print(f"budget of {args.budget_s} s spent; stopping before {dt} d={d} N={n}", file=sys.stderr)
                        return rows, all_ok
                    g = torch.Generator(device="cuda").manual_seed(n + d)
                    shape = (args.batch, args.heads, n, d)
                    q, k, v = (torch.randn(shape, generator=g, device="cuda").to(dtypes[dt]) for _ in range(3))
                    o = flash_attention(q, k, v, causal=bool(causal))
                    o_sdpa = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
                    limit = CHECK_BOUND[dt] * max(1.0, v.abs().max().item())
                    err_sdpa = (o.double() - o_sdpa.double()).abs().max().item()
                    err64 = None
                    if n <= 4096:
                        err64 = (o[0, 0].double() - _reference_one_head(q, k, v, causal)).abs().max().item()
                    ok = math.isfinite(err_sdpa) and err_sdpa <= limit and (err64 is None or err64 <= limit)
                    base = {"dtype": dt, "n": n, "d": d, "batch": args.batch, "heads": args.heads,
                            "causal": bool(causal), "flop": flops(args.batch, args.heads, n, d, bool(causal))}
                    row = dict(base, kernel=f"triton ({args.module})", check_ok=ok, max_err_vs_sdpa=err_sdpa,
                               max_err_vs_float64_head0=err64, ms=None, tflops=None)

                    def ours(q=q, k=k, v=v, causal=bool(causal)):
                        return flash_attention(q, k, v, causal=causal)

                    def sdpa(q=q, k=k, v=v, causal=bool(causal)):
                        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

                    if ok:
                        row["ms"] = do_bench(ours, return_mode="median")
                        row["tflops"] = tflops(row["flop"], row["ms"])
                    else:
                        all_ok = False
                    ms_sdpa = do_bench(sdpa, return_mode="median")
                    rows.append(row)
                    rows.append(dict(base, kernel="sdpa", check_ok=None, max_err_vs_sdpa=0.0,
                                     max_err_vs_float64_head0=None, ms=ms_sdpa,
                                     tflops=tflops(base["flop"], ms_sdpa)))
                    print(_line(row), file=sys.stderr)
                    del q, k, v, o, o_sdpa, ours, sdpa
                    torch.cuda.empty_cache()
    return rows, all_ok


def _line(row: dict) -> str:
    t = "not timed (check failed)" if row["ms"] is None else f"{row['ms']:.3f} ms, {row['tflops']:.1f} TFLOP/s"
    return (f"{row['kernel']:>20} {row['dtype']} d={row['d']} {'causal' if row['causal'] else 'full  '} "
            f"N={row['n']:,}: {t}; max err vs SDPA {row['max_err_vs_sdpa']:.2e}")


def markdown(rows: list) -> str:
    """A table: one line per (dtype, d, causal, N), Triton beside SDPA."""
    out = ["| dtype | d | mask | N | Triton ms | Triton TFLOP/s | SDPA ms | SDPA TFLOP/s "
           "| Triton / SDPA time | max err vs SDPA |",
           "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for tri, sd in zip(rows[0::2], rows[1::2], strict=True):
        ratio = "" if tri["ms"] is None else f"{tri['ms'] / sd['ms']:.2f}"
        tms = "check failed" if tri["ms"] is None else f"{tri['ms']:.3f}"
        ttf = "" if tri["tflops"] is None else f"{tri['tflops']:.1f}"
        out.append(f"| {tri['dtype']} | {tri['d']} | {'causal' if tri['causal'] else 'full'} | {tri['n']:,} | "
                   f"{tms} | {ttf} | {sd['ms']:.3f} | {sd['tflops']:.1f} | {ratio} | {tri['max_err_vs_sdpa']:.1e} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--module", default="starter", help="the file (without .py) that defines flash_attention")
    p.add_argument("--n", type=int, nargs="+", default=[1024, 4096, 16384])
    p.add_argument("--d", type=int, nargs="+", default=[16, 64, 128])
    p.add_argument("--dtype", nargs="+", default=["float32", "float16"], choices=["float32", "float16"])
    p.add_argument("--causal", type=int, nargs="+", default=[0, 1], choices=[0, 1])
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--budget-s", type=float, default=480.0, help="stop starting new sizes after this many seconds")
    p.add_argument("--json", help="write every row, with the GPU and versions, to this file")
    p.add_argument("--md", help="write the Markdown table to this file")
    args = p.parse_args(argv)
    try:
        import torch
        import triton
    except ImportError as exc:
        print(f"This benchmark needs PyTorch and Triton on an NVIDIA GPU ({exc}).", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("This benchmark needs a CUDA GPU; PyTorch sees none.", file=sys.stderr)
        return 2
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    t0 = time.monotonic()
    rows, ok = run(args)
    table = markdown(rows)
    print(table)
    meta = {"started": started, "seconds": round(time.monotonic() - t0, 1),
            "command": " ".join([os.path.basename(sys.argv[0])] + (argv if argv is not None else sys.argv[1:])),
            "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
            "cuda": torch.version.cuda, "python": platform.python_version(), "tf32": False,
            "flop_convention": "4*N^2*d per head, half for causal", "timing": "triton.testing.do_bench, median ms"}
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    if args.md:
        with open(args.md, "w", encoding="utf-8") as f:
            f.write(f"<!-- {json.dumps(meta)} -->\n" + table)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
