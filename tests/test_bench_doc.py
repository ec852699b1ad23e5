"""docs/BENCHMARKS.md tells what bench/results/h200.json holds.

The WGSL tables in the doc are printed by ``bench_wgsl.py --summary`` from the saved run;
this holds every line of that output to the doc, so neither can change alone.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.bench_wgsl import summary  # noqa: E402


def test_the_doc_holds_the_summary_of_the_saved_run():
    results = json.loads((ROOT / "bench" / "results" / "h200.json").read_text())
    doc = (ROOT / "docs" / "BENCHMARKS.md").read_text()
    lines = [line for line in summary(results).splitlines() if line.strip()]
    assert len(lines) > 40
    missing = [line for line in lines if line not in doc]
    assert missing == []


def test_the_doc_states_the_run_it_came_from():
    results = json.loads((ROOT / "bench" / "results" / "h200.json").read_text())
    doc = (ROOT / "docs" / "BENCHMARKS.md").read_text()
    started = results["started"].split()[1]  # "2026-11-30 04:27:10 UTC" -> "04:27:10"
    assert f"started {started} UTC, {round(results['elapsed_s'])} s" in doc
