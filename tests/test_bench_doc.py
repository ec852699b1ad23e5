"""docs/BENCHMARKS.md tells what bench/results/h200.json holds.

The WGSL tables in the doc are printed by ``python -m bench.bench_wgsl --summary`` from
the saved run; this holds every line of that output to the doc, so neither can change
alone. The command runs as a program: tests do not import bench.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_doc_holds_the_summary_of_the_saved_run():
    out = subprocess.run([sys.executable, "-m", "bench.bench_wgsl", "--summary", "bench/results/h200.json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
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
    """The issue 22 section's tables are ``python -m bench.bench_wgsl_backward --summary`` of the
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
