"""Time the lesson's fused kernel (fused.wgsl / fused_lanes.wgsl) at its own tiles with
other rows per invocation (R) and key streams (TX) than the shaders' defaults.

    python -m bench.sweep_lesson --d 16 64 128 --n 4096 --heads 32 [--subgroups 1 0]
    python -m bench.sweep_lesson --plain --d 16 64 128   # plain's scores and P V passes

The tiles stay the lesson's (B_r = (M/2) / (4 d), B_c = B_r / 2, M = 16,384), so every
configuration moves the same bytes; only the work inside a workgroup changes. Each
configuration is patched into the in-memory manifest (the file is not changed), checked
against float64 at N = 300, causal, then timed with cannery_host.wgpu_runner.Runner.time.
"""
from __future__ import annotations

import argparse

import numpy as np

from bench.bench_wgsl import reference
from cannery_host import wgpu_runner as host
from emulator.tiling import MANIFEST, lesson_blocks


def valid(d: int, br: int, bc: int, r: int, tx: int) -> bool:
    """What fused.wgsl needs (see its opening comment): R divides B_r, at most 256
    invocations, at most 4 vec4s of K each, the lanes' partial scores within the half."""
    td, tile4 = d // 16, bc * d // 4
    if br % r:
        return False
    threads = td * tx * br // r
    return threads <= 256 and threads <= tile4 and -(-tile4 // threads) <= 4 and threads * r <= 2 * tile4


def sweep_plain(a, runner) -> None:
    """plain_scores.wgsl with R rows a block and TZ column slices; plain_pv.wgsl with R rows
    and CV column groups an invocation. Each pass timed alone (the others' buffers are zero)."""
    specs = MANIFEST["kernels"]["plain"]["wgsl"]
    rng = np.random.default_rng(5)
    for d in a.d:
        br, bc = lesson_blocks(d, 16384)
        tries = [(0, {"R": r, "TZ": tz}) for r in (2, 4) for tz in (1, 2, 4, 8)
                 if tz <= d // 4 and (tz == 1 or (bc % 4 == 0 and tz * br <= d)) and br % r == 0]
        tries += [(2, {"R": r, "CV": cv}) for r in (1, 2, 4) for cv in (1, 2, 4)
                  if br % r == 0 and (br // r) * (d // 4 // cv) <= 256 and cv <= d // 4]
        for pi, c in tries:
            saved = dict(specs[pi].get("constants", {}))
            specs[pi]["constants"] = {**saved, **c}
            runner._pipelines.clear()
            Q, K, V = (rng.standard_normal((1, 300, d)).astype(np.float32) for _ in range(3))
            O, _ = runner.run("plain", Q, K, V, True)
            err = float(np.abs(O - reference(Q, K, V, True)).max())
            res = runner.time("plain", a.n, d, a.heads, False, passes=(pi,))
            print(f"plain {specs[pi]['pass']} d={d} {br}x{bc} {c}: {res['medianMs']:.3f} ms, "
                  f"{2 * host.gflops(a.n, d, a.heads, False) / 4 / (res['medianMs'] * 1e6):.0f} GFLOP/s, "
                  f"max error {err:.1e}", flush=True)
            specs[pi]["constants"] = saved


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--d", type=int, nargs="+", default=[16, 64, 128])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--r", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--tx", type=int, nargs="+", default=[1, 2, 4, 8])
    ap.add_argument("--subgroups", type=int, nargs="+", default=[1])
    ap.add_argument("--plain", action="store_true", help="sweep plain's matrix passes instead")
    a = ap.parse_args(argv)
    if a.plain:
        sweep_plain(a, host.Runner(limits="default"))
        return
    spec = MANIFEST["kernels"]["fused"]["wgsl"][0]
    rng = np.random.default_rng(4)
    for sg in a.subgroups:
        runner = host.Runner(limits="default", subgroups=bool(sg))
        for d in a.d:
            br, bc = lesson_blocks(d, 16384)
            for r in a.r:
                for tx in a.tx:
                    if not valid(d, br, bc, r, tx):
                        continue
                    c = {"R": r, "TX": tx}
                    spec.setdefault("constants_by_d", {})[str(d)] = dict(c)
                    if str(d) in spec.get("with_subgroups", {}).get("constants_by_d", {}):
                        spec["with_subgroups"]["constants_by_d"][str(d)] = {"RESCALE": True, **c}
                    runner._pipelines.clear()
                    Q, K, V = (rng.standard_normal((1, 300, d)).astype(np.float32) for _ in range(3))
                    O, _ = runner.run("fused", Q, K, V, True)
                    err = float(np.abs(O - reference(Q, K, V, True)).max())
                    res = runner.time("fused", a.n, d, a.heads, False)
                    print(f"subgroups={sg} d={d} {br}x{bc} R={r} TX={tx} shader={runner.shader('fused', d)}: "
                          f"{res['medianMs']:.3f} ms, "
                          f"{host.gflops(a.n, d, a.heads, False) / (res['medianMs'] * 1e6):.0f} "
                          f"GFLOP/s, max error {err:.1e}", flush=True)


if __name__ == "__main__":
    main()
