"""In CPython: what a learner's code does to the
interpreter stays in its own run.

- Output (items 5, 6): the checker writes sys.stdout and sys.stderr through its
  own buffer (exercises.runner.Output), so a learner's ``sys.stdout.close()`` or
  ``sys.stdout = ...`` neither raises "I/O operation on closed file" nor loses
  what was printed, stderr reaches the learner, and output past the limit ends
  with a line saying how much was cut.
- Shared state (item 4): what a Run or a Check replaces in builtins,
  sys.modules, a module or a class (exercises.sandbox) is named in "touched"
  and put back before the next request, so the official solution still passes
  and the tests' expected values are Python's own; a Check whose code patches
  them does not pass, naming what it changed.
"""
from __future__ import annotations

import builtins
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest

from exercises import content, instruments, runner, sandbox

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = content.read(content.step("online-softmax", "scratch"), "solution.py")


# ---------------------------------------------------------------------------
# Output

def test_a_closed_stdout_keeps_what_was_printed_and_later_prints():
    before = sys.stdout, sys.stderr
    out = runner.run("import sys\nprint('before')\nsys.stdout.close()\nprint('after')\n")
    assert out == {"output": "before\nafter\n", "error": None, "touched": []}
    assert (sys.stdout, sys.stderr) == before


def test_a_replaced_stdout_is_put_back_after_the_run():
    before = sys.stdout, sys.stderr
    out = runner.run("import io, sys\nprint('mine')\nsys.stdout = io.StringIO()\nsys.stderr = None\nprint('lost')\n")
    assert out == {"output": "mine\n", "error": None, "touched": []}
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


def test_a_check_whose_code_reaches_for_sys_to_close_stdout_is_refused_and_keeps_its_prints():
    """A Check runs the code without sys (exercises.guard): the prints before stay."""
    report = runner.check("online-softmax", "scratch", SCRATCH + "\nprint('hi')\nimport sys\nsys.stdout.close()\n")
    assert report["error"].endswith("ImportError: sys: this step runs your code without the project's own "
                                    "modules: the count is yours to write")
    assert report["output"] == "hi\n"


def test_the_offline_cli_reports_code_that_reaches_for_sys_without_a_traceback_of_its_own(tmp_path):
    mine = tmp_path / "mine.py"
    mine.write_text(SCRATCH + "\nprint('hi')\nimport sys\nsys.stdout.close()\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "exercises", "check", "online-softmax", str(mine), "--step", "scratch"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Traceback (most recent call last)" not in out.stdout + out.stderr
    assert "-- printed --\nhi\n" in out.stdout and "ImportError: sys: this step runs your code" in out.stdout


# ---------------------------------------------------------------------------
# Shared state

PATCHES = {
    "math.exp": "import math\nmath.exp = lambda x: 1.0\n",
    "builtins.len": "import builtins\nbuiltins.len = lambda x: 0\n",
    "sys.modules['math']": "import sys, types\nsys.modules['math'] = types.SimpleNamespace(exp=abs, inf=0.0)\n",
    "random.Random.random": "import random\nrandom.Random.random = lambda self: 0.5\n",
    "sys.setrecursionlimit": "import sys\nsys.setrecursionlimit(400)\n",
}


@pytest.mark.parametrize("name", PATCHES)
def test_a_run_that_patches_python_is_undone_and_the_next_check_passes(name):
    real = math.exp, builtins.len, sys.modules["math"], random.Random.random, sys.getrecursionlimit()
    out = runner.run(PATCHES[name] + "print('patched')\n")
    assert out["output"] == "patched\n" and out["error"] is None
    assert name in out["touched"]
    assert (math.exp, builtins.len, sys.modules["math"], random.Random.random, sys.getrecursionlimit()) == real
    for step in ("scratch", "compose"):
        solution = content.read(content.step("online-softmax", step), "solution.py")
        report = runner.check("online-softmax", step, solution)
        assert report["ok"] and report["touched"] == [], [r["message"] for r in report["results"] if not r["ok"]]


def test_a_check_whose_code_patches_math_at_load_fails_naming_it_and_python_is_put_back():
    report = runner.check("online-softmax", "scratch", "import math\nmath.exp = lambda x: 2.0 ** x\n" + SCRATCH)
    assert not report["ok"] and report["touched"] == ["math.exp"]
    last = report["results"][-1]
    assert last["title"] == "your code leaves Python's modules as they were" and not last["ok"]
    assert last["message"].startswith("your code changed math.exp.")
    assert report["total"] == len(report["results"]) and report["passed"] == report["total"] - 1
    assert math.exp(1.0) == 2.718281828459045


def test_code_that_patches_its_builtins_in_a_check_changes_only_its_own():
    """A Check gives the code builtins of its own (exercises.guard): `import builtins`
    is refused, and a patched `__builtins__` reaches neither the tests nor Python."""
    sneaky = SCRATCH + "\n_real = online_softmax\ndef online_softmax(scores, block):\n" \
        "    __builtins__['max'] = lambda *a, **k: 0.0\n    return _real(scores, block)\n"
    report = runner.check("online-softmax", "scratch", sneaky)
    assert not report["ok"] and report["touched"] == []
    assert "expected m = 3" in report["results"][0]["message"]  # its own max is broken; the tests' is not
    assert max(1, 2) == 2
    refused = runner.check("online-softmax", "scratch", "import builtins\n" + SCRATCH)
    assert "ImportError: builtins: this step runs your code" in refused["error"]


def test_a_patched_instrument_is_caught_too():
    """Hiding the reads of a whole-row softmax by patching the counting lists must not pass."""
    snap = sandbox.Snapshot()
    cls = next(v for v in vars(instruments).values() if isinstance(v, type) and v.__module__ == instruments.__name__)
    original = cls.__dict__.get("__getitem__", None)
    cls.__getitem__ = lambda self, i: 0
    try:
        assert f"exercises.instruments.{cls.__name__}.__getitem__" in snap.changes()
    finally:
        snap.restore()
    assert cls.__dict__.get("__getitem__", None) is original
    assert snap.changes() == []


def test_a_library_rebinding_its_own_plain_values_is_no_change_but_math_pi_is():
    """tempfile.tempdir is filled in lazily, and hypothesis keeps timers at module
    level: neither is the learner's doing. math.pi (a C module's) is."""
    import tempfile

    saved = tempfile.tempdir
    snap = sandbox.Snapshot()
    tempfile.tempdir = "/somewhere/else"
    math.pi = 3.0
    try:
        assert snap.changes() == ["math.pi"]
    finally:
        snap.restore()
        tempfile.tempdir = saved
    assert math.pi == 3.141592653589793


# ---------------------------------------------------------------------------
# Nesting: what Pyodide's C stack does not survive is refused
# before compile() or ast.parse() sees it, in words, the same in the CLI.

DEEP = {
    "a 2,000-term sum (ast.parse of it kills Pyodide)": "x = 1" + " + 1" * 2000 + "\n",
    "150 nested list brackets": "x = " + "[" * 150 + "]" * 150 + "\n",
    "300 chained calls": "f = print\nf" + "()" * 300 + "\n",
    "a deep line after good ones": SCRATCH + "\ny = " + "(" * 120 + "1" + " - 1" * 100 + ")" * 120 + "\n",
}


@pytest.mark.parametrize("name", DEEP)
def test_deeply_nested_code_is_refused_in_words_by_run_and_check(name):
    source = DEEP[name]
    line = source.count("\n")  # the deep line is the last
    out = runner.run(source)
    assert out["output"] == ""
    assert out["error"].startswith(f'  File "your_code.py", line {line}'), out["error"]
    assert out["error"].splitlines()[-1].startswith("SyntaxError: nested too deeply: about ")
    assert out["error"].endswith("and the checker takes at most 100 (Python in a browser runs out of stack)")
    report = runner.check("online-softmax", "scratch", source)
    assert not report["ok"] and report["results"] == [] and "nested too deeply" in report["error"]


def test_the_nesting_estimate_counts_chains_not_flat_data():
    assert sandbox.nesting_depth("x = [" + ", ".join(["-1.5"] * 5000) + "]\n") == (2, 1)
    assert sandbox.nesting_depth("a = 1\nb = (2 + (3 * 4))\n") == (4, 2)
    assert sandbox.nesting_depth("print('unterminated\n") == (0, 0)
    assert sandbox.nesting_depth("x = " + "-" * 201 + "1\n")[0] == 201


def test_every_shipped_python_file_is_far_from_the_nesting_limit():
    files = [*ROOT.joinpath("site", "content").rglob("*.py"), *ROOT.joinpath("emulator").glob("*.py"),
             *ROOT.joinpath("exercises").glob("*.py")]
    worst = max(sandbox.nesting_depth(p.read_text(encoding="utf-8"))[0] for p in files)
    assert len(files) > 50 and 10 < worst <= sandbox.MAX_DEPTH // 4


def test_a_deeply_nested_break_it_input_gets_the_plain_message():
    from exercises import breakit
    from exercises.breakit import InputError

    with pytest.raises(InputError, match="^That input is nested too deeply to read.$"):
        breakit.parse_input("{'Q': " + "[" * 150 + "]" * 150 + "}")
    with pytest.raises(InputError, match="^That input is nested too deeply to read.$"):
        breakit.parse_input("{'Q': 1" + " + 1" * 3000 + "}")


def test_the_cli_refuses_deep_code_without_a_traceback(tmp_path):
    mine = tmp_path / "deep.py"
    mine.write_text(SCRATCH + "\nx = 1" + " + 1" * 100_000 + "\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "exercises", "check", "online-softmax", str(mine), "--step", "scratch"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "Traceback (most recent call last)" not in out.stdout + out.stderr
    assert "SyntaxError: nested too deeply: about 100,000 brackets" in out.stdout, out.stdout + out.stderr


# ---------------------------------------------------------------------------
# Public bug reports tried (pyodide/pyodide#5775 input(), #4864 exit())

def test_input_gets_end_of_file_at_once_instead_of_waiting_on_the_terminal(tmp_path):
    """In the CLI, input() in learner code waited on the terminal until the time limit
    said "is there a loop that never ends?"; now it ends at once with EOFError."""
    mine = tmp_path / "ask.py"
    mine.write_text("x = input('how many tiles? ')\n" + SCRATCH, encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "exercises", "check", "online-softmax", str(mine), "--step",
                             "scratch"], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        out, _ = proc.communicate(timeout=60)  # stdin stays open: nothing is ever typed
    finally:
        proc.kill()
    assert "EOFError: EOF when reading a line" in out and "loop that never ends" not in out, out


def test_os_exit_in_learner_code_is_reported_and_python_lives_on(tmp_path):
    out = runner.run("import os\nprint('bye')\nos._exit(3)\n")
    assert out["output"] == "bye\n" and out["touched"] == []
    assert out["error"].endswith("SystemExit: os._exit(3) would end Python itself; "
                                 "the checker stopped your code instead")
    import os
    assert os._exit.__module__ in ("posix", "nt")
    mine = tmp_path / "quit.py"
    mine.write_text(SCRATCH + "\nimport os\nos._exit(0)\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "exercises", "check", "online-softmax", str(mine), "--step",
                           "scratch"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "SystemExit: os._exit(0) would end Python itself" in proc.stdout, proc.stdout + proc.stderr


# ---------------------------------------------------------------------------
# Deleted builtins, and every way out of a learner's function

DELETIONS = {
    "all and len": "del builtins.all, builtins.len",
    "compile, exec and __import__": "del builtins.compile, builtins.exec, builtins.__import__",
    "every builtin": "for k in list(vars(builtins)):\n        delattr(builtins, k)",
}


@pytest.mark.parametrize("what", list(DELETIONS))
def test_deleted_builtins_are_put_back_and_the_next_check_passes(what):
    """Run, the one place the code reaches Python's own builtins (a Check refuses
    `import builtins`, exercises.guard), deletes them: they are put back before Run
    returns, and the next Check of the solution passes; in a Check the same code is
    refused as it imports builtins, and the builtins stay as they were."""
    body = DELETIONS[what]
    source = SCRATCH + "\nimport builtins\nif True:\n    " + body + "\n"
    before = dict(vars(builtins))
    run = runner.run(source)
    assert dict(vars(builtins)) == before
    assert run["touched"] and run["touched"][0].startswith("builtins.")
    assert runner.check("online-softmax", "scratch", SCRATCH)["ok"]
    refused = runner.check("online-softmax", "scratch", source)
    assert not refused["ok"] and "ImportError: builtins: this step runs your code" in refused["error"]
    assert dict(vars(builtins)) == before and math.exp(1.0) == 2.718281828459045


def test_a_forged_module_added_under_a_standard_name_is_named_and_removed():
    source = SCRATCH + "\nimport sys, types\nsys.modules['fractions'] = types.ModuleType('fractions')\n"
    sys.modules.pop("fractions", None)
    out = runner.run(source)
    assert out["touched"] == ["sys.modules['fractions']"] and "fractions" not in sys.modules
    import fractions  # a real import afterwards is no change
    assert fractions.Fraction(1, 2) == 0.5 and sandbox.Snapshot().changes() == []


WAYS_OUT = {
    "raise SystemExit(0)": "your code raised SystemExit (sys.exit(), exit() or quit()), which would end Python; "
                           "the checker stopped it there. A function gives its answer with return.",
    "import os; os._exit(3)": "your code called os._exit(3), which would end Python itself; the checker stopped it "
                              "there. A function gives its answer with return.",
    "raise KeyboardInterrupt": "your code raised KeyboardInterrupt (what Ctrl+C raises), which would stop the "
                               "checker; the checker stopped your code there instead.",
    "raise GeneratorExit": "your code raised GeneratorExit, which derives from BaseException and not from "
                           "Exception: it would get past the checker's handlers and stop it, so the checker stopped "
                           "your code there.",
    "raise Mine()": "your code raised Mine, which derives from BaseException and not from Exception: it would get "
                    "past the checker's handlers and stop it, so the checker stopped your code there.",
    "return 10**400, 10**400": "scores [1, 2, 3, 0], block 2: expected m = 3.0000, got an integer of 401 digits",
    "return 10**5000, 1.0": "scores [1, 2, 3, 0], block 2: expected m = 3.0000, got an integer of 5,001 digits",
}


@pytest.mark.parametrize("body", list(WAYS_OUT))
def test_every_way_out_of_a_learners_function_is_a_failed_test_with_a_sentence(body):
    source = (SCRATCH + "\nclass Mine(BaseException):\n    pass\n\n\n"
              f"def online_softmax(scores, block):\n    {body}\n")
    report = runner.check("online-softmax", "scratch", source)
    worked = report["results"][0]
    assert not worked["ok"] and report["error"] is None and report["touched"] == []
    if body.startswith("return"):  # the int too large for float(), and for str() (CPython gh-95778)
        assert worked["message"] == WAYS_OUT[body]
    else:
        assert worked["message"] == "scores [1, 2, 3, 0], block 2: " + WAYS_OUT[body]
        assert 'your_code.py", line' in worked["traceback"]
    assert report["passed"] == sum(r["ok"] for r in report["results"]) < report["total"]


def test_an_error_the_tests_own_code_raises_on_a_returned_value_is_not_blamed_on_the_learner(tmp_path):
    """A synthetic step whose tests convert what the learner's code returned: the
    conversion's error is the tests' (float(10**400), len(3)), worded as such."""
    step = tmp_path / "demo" / "only"
    step.mkdir(parents=True)
    (tmp_path / "demo" / "exercise.toml").write_text(
        'title = "demo"\norder = 1\n[[steps]]\nid = "only"\nnames = ["f"]\n', encoding="utf-8")
    (step / "tests.py").write_text(
        "from exercises.testing import given\n\n"
        "def test_as_float(mod):\n    with given('x = 1'):\n        float(mod.f())\n\n"
        "def test_as_list(mod):\n    with given('x = 2'):\n        len(mod.f())\n", encoding="utf-8")
    report = runner.check("demo", "only", "def f():\n    return 10**400\n", base=str(tmp_path))
    first, second = (r["message"] for r in report["results"])
    assert first == ("x = 1: the tests could not use what your code returned: working with it raised "
                     "OverflowError (int too large to convert to float)")
    assert second == ("x = 2: the tests could not use what your code returned: working with it raised "
                      "TypeError (object of type 'int' has no len())")
    mine = runner.check("demo", "only", "def f():\n    return 1 / 0\n", base=str(tmp_path))
    assert mine["results"][0]["message"] == "x = 1: your code raised ZeroDivisionError"


def test_a_learners_exception_whose_str_raises_is_still_named_with_its_input():
    source = (SCRATCH + "\nclass E(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\n\n\n"
              "def online_softmax(scores, block):\n    raise E()\n")
    worked = runner.check("online-softmax", "scratch", source)["results"][0]
    assert worked["message"] == "scores [1, 2, 3, 0], block 2: your code raised E"
    assert worked["traceback"].endswith("E: <exception str() failed>")
