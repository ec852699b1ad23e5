"""The float16 fused kernels (kernels_wgsl/fused_f16.wgsl) run natively through wgpu-py,
held to their mirror (emulator/float16_mirrors.py), row for row.

What is held here:
* on the model's held-out sentences (facts/held_out_f16.json), each float16 kernel's O
  read back from the GPU loses exactly the rows its mirror loses (inf or NaN), for every
  head the facts ship: all of them without the max subtraction, none with it;
* the same on random inputs at awkward sizes, with several query and key tiles, ragged
  last tiles and causal masks (the held-out sentences fit one key tile each, so the
  rescale across tiles is exercised here);
* on lavapipe, where every float16 operation is rounded as the mirror rounds it, O is
  the mirror's bit for bit (NaN matching NaN).

Skipped, saying why, where wgpu-py finds no adapter or the adapter has no shader-f16.
The instrumented byte counts of these kernels (2 bytes an element) are held to the
emulator's walk with every other forward kernel in tests/test_wgsl_native.py.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from emulator import float16_mirrors as f16
from emulator import mirrors
from emulator.inputs import random_qkv
from emulator.tiling import make_tiling

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent
DATA = json.loads((ROOT / "facts" / "held_out_f16.json").read_text("utf-8"))
FACTS = json.loads((ROOT / "facts" / "facts.json").read_text("utf-8"))["overflow"]["held_out"]["float16"]
KERNELS = f16.float16_kernels()
RIGHT, BROKEN = "fused-f16", "fused-f16-no-max"  # with and without the max subtraction


@pytest.fixture(scope="module")
def runner():
    """A wgpu-py device with shader-f16, or a skip saying why there is none."""
    try:
        from cannery_host.wgpu_runner import KernelError, Runner
    except ImportError as e:  # wgpu not installed
        pytest.skip(f"wgpu-py is not importable: {e}")
    try:
        r = Runner(limits="default")
    except (KernelError, RuntimeError) as e:
        pytest.skip(f"no WebGPU adapter for wgpu-py: {e}")
    if "shader-f16" not in r.features:
        pytest.skip(f"this adapter ({r.info['device'] or r.info['vendor']}) has no shader-f16, "
                    "so the float16 kernels cannot run on it")
    return r


def _bits(O: np.ndarray) -> list:
    """A GPU's O (float32 holding float16 values) -> float16 bit patterns, row-major."""
    return O.astype(np.float16).view(np.uint16).ravel().tolist()


def _lavapipe(runner) -> bool:
    return "llvmpipe" in (runner.info["device"] + runner.info["vendor"]).lower()


def test_the_gpu_loses_the_mirrors_rows_on_every_held_out_head(runner):
    inp = f16.held_out_inputs(DATA)
    heads = len(inp["heads"])
    assert heads == len(FACTS["heads"]) >= 1
    outputs = {name: [[] for _ in range(heads)] for name in KERNELS}
    for s in range(len(inp["lengths"])):
        # One run per sentence and kernel, the shipped heads side by side: (H, n, d).
        q, k, v = (np.array([h[x][s] for h in inp["heads"]], np.float32) for x in "QKV")
        for name in KERNELS:
            O, _ = runner.run(name, q, k, v)
            for i in range(heads):
                outputs[name][i].append(_bits(O[i]))
    lost = {name: 0 for name in KERNELS}
    for i, want in enumerate(FACTS["heads"]):
        rep = f16.held_out_report(DATA, i, {name: outputs[name][i] for name in KERNELS})
        for name in KERNELS:
            k = rep["kernels"][name]
            where = f"layer {rep['layer']} head {rep['head']}, {name}"
            assert k["gpu"]["lost"] == k["lost"], where
            assert k["gpu"]["agree"], where
            assert len(k["lost"]) == want["rows_lost"][name], where
            lost[name] += len(k["gpu"]["lost"])
            if _lavapipe(runner):
                assert k["gpu"]["identical_rows"] == rep["rows"], where
    assert lost == FACTS["rows_lost"]
    assert lost[RIGHT] == 0 < lost[BROKEN]


CASES = [(1, 16, False), (100, 16, False), (77, 32, True), (130, 32, False), (65, 64, True),
         (40, 128, False), (300, 16, True)]


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("n,d,causal", CASES, ids=[f"{n=}-{d=}-causal={c}" for n, d, c in CASES])
def test_random_inputs_across_tiles_lose_the_same_rows_on_the_gpu_and_the_mirror(runner, kernel, n, d, causal):
    q, k, v = random_qkv(n, d, seed=11)
    q = [[4.0 * x for x in row] for row in q]  # scores of several units, so some rows overflow
    O, _ = runner.run(kernel, np.array(q, np.float32), np.array(k, np.float32), np.array(v, np.float32), causal)
    t = make_tiling(kernel, n, d, causal)
    want = mirrors.run(kernel, {"Q": q, "K": k, "V": v, "causal": causal}, t.block_rows, t.block_cols)
    got = f16.compare(want["O"], O.astype(np.float64).tolist())
    assert got["lost"] == want["lost"]
    if _lavapipe(runner):
        assert got["identical_rows"] == n, got
    if kernel == RIGHT:
        assert want["lost"] == []


def test_the_broken_kernel_loses_rows_on_random_inputs_that_the_right_one_keeps(runner):
    """Guards the test above: at these sizes the scores do pass the float16 edge."""
    q, k, v = random_qkv(100, 16, seed=11)
    q = [[4.0 * x for x in row] for row in q]
    lost = {}
    for kernel in KERNELS:
        O, _ = runner.run(kernel, np.array(q, np.float32), np.array(k, np.float32), np.array(v, np.float32))
        lost[kernel] = f16.lost_rows(O.astype(np.float64).tolist())
    assert lost[RIGHT] == [] and len(lost[BROKEN]) > 0
