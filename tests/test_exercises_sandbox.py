"""Issue 23, items 3 to 6, in CPython: what a learner's code does to the
interpreter stays in its own run.

- Output (items 5, 6): the checker writes sys.stdout and sys.stderr through its
  own buffer (exercises.runner.Output), so a learner's ``sys.stdout.close()`` or
  ``sys.stdout = ...`` neither raises "I/O operation on closed file" nor loses
  what was printed, stderr reaches the learner, and output past the limit ends
  with a line saying how much was cut.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from exercises import content, runner

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = content.read(content.step("online-softmax", "scratch"), "solution.py")


# ---------------------------------------------------------------------------
# Output

def test_a_closed_stdout_keeps_what_was_printed_and_later_prints():
    before = sys.stdout, sys.stderr
    out = runner.run("import sys\nprint('before')\nsys.stdout.close()\nprint('after')\n")
    assert out == {"output": "before\nafter\n", "error": None}
    assert (sys.stdout, sys.stderr) == before


def test_a_replaced_stdout_is_put_back_after_the_run():
    before = sys.stdout, sys.stderr
    out = runner.run("import io, sys\nprint('mine')\nsys.stdout = io.StringIO()\nsys.stderr = None\nprint('lost')\n")
    assert out == {"output": "mine\n", "error": None}
    assert (sys.stdout, sys.stderr) == before


def test_stderr_reaches_the_learner_in_the_order_written():
    out = runner.run("import sys\nprint('one')\nprint('two', file=sys.stderr)\nsys.stderr.write('three\\n')\n")
    assert out["output"] == "one\ntwo\nthree\n"


def test_output_past_the_limit_says_how_much_was_cut():
    out = runner.run(f"print('x' * {runner.OUTPUT_LIMIT + 12_345})\n")
    kept, note = out["output"][:runner.OUTPUT_LIMIT], out["output"][runner.OUTPUT_LIMIT:]
    assert kept == "x" * runner.OUTPUT_LIMIT
    assert note == ("\n[… 12,346 more characters were printed and are not shown: the output is cut after "
                    "20,000 characters.]")
    assert runner.run("print('short')")["output"] == "short\n"


def test_a_check_whose_code_closes_stdout_still_passes_and_shows_its_prints():
    report = runner.check("online-softmax", "scratch", SCRATCH + "\nimport sys\nprint('hi')\nsys.stdout.close()\n")
    assert report["ok"] and report["output"] == "hi\n"


def test_the_offline_cli_reports_code_that_closes_stdout_without_a_traceback(tmp_path):
    mine = tmp_path / "mine.py"
    mine.write_text(SCRATCH + "\nimport sys\nprint('hi', file=sys.stderr)\nsys.stdout.close()\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "exercises", "check", "online-softmax", str(mine), "--step", "scratch"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr
    assert "-- printed --\nhi\n" in out.stdout and "tests pass" in out.stdout

