"""Time one kernel at other tilings than the manifest's, to choose its tiles.

    python -m bench.sweep_tiles --kernel fused-fast-16k --d 16 --rows 16 32 64 --cols 16 \
        --n 4096 --heads 1 32 [--limits default] [--tx 8 16]
    python -m bench.sweep_tiles --kernel fused-fast-16k --file fused_lanes.wgsl --d 64 \
        --rows 32 64 --cols 16 --r 2 4 --tx 2 4 [--swz 0 4] [--sdpa]

Each (B_r, B_c[, TX]) is patched into the manifest in memory (host and emulator alike),
checked against float64 at N = 300, then timed with cannery_host.wgsl.Runner.time. The
manifest file is not changed: copy the winner into kernels_wgsl/manifest.json by hand.
The shader is the manifest's for that kernel and d: fused_tiled.wgsl needs d / B_c in
{1, 2, 3, 4}; fused_streams.wgsl (d = 16, 64) takes any B_c and TX streams per row group
(``--tx``; B_c a multiple of 4 TX). ``--file fused_lanes.wgsl`` runs the subgroup kernel
instead, with R rows per invocation (``--r``), TX streams and the bank swizzle SWZ
(``--swz``); ``--sdpa`` times PyTorch's SDPA float32 at the same sizes in the same run.
"""
from __future__ import annotations

import argparse

import numpy as np

from bench.bench_wgsl import reference
from cannery_host import wgsl as host
from emulator.tiling import MANIFEST


def shader(kernel: str, d: int) -> str:
    """The .wgsl file the manifest runs for ``kernel`` at head dimension d."""
    return host.shader_file(MANIFEST["kernels"][kernel]["wgsl"][0], d)


def fits_lanes(d: int, br: int, bc: int, r: int, tx: int) -> bool:
    """Whether fused_lanes.wgsl supports these tiles (see its opening comment)."""
    td, tile4 = d // 16, bc * d // 4
    threads = td * tx * (br // r)
    return (br % bc == 0 and r in (1, 2, 4) and br % r == 0 and bc % (4 * tx) == 0 and br <= 4 * bc
            and threads <= min(256, tile4) and -(-tile4 // threads) <= 4)


def fits(kernel: str, d: int, br: int, bc: int, tx: int | None) -> bool:
    """Whether the kernel's shader supports these tiles (see each file's opening comment)."""
    if br % bc:
        return False  # the emulator's explicit tilings need B_r a multiple of B_c
    if shader(kernel, d) == "fused_streams.wgsl":
        if d not in (16, 64):
            return False
        rpi = 64 // d  # query rows per invocation
        tx = tx or bc // 4
        threads = tx * (br // rpi)
        tile4 = bc * d // 4
        return (br % rpi == 0 and tx >= 4 and bc % (4 * tx) == 0 and threads <= 256 and br <= 4 * bc
                and threads <= tile4 and tile4 <= 2 * threads)
    return (tx is None and br % 4 == 0 and bc % 4 == 0 and d % bc == 0 and d // bc <= 4
            and (br // 4) * (bc // 4) <= 256)


def patch(kernel: str, d: int, br: int, bc: int, tx: int | None, extra: dict | None = None,
          file: str | None = None) -> None:
    """Set the kernel's tiles (TX, other constants, shader file) at d in the in-memory manifest."""
    k = MANIFEST["kernels"][kernel]  # the one manifest the host and the emulator read
    if file:
        k["wgsl"][0].setdefault("file_by_d", {})[str(d)] = file
        k["wgsl"][0].setdefault("constants_by_d", {})[str(d)] = {}
    k["wgsl"][0].pop("with_subgroups", None)  # sweep exactly this shader
    streams = shader(kernel, d) in ("fused_streams.wgsl", "fused_lanes.wgsl")
    k["tiling"]["block_rows"][str(d)] = br
    k["tiling"]["block_cols"][str(d)] = bc
    k["workgroup_bytes"][str(d)] = 16 * bc * d if streams else 4 * (d * br + bc * bc + bc * br)
    by_d = k["wgsl"][0].setdefault("constants_by_d", {})
    if tx is not None:
        by_d.setdefault(str(d), {})["TX"] = tx
    by_d.setdefault(str(d), {}).update(extra or {})


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", default="fused-fast-16k")
    ap.add_argument("--d", type=int, default=16)
    ap.add_argument("--rows", type=int, nargs="+", default=[16, 32, 64])
    ap.add_argument("--cols", type=int, nargs="+", default=[16])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--heads", type=int, nargs="+", default=[1, 32])
    ap.add_argument("--limits", default="default")
    ap.add_argument("--tx", type=int, nargs="+", default=[None], help="fused_streams.wgsl: streams per row group")
    ap.add_argument("--file", default=None, help="shader to run instead of the manifest's (fused_lanes.wgsl)")
    ap.add_argument("--r", type=int, nargs="+", default=[None], help="fused_lanes.wgsl: rows per invocation")
    ap.add_argument("--swz", type=int, nargs="+", default=[None], help="fused_lanes.wgsl: bank swizzle")
    ap.add_argument("--sdpa", action="store_true", help="also time PyTorch SDPA float32 (needs CUDA)")
    a = ap.parse_args(argv)
    runner = host.Runner(limits=a.limits)
    if a.sdpa:
        from bench.bench_wgsl import time_torch
        for h in a.heads:
            t = time_torch(a.n, a.d, h, False)
            if t:
                print(f"SDPA fp32 d={a.d} heads={h}: {t['medianMs']:.3f} ms, "
                      f"{host.gflops(a.n, a.d, h, False) / (t['medianMs'] * 1e6):.0f} GFLOP/s", flush=True)
    rng = np.random.default_rng(3)
    lanes = a.file == "fused_lanes.wgsl"
    for br in a.rows:
        for bc, tx, r, swz in ((bc, tx, r, swz) for bc in a.cols for tx in a.tx for r in a.r for swz in a.swz):
            extra = {}
            if lanes:
                if not fits_lanes(a.d, br, bc, r, tx):
                    continue
                extra["R"] = r
                if swz is not None:
                    extra["SWZ"] = swz
            elif not fits(a.kernel, a.d, br, bc, tx):
                continue
            patch(a.kernel, a.d, br, bc, tx, extra, a.file)
            tag = (f"B_r={br} B_c={bc}{f' TX={tx}' if tx else ''}{f' R={r}' if r else ''}"
                   f"{f' SWZ={swz}' if swz is not None else ''}")
            Q, K, V = (rng.standard_normal((1, 300, a.d)).astype(np.float32) for _ in range(3))
            try:
                O, _ = runner.run(a.kernel, Q, K, V, True)
            except host.KernelError as e:
                print(f"{tag}: refused: {e}")
                continue
            err = float(np.abs(O - reference(Q, K, V, True)).max())
            for h in a.heads:
                res = runner.time(a.kernel, a.n, a.d, h, False)
                print(f"{tag} heads={h}: {res['medianMs']:.3f} ms, "
                      f"{host.gflops(a.n, a.d, h, False) / (res['medianMs'] * 1e6):.0f} GFLOP/s, "
                      f"max error {err:.1e}", flush=True)


if __name__ == "__main__":
    main()
