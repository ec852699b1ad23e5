"""docs/BENCHMARKS.md tells what bench/results/h200.json holds, and the benchmark commands
the docs show run as written.

The WGSL tables in the doc are printed by ``python -m bench.bench_wgsl --summary`` from
the saved run; this holds every line of that output to the doc, so neither can change
alone. Every ``python -m bench.…`` command in docs/*.md and README.md is run with
``--help`` as from a plain checkout: the installed packages on the path, but not this
project's editable install, so only ``-m`` from the repository root finds ``bench``,
``emulator`` and ``cannery_host`` (``python bench/x.py`` does not, and the docs may not
say it). The commands run as programs: tests do not import bench.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_doc_holds_the_summary_of_the_saved_run():
    out = plain_checkout(["-m", "bench.bench_wgsl", "--summary", "bench/results/h200.json"])
    assert out.returncode == 0, out.stderr
    doc = (ROOT / "docs" / "BENCHMARKS.md").read_text()
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    assert len(lines) > 40
    missing = [line for line in lines if line not in doc]
    assert missing == []


def test_the_doc_states_the_run_it_came_from():
    results = json.loads((ROOT / "bench" / "results" / "h200.json").read_text())
    doc = (ROOT / "docs" / "BENCHMARKS.md").read_text()
    started = results["started"].split()[1]  # "2026-11-30 04:27:10 UTC" -> "04:27:10"
    assert f"started {started} UTC, {round(results['elapsed_s'])} s" in doc


def test_the_doc_holds_the_summary_of_the_tuned_backward_run():
    """The tuned backward kernels' tables are ``python -m bench.bench_wgsl_backward --summary`` of the
    saved H200 run, line for line, and the section names the run's start."""
    saved = "bench/results/wgsl-backward-h200-tuned.json"
    out = subprocess.run([sys.executable, "-m", "bench.bench_wgsl_backward", "--summary", saved],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    doc = (ROOT / "docs" / "BENCHMARKS.md").read_text()
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    assert len(lines) > 40
    assert [line for line in lines if line not in doc] == []
    results = json.loads((ROOT / saved).read_text())
    started = results["started"].split()[1]
    assert f"started {started} UTC on the device, {round(results['elapsed_s'])} s" in doc



def test_the_doc_holds_the_summary_of_the_register_tiled_forward_run():
    """The register-tiled forward section's tables are ``python -m bench.bench_wgsl --summary`` of the saved
    H200 forward run, line for line, and the section names the run's start and length."""
    saved = "bench/results/wgsl-forward-h200.json"
    out = plain_checkout(["-m", "bench.bench_wgsl", "--summary", saved])
    assert out.returncode == 0, out.stderr
    doc = (ROOT / "docs" / "BENCHMARKS.md").read_text()
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    assert len(lines) > 30 and any("fused-reg" in line for line in lines)
    assert [line for line in lines if line not in doc] == []
    results = json.loads((ROOT / saved).read_text())
    started = results["started"].split()[1]
    assert f"started {started} UTC on the device,\n{round(results['elapsed_s'])} s" in doc
    for t in results["torch"]:  # every sample of SDPA is in the doc
        assert ", ".join(f"{x:.3f}" for x in t["samples"]) in doc

def test_the_summary_holds_a_second_plain_kernels_passes_to_the_copy_bandwidth_and_fused_reg(tmp_path):
    """A multi-pass forward kernel besides the lesson's plain (plain-reg) gets a row per size:
    its softmax pass against both copy bandwidths, its scores and P V passes against fused-reg's
    and the fastest fused kernel's GFLOP/s. Fed the saved H200 run with plain's own rows also
    filed as plain-reg, and the WGSL copy probe of the same session, the row must give the
    figures docs/BENCHMARKS.md quotes for plain at d = 64: 59% of the probe's 3,915 GB/s,
    55% of PyTorch's copy, 0.34 and 0.51 of fused-reg, 2.75x the fastest fused kernel."""
    results = json.loads((ROOT / "bench/results/wgsl-forward-h200.json").read_text())
    probe = json.loads((ROOT / "bench/results/wgsl-forward-h200-roofline.json").read_text())
    results["probes"] = {"copy_gbps": probe["bytes_per_second"] / 1e9}
    twins = [dict(r, kernel="plain-reg") for r in results["rows"] if r["kernel"] == "plain"]
    results["rows"] += twins
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(results))
    out = plain_checkout(["-m", "bench.bench_wgsl", "--summary", str(saved)])
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith("| plain-reg | 32 | 4,096 |")]
    assert len(rows) == 3  # d = 16, 64, 128
    assert ("| plain-reg | 32 | 4,096 | 64 | full | 55% | 59% | 0.34, 0.51 | 0.34, 0.51 (fused-reg) | 1.00× | "
            "2.75× (fused-reg) |") in rows
    # the saved run alone has no second plain kernel, so its summary (the doc's) has no such table
    plain = plain_checkout(["-m", "bench.bench_wgsl", "--summary", "bench/results/wgsl-forward-h200.json"])
    assert "softmax pass ÷ copy (WGSL probe)" not in plain.stdout


DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
# `python -m bench.x`, `python3 -m bench.x`, `.venv/bin/python -m bench.x`, in code or prose
MODULE_COMMAND = re.compile(r"(?<![\w/.-])(?:\.venv/bin/)?python3? -m (bench\.\w+)")
SCRIPT_COMMAND = re.compile(r"(?<![\w/.-])(?:\.venv/bin/)?python3? (bench/\w+\.py)")


def documented_modules() -> dict[str, list[str]]:
    """bench module -> the docs whose text runs it as `python -m`."""
    out: dict[str, list[str]] = {}
    for path in DOCS:
        for module in MODULE_COMMAND.findall(path.read_text(encoding="utf-8")):
            out.setdefault(module, []).append(path.name)
    return out


def plain_checkout(args: list[str]) -> subprocess.CompletedProcess:
    """Run this Python from the repository root without site processing (-S), with the
    installed packages on PYTHONPATH: numpy and wgpu import, the editable install of this
    project does not (its .pth is never read)."""
    env = {**os.environ, "PYTHONPATH": sysconfig.get_paths()["purelib"]}
    return subprocess.run([sys.executable, "-S", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def test_the_docs_show_the_benchmarks_as_modules():
    modules = documented_modules()
    assert {"bench.bench_wgsl", "bench.bench_wgsl_backward", "bench.bench_lab"} <= set(modules)
    scripts = {path.name: SCRIPT_COMMAND.findall(path.read_text(encoding="utf-8")) for path in DOCS}
    assert {name: found for name, found in scripts.items() if found} == {}


@pytest.mark.parametrize("module", sorted(documented_modules()))
def test_each_documented_benchmark_command_runs_from_a_plain_checkout(module):
    out = plain_checkout(["-m", module, "--help"])
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: ")


def test_the_script_form_fails_from_a_plain_checkout():
    """Why the docs say -m: run as a file, bench/ is the path's first entry and the
    project's packages are not found (so the check above can fail)."""
    out = plain_checkout(["bench/bench_wgsl.py", "--help"])
    assert out.returncode != 0
    assert "ModuleNotFoundError: No module named 'cannery_host'" in out.stderr
