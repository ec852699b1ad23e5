"""Time one kernel at other tilings than the manifest's, to choose its tiles.

    python bench/sweep_tiles.py --kernel fused-fast-16k --d 16 --rows 16 32 64 --cols 16 \
        --n 4096 --heads 1 32 [--limits default]

Each (B_r, B_c) is patched into the manifest in memory (host and emulator alike), checked
against float64 at N = 300, then timed with bench.wgsl_host.Runner.time. The manifest
file is not changed: copy the winner into kernels_wgsl/manifest.json by hand.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import emulator.tiling as tiling  # noqa: E402
from bench import wgsl_host as host  # noqa: E402
from bench.bench_wgsl import reference  # noqa: E402


def patch(kernel: str, d: int, br: int, bc: int) -> None:
    """Set the kernel's tiles at d in both in-memory manifests (fused_tiled.wgsl sizes)."""
    for m in (host.MANIFEST, tiling.MANIFEST):
        k = m["kernels"][kernel]
        k["tiling"]["block_rows"][str(d)] = br
        k["tiling"]["block_cols"][str(d)] = bc
        k["workgroup_bytes"][str(d)] = 4 * (d * br + bc * bc + bc * br)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", default="fused-fast-16k")
    ap.add_argument("--d", type=int, default=16)
    ap.add_argument("--rows", type=int, nargs="+", default=[16, 32, 64])
    ap.add_argument("--cols", type=int, nargs="+", default=[16])
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--heads", type=int, nargs="+", default=[1, 32])
    ap.add_argument("--limits", default="default")
    a = ap.parse_args(argv)
    runner = host.Runner(limits=a.limits)
    rng = np.random.default_rng(3)
    for br in a.rows:
        for bc in a.cols:
            if br % bc or a.d % bc or a.d // bc > 4:
                continue
            patch(a.kernel, a.d, br, bc)
            Q, K, V = (rng.standard_normal((1, 300, a.d)).astype(np.float32) for _ in range(3))
            try:
                O, _ = runner.run(a.kernel, Q, K, V, True)
            except host.KernelError as e:
                print(f"B_r={br} B_c={bc}: refused: {e}")
                continue
            err = float(np.abs(O - reference(Q, K, V, True)).max())
            for h in a.heads:
                r = runner.time(a.kernel, a.n, a.d, h, False)
                print(f"B_r={br} B_c={bc} heads={h}: {r['medianMs']:.3f} ms, "
                      f"{host.gflops(a.n, a.d, h, False) / (r['medianMs'] * 1e6):.0f} GFLOP/s, "
                      f"max error {err:.1e}", flush=True)


if __name__ == "__main__":
    main()
