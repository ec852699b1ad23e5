"""The roofline of a native WebGPU device: the copy bandwidth and float32 arithmetic rate
that the lab's Time card measures on a visitor's GPU, with the same probe shaders
(kernels_wgsl/probes/), the same plan (planner.probe_plan) and the same sample rule
(cannery_host.probes), through wgpu-py.

Usage (on the H200, from the repository root; a few seconds):

    python3 -m bench.bench_roofline --json $OUT/roofline-h200.json
    python -m bench.bench_roofline --summary bench/results/roofline-h200.json

Conventions: bandwidth counts bytes read plus written by the copy probe (each byte of its
buffer once each way), per second; arithmetic counts 2 FLOP per fused multiply-add of the
FMA probe, per second; ridge = FLOP/s ÷ B/s, the FLOP per byte at which the two roofs meet
(Williams, Waterman and Patterson, "Roofline", CACM 52(4), 2009). The device is opened with
WebGPU's default limits (what a page gets) unless ``--limits max``.

JSON: {"started" (UTC), "date" (YYYY-MM-DD), "argv", "command", "adapter", "cpu_adapter",
"limits", "conventions", "bytes_per_second", "flop_per_second", "ridge_flop_per_byte",
"probes": cannery_host.probes.measure's answer}.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from cannery_host.probes import measure
from cannery_host.wgpu_runner import Runner

CONVENTIONS = ("bandwidth: bytes read plus written by probes/copy.wgsl per second; arithmetic: "
               "2 FLOP per fused multiply-add of probes/fma.wgsl per second; ridge = FLOP/s / B/s")


def command(argv) -> str:
    """The command line of a run as one would type it from the repository root."""
    return " ".join(["python3 -m bench.bench_roofline", *argv])


def run(a) -> dict:
    t0 = time.gmtime()
    runner = Runner(limits=a.limits)
    probes = measure(runner)
    device = runner.info["device"].lower()
    return {"started": time.strftime("%Y-%m-%d %H:%M:%S UTC", t0), "date": time.strftime("%Y-%m-%d", t0),
            "argv": ["bench/bench_roofline.py", *a.args], "command": command(a.argv), "adapter": runner.info,
            "cpu_adapter": any(x in device for x in ("llvmpipe", "lavapipe", "swiftshader")),
            "limits": a.limits, "conventions": CONVENTIONS,
            "bytes_per_second": probes["copy"]["bytes_per_second"],
            "flop_per_second": probes["fma"]["flop_per_second"],
            "ridge_flop_per_byte": probes["ridge"], "probes": probes}


def summary(r: dict) -> str:
    return (f"{r['adapter'].get('device', '?')} ({r['started']}): copy {r['bytes_per_second'] / 1e9:,.1f} GB/s, "
            f"float32 FMA {r['flop_per_second'] / 1e9:,.1f} GFLOP/s, ridge {r['ridge_flop_per_byte']:,.2f} FLOP/B "
            f"({r['probes']['elapsed_ms']:,.0f} ms)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--limits", default="default", choices=["default", "max"])
    ap.add_argument("--summary", type=Path, help="print a saved run and stop")
    a = ap.parse_args(argv)
    if a.summary:
        print(summary(json.loads(a.summary.read_text(encoding="utf-8"))))
        return 0
    a.args = list(sys.argv[1:] if argv is None else argv)
    a.argv = [x if not x.startswith("/") else "$OUT/" + Path(x).name for x in a.args]
    r = run(a)
    print(summary(r), flush=True)
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(r, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
