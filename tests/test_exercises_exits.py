"""Offline: every way out of a learner's function is a
failed test with a report, a file named like a standard module does not break
the checker, and --seconds takes only a usable time limit.

The checker runs as a learner runs it: ``python3 -S -E -m exercises check SLUG
FILE`` from a folder laid out as the offline kit is (course.kit's files, with
the pt-BR catalog compiled), with an empty environment, so the current folder
(where the learner saves json.py) is first on sys.path.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import i18n
from course import kit
from exercises import content, runner

SLUG, STEP = "online-softmax", "scratch"
NAMES = content.step(SLUG, STEP)["names"]
NAME = NAMES[0]
SOLUTION = content.read(content.step(SLUG, STEP), "solution.py")
TOTAL = len(runner.load_tests(content.step(SLUG, STEP)))
HEAD = f"== {SLUG} / {STEP}: 0 of {TOTAL} tests pass\n"


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """The kit's files (as course.kit writes them, catalogs compiled) in a fresh folder."""
    root = tmp_path_factory.mktemp("kit")
    files = kit.source_files()
    for lang in i18n.languages():
        if not lang.default:
            files[f"locale/{lang.locale}/LC_MESSAGES/python.mo"] = i18n.mo_bytes(lang, "python")
            files[f"locale/{lang.locale}/numbers.json"] = json.dumps(i18n.numbers(lang.code).symbols()).encode()
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    return root


def cli(folder: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-S", "-E", "-m", "exercises", *args], cwd=folder, env={},
                          capture_output=True, text=True, timeout=timeout)


def learner(folder: Path, body: str, name: str = "mine.py", head: str = "") -> str:
    """A file each of whose step's functions runs ``body``."""
    (folder / name).write_text(head + "".join(f"def {n}(*args, **kwargs):\n    {body}\n\n\n" for n in NAMES),
                               encoding="utf-8")
    return name


def test_a_correct_file_exits_0_with_a_report_of_passes(folder):
    (folder / "right.py").write_text(SOLUTION, encoding="utf-8")
    run = cli(folder, "check", SLUG, "right.py")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith(f"== {SLUG} / {STEP}: {TOTAL} of {TOTAL} tests pass\n")
    assert run.stdout.count("PASS  ") == TOTAL and "FAIL" not in run.stdout


# Ways out that Python can catch: the test fails with a sentence saying what happened.
CAUGHT = {
    "raise SystemExit(0)": "your code raised SystemExit (sys.exit(), exit() or quit()), which would end Python",
    "raise SystemExit('bye')": "your code raised SystemExit (sys.exit(), exit() or quit()), which would end Python",
    "import os; os._exit(0)": "your code called os._exit(0), which would end Python itself",
    "raise KeyboardInterrupt": "your code raised KeyboardInterrupt (what Ctrl+C raises)",
    "raise GeneratorExit": "your code raised GeneratorExit, which derives from BaseException and not from Exception",
    "raise Stop()": "your code raised Stop, which derives from BaseException and not from Exception",
}


@pytest.mark.parametrize("body", list(CAUGHT))
def test_an_exit_or_interrupt_in_a_learners_function_fails_each_test_with_a_sentence(folder, body):
    name = learner(folder, body, head="class Stop(BaseException):\n    pass\n\n\n")
    run = cli(folder, "check", SLUG, name)
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.startswith(HEAD), run.stdout + run.stderr
    fails = re.findall(r"^FAIL  .*\n      (.*)$", run.stdout, re.M)
    assert len(fails) == TOTAL and all(CAUGHT[body] in f for f in fails), run.stdout
    assert "Traceback (most recent call last)" not in run.stdout + run.stderr


# Ways out that end the process itself: the step's report says Python ended, and the exit is 1.
ENDED = {
    "import os; os.abort()": "Python was ended by the signal SIGABRT while your code ran, before the tests",
    "import os; os.kill(os.getpid(), 9)": "Python was ended by the signal SIGKILL",
    "import os; os.kill(os.getpid(), 15)": "Python was ended by the signal SIGTERM",
    "import os; os.close(1); os.close(2); os.kill(os.getpid(), 9)": "Python was ended by the signal SIGKILL",
    "import atexit, os; atexit.register(os._exit, 0); raise SystemExit(0)":
        "your code raised SystemExit (sys.exit(), exit() or quit())",
}


@pytest.mark.parametrize("body", list(ENDED))
def test_code_that_ends_its_process_still_gets_a_failed_report(folder, body):
    run = cli(folder, "check", SLUG, learner(folder, body))
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.startswith(HEAD) and ENDED[body] in run.stdout, run.stdout + run.stderr
    as_json = cli(folder, "check", SLUG, "mine.py", "--json")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)[0]["ok"] is False


def test_a_loop_that_outlives_the_alarm_is_ended_by_the_parent(folder):
    """A check refuses `import signal` (exercises.guard), but code can still catch the
    checker's one time-limit exception and loop on: the parent ends it."""
    body = ("while True:\n        try:\n            while True:\n                pass\n"
            "        except BaseException:\n            pass")
    run = cli(folder, "check", SLUG, learner(folder, body), "--seconds", "0.5")
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout == HEAD + "TimeLimit: stopped after 0.5 s: is there a loop that never ends?\n"


@pytest.mark.parametrize("seconds", ["-1", "0", "-0", "nan", "inf", "-inf", "1e300", "abc", ""])
def test_a_time_limit_that_is_not_a_usable_number_of_seconds_is_a_usage_error(folder, seconds):
    (folder / "right.py").write_text(SOLUTION, encoding="utf-8")
    run = cli(folder, "check", SLUG, "right.py", f"--seconds={seconds}")
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stdout == "" and "Traceback" not in run.stderr
    assert run.stderr.startswith("usage: python -m exercises check")
    said = re.search(r"error: argument --seconds: (.*)", run.stderr).group(1)
    assert said in (f"the time limit must be more than 0 s and at most 86,400 s, not {seconds}",
                    f"{seconds!r} is not a number of seconds"), said


def test_the_time_limit_message_is_in_portuguese_with_lang_pt_br(folder):
    run = cli(folder, "check", SLUG, "right.py", "--seconds", "0", "--lang", "pt-BR")
    assert run.returncode == 2
    assert "error: argument --seconds: o limite de tempo deve ser maior que 0 s e no máximo 86.400 s, não 0" in (
        run.stderr), run.stderr


def test_a_small_time_limit_stops_an_endless_loop(folder):
    run = cli(folder, "check", SLUG, learner(folder, "while True:\n        pass"), "--seconds", "0.5")
    assert run.returncode == 1
    assert run.stdout == HEAD + "TimeLimit: stopped after 0.5 s: is there a loop that never ends?\n"


def _checker_modules(folder: Path) -> list:
    """The standard modules the checker imports that a file in the current folder
    could shadow: imported by a check, not built in or frozen, and not already
    imported by runpy (which runs before the checker's first line)."""
    code = ("import sys, json; sys.path.append('.'); from exercises import runner, content, __main__; "
            f"runner.check({SLUG!r}, {STEP!r}, content.read(content.step({SLUG!r}, {STEP!r}), 'starter.py')); "
            "print(json.dumps({n.partition('.')[0]: getattr(getattr(m, '__spec__', None), 'origin', None) "
            "for n, m in list(sys.modules.items())}))")
    used = json.loads(subprocess.run([sys.executable, "-S", "-E", "-P", "-c", code], cwd=folder, env={},
                                     capture_output=True, text=True, check=True).stdout)
    early = json.loads(subprocess.run([sys.executable, "-S", "-E", "-P", "-c",
                                       "import runpy, sys; early = list(sys.modules); import json; "
                                       "print(json.dumps(early))"],
                                      capture_output=True, text=True, check=True).stdout)
    return sorted(n for n, origin in used.items() if n in sys.stdlib_module_names and origin not in (
        "built-in", "frozen", None) and n not in early)


def test_files_named_like_the_checkers_modules_are_named_and_do_not_break_it(folder, tmp_path):
    import shutil
    mine = tmp_path / "kit"
    shutil.copytree(folder, mine)
    shadowed = _checker_modules(mine)
    assert {"json", "tokenize", "argparse", "tomllib", "traceback"} <= set(shadowed), shadowed
    for name in shadowed:
        (mine / f"{name}.py").write_text(f"raise ImportError('the learner\\'s {name}.py was imported')\n")
    (mine / "right.py").write_text(SOLUTION, encoding="utf-8")
    run = cli(mine, "check", SLUG, "right.py")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith(f"== {SLUG} / {STEP}: {TOTAL} of {TOTAL} tests pass\n")
    assert "Traceback" not in run.stderr and "was imported" not in run.stdout + run.stderr
    for name in shadowed:
        assert (f"Note: {name}.py in this folder has the name of Python's module {name}, which the checker uses. "
                f"The checker used Python's own {name}; rename your file (my_{name}.py, say)") in run.stderr, name
    pt = cli(mine, "check", SLUG, "right.py", "--lang", "pt-BR")
    assert pt.returncode == 0 and "json.py nesta pasta tem o nome do módulo json do Python" in pt.stderr, pt.stderr


def test_a_learners_own_module_beside_the_file_can_still_be_imported(folder):
    (folder / "helpers.py").write_text(SOLUTION, encoding="utf-8")
    (folder / "uses.py").write_text(f"from helpers import {', '.join(NAMES)}\n", encoding="utf-8")
    run = cli(folder, "check", SLUG, "uses.py", "--step", STEP)
    assert run.returncode == 0, run.stdout + run.stderr
