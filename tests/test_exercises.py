"""The exercise checker (exercises/) and exercise 1's content: every step's
solution passes its tests, every typical wrong answer in wrong/ fails them
(and names the smallest input), the starter fails, learner errors show a
trimmed traceback, a loop that never ends is stopped, and the offline path
`python -m exercises check` gives the same verdicts in CPython.

Right numbers are not enough: the answers that get them without the skill
(untiled, the whole table built, block sizes ignored, P stored, D redone,
the causal skip done by masking) fail only the test that watches how the code
reads its inputs (exercises.instruments), with a message naming what the code
did; and other correct answers, in other loop orders (tests/exercise_answers/),
pass every test. What each wrong answer must do (the tests it fails, what the
first one says) is written beside it, in its step's wrong/expected.toml."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import wrong_expected

from exercises import content, runner
from exercises.testing import fmt

ROOT = Path(__file__).resolve().parent.parent
# Python steps only: exercise 4's WGSL steps are tested in tests/test_exercise_wgsl.py.
STEPS = [(slug, st["id"]) for slug in content.slugs() for st in content.load(slug)["steps"]
         if st.get("kind") != "wgsl"]
WRONG = [(slug, sid, name) for slug, sid in STEPS for name in content.wrong_answers(content.step(slug, sid))]
ANSWERS = ROOT / "tests" / "exercise_answers"
# Other correct answers, each beside its step: tests/exercise_answers/SLUG/STEP/*.py.
ALTERNATIVES = sorted((p.parent.parent.name, p.parent.name, p.name) for p in ANSWERS.glob("*/*/*.py"))
# What each wrong answer is expected to do, from its step's wrong/expected.toml (tests/wrong_expected.py):
# (slug, step) -> (the tests that watch how the code works, {answer name: its entry}).
EXPECTED = {(slug, sid): wrong_expected.load(content.step(slug, sid)) for slug, sid in STEPS}


def _expected(slug, step, name):
    return EXPECTED[slug, step][1].get(name, {})


REFUSED = "this step runs your code without the project's own modules"


@pytest.mark.parametrize("slug", content.slugs())
def test_every_step_folder_is_a_step_and_every_step_has_its_folder(slug):
    ex = content.load(slug)
    folder = Path(content.EXERCISES_DIR) / slug
    ids = [s["id"] for s in ex["steps"]]
    assert sorted(ids) == sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("_")
                                 and any(p.glob("*.md")))


def test_exercise_one_keeps_the_seeds_ladder_in_order():
    """The seed's figures, pinned: exercise 1's four steps, in this order (a step added
    later may stand anywhere among them), in the browser tier, 90 minutes of it."""
    ex = content.load("online-softmax")
    seed = ["predict", "scratch", "compose", "probe"]
    assert [s["id"] for s in ex["steps"] if s["id"] in seed] == seed
    assert ex["tier"] == "browser" and ex["minutes"] >= 90


EVERY_STEP = [(slug, st["id"]) for slug in content.slugs() for st in content.load(slug)["steps"]]


@pytest.mark.parametrize("slug,step", EVERY_STEP, ids=[f"{a}-{b}" for a, b in EVERY_STEP])
def test_the_step_has_the_files_its_loader_lists_and_at_least_two_wrong_answers(slug, step):
    """Every file exercises.content.step_files names for the step's kind (after.md aside,
    which is optional) is there and not empty; wrong/ holds two answers at least."""
    entry = content.step(slug, step)
    for name in content.step_files(entry, optional=False):
        assert content.read(entry, name).strip(), name
    # exercise 4's shaders (whole or patches), which tests/test_exercise_wgsl.py runs
    suffix = ".wgsl" if entry.get("kind") == "wgsl" else ".py"
    assert len(content.wrong_answers(entry, suffix)) >= 2


# Every wrong/ folder of every exercise (the Python steps', the WGSL steps', the Triton port's own),
# and each wrong answer in it by the name the learner sees: wrong/NAME or wrong/NAME.patch.
WRONG_FOLDERS = sorted(Path(content.EXERCISES_DIR).glob("**/wrong"))
STORED = [(folder.parent, name) for folder in WRONG_FOLDERS
          for suffix in (".py", ".wgsl") for name in content.wrong_answers({"dir": str(folder.parent)}, suffix)]


def test_every_wrong_folder_is_found_and_every_answer_or_patch_in_it_is_read():
    assert len(WRONG_FOLDERS) >= 11  # the seed's, a figure: five exercises, eleven folders
    for folder in WRONG_FOLDERS:
        names = {name for parent, name in STORED if parent == folder.parent}
        answers = {p.name.removesuffix(content.PATCH) for p in folder.iterdir()
                   if p.suffix in (".py", ".wgsl", content.PATCH)}
        assert answers == names, folder  # a patch of another name (x.patch) would be left out unseen


@pytest.mark.parametrize("folder,name", STORED, ids=[f"{f.relative_to(content.EXERCISES_DIR)}-{n}" for f, n in STORED])
def test_each_wrong_answer_is_stored_as_the_rule_says_and_a_patch_applies_to_todays_solution(folder, name):
    """A wrong answer is a patch against the folder's solution when that patch is at most
    PATCH_AT_MOST of its own length, a whole file otherwise (exercises/README.md)."""
    entry = {"dir": str(folder)}
    source = content.wrong_answer(entry, name)  # a patch applies, or this raises ContentError
    solution = (folder / ("solution" + Path(name).suffix)).read_text(encoding="utf-8")
    assert source.strip() and source != solution
    patch = folder / "wrong" / (name + content.PATCH)
    short = len(content.patch_of(entry, name, source).splitlines()) <= content.PATCH_AT_MOST * len(source.splitlines())
    assert patch.is_file() == short, f"store wrong/{name} {'as a patch' if short else 'whole'}"
    if short:  # the stored patch is what patch_of writes: its mistake in a few lines, nothing else
        assert patch.read_text(encoding="utf-8") == content.patch_of(entry, name, source)


def test_a_fix_to_the_solution_reaches_a_patched_wrong_answer_and_a_clash_says_which_patch(tmp_path):
    folder = tmp_path / "step"
    (folder / "wrong").mkdir(parents=True)
    source = Path(content.EXERCISES_DIR) / "flash-backward" / "scratch"
    (folder / "solution.py").write_text((source / "solution.py").read_text(encoding="utf-8"), encoding="utf-8")
    patch = (source / "wrong" / "l_of_the_key_row.py.patch").read_text(encoding="utf-8")
    (folder / "wrong" / "l_of_the_key_row.py.patch").write_text(patch, encoding="utf-8")
    entry = {"dir": str(folder)}
    before = content.wrong_answer(entry, "l_of_the_key_row.py")
    assert "p = math.exp(s - L[j])" in before and "p = math.exp(s - L[i])" not in before
    # a fix away from the patch's lines (it adds a line, so the hunks after it move) reaches the answer
    solution = (folder / "solution.py").read_text(encoding="utf-8")
    old, fix = "    d = len(Q[0])\n", "    # no query row: d from the keys\n    d = len(Q[0]) if Q else len(K[0])\n"
    assert solution.count(old) == 1
    (folder / "solution.py").write_text(solution.replace(old, fix), encoding="utf-8")
    after = content.wrong_answer(entry, "l_of_the_key_row.py")
    assert after == before.replace(old, fix) != before
    # a change to a line the patch removes: it no longer applies, and the error names it
    clash = solution.replace(old, fix).replace("p = math.exp(s - L[i])", "p = math.exp(s - L[i] + 0.0)")
    (folder / "solution.py").write_text(clash, encoding="utf-8")
    with pytest.raises(content.ContentError, match=r"wrong/l_of_the_key_row.py.patch does not apply to solution.py"):
        content.wrong_answer(entry, "l_of_the_key_row.py")
    (folder / "wrong" / "l_of_the_key_row.py").write_text(before, encoding="utf-8")
    with pytest.raises(content.ContentError, match="found both"):
        content.wrong_answer(entry, "l_of_the_key_row.py")


@pytest.mark.parametrize("slug,step", STEPS, ids=[f"{a}-{b}" for a, b in STEPS])
def test_the_solution_passes(slug, step):
    report = runner.check(slug, step, content.read(content.step(slug, step), "solution.py"))
    assert report["error"] is None, report["error"]
    assert report["ok"], [r["message"] for r in report["results"] if not r["ok"]]
    assert report["passed"] == report["total"] >= 2


@pytest.mark.parametrize("slug,step", STEPS, ids=[f"{a}-{b}" for a, b in STEPS])
def test_the_starter_fails(slug, step):
    report = runner.check(slug, step, content.read(content.step(slug, step), "starter.py"))
    assert not report["ok"]


@pytest.mark.parametrize("slug,step", STEPS, ids=[f"{a}-{b}" for a, b in STEPS])
def test_every_wrong_answer_has_its_expectation_beside_it(slug, step):
    """wrong/expected.toml names each answer exercises.content gives, and no other; its
    entries hold only the keys its header names, and `watch` only the step's own tests."""
    entry = content.step(slug, step)
    watch, answers = EXPECTED[slug, step]
    assert sorted(answers) == sorted(content.wrong_answers(entry)), wrong_expected.path(entry)
    tests = content.read(entry, "tests.py")
    assert all(f"def {t}(" in tests for t in watch), watch
    for name, e in answers.items():
        assert set(e) <= wrong_expected.KEYS and isinstance(e.get("fails"), list), (name, e)
        if e.get("skill_less"):
            assert e["fails"] and set(e["fails"]) <= set(watch) and e.get("says"), (name, e)
        if e.get("refused") or not e["fails"]:
            assert e.get("says"), (name, e)


@pytest.mark.parametrize("slug,step,name", WRONG, ids=[f"{a}-{b}-{c[:-3]}" for a, b, c in WRONG])
def test_the_typical_wrong_answer_fails_as_its_expectation_says_naming_its_input(slug, step, name):
    """The answer fails exactly the tests its entry lists, each naming the smallest input, the
    first with the entry's words. fails = []: refused as it loads (exercises.guard), the error
    naming the module and the line. skill_less: right numbers, so only the tests that watch how
    the code works fail, the message saying what it did. refused: it reached for the project's
    module inside its function, and every test that calls it says so."""
    exp = _expected(slug, step, name)
    report = runner.check(slug, step, content.wrong_answers(content.step(slug, step))[name])
    if exp.get("fails") == []:
        assert report["error"] and exp["says"] in report["error"], report["error"]
        return
    assert report["error"] is None, report["error"]
    failed = [r for r in report["results"] if not r["ok"]]
    assert not report["ok"] and [r["name"] for r in failed] == exp.get("fails"), [r["name"] for r in failed]
    for r in failed:
        assert r["input"], r  # the smallest failing input is named
        assert r["input"] in r["message"]
    assert exp.get("says", "") in failed[0]["message"], failed[0]["message"]
    if exp.get("skill_less"):
        assert set(exp["fails"]) <= set(EXPECTED[slug, step][0])
        assert failed[0]["expected"] and failed[0]["got"]
    if exp.get("refused"):
        assert failed[0]["message"].endswith(f"{exp['refused']}: {REFUSED}: the count is yours to write")
        assert all(r["got"] == exp["refused"] for r in failed), [r["got"] for r in failed]


@pytest.mark.parametrize("slug,step,name", ALTERNATIVES, ids=[f"{a}-{b}-{c[:-3]}" for a, b, c in ALTERNATIVES])
def test_another_correct_answer_passes_whatever_its_loop_order(slug, step, name):
    report = runner.check(slug, step, (ANSWERS / slug / step / name).read_text(encoding="utf-8"))
    assert report["error"] is None, report["error"]
    assert report["ok"], [r["message"] for r in report["results"] if not r["ok"]]


def test_every_python_code_step_has_another_correct_answer_and_a_skill_less_wrong_one():
    """A skill-less answer, or one that reaches for our reference (refused as it loads or in
    the tests): each code step has one, and another correct answer in tests/exercise_answers/."""
    code_steps = [(slug, st["id"]) for slug in content.slugs() for st in content.load(slug)["steps"]
                  if st.get("kind") == "code"]
    assert len(code_steps) >= 5  # the seed's five, a figure; a step added later adds to them
    for slug, step in code_steps:
        assert any(a[:2] == (slug, step) for a in ALTERNATIVES), (slug, step)
        answers = EXPECTED[slug, step][1].values()
        assert any(e.get("skill_less") or e.get("refused") or e.get("fails") == [] for e in answers), (slug, step)


def test_the_issue_example_message_for_a_missing_rescale():
    source = content.wrong_answers(content.step("online-softmax", "scratch"))["no_rescale.py"]
    report = runner.check("online-softmax", "scratch", source)
    first = report["results"][0]
    assert first["message"] == "scores [1, 2, 3, 0], block 2: expected l = 1.5530, got 2.4177"


def test_a_missing_max_subtraction_shows_the_overflow_with_a_traceback_of_the_learners_lines_only():
    source = content.wrong_answers(content.step("online-softmax", "compose"))["no_max_subtraction.py"]
    report = runner.check("online-softmax", "compose", source)
    bad = [r for r in report["results"] if not r["ok"]]
    assert len(bad) == 1 and "OverflowError" in bad[0]["message"]
    tb = bad[0]["traceback"]
    assert 'File "your_code.py"' in tb and "math.exp(x)" in tb
    assert "exercises" not in tb and "tests.py" not in tb  # checker frames are trimmed


def test_a_syntax_error_is_reported_with_its_line():
    report = runner.check("online-softmax", "scratch", "def online_softmax(scores, block)\n    return 1\n")
    assert not report["ok"] and "SyntaxError" in report["error"] and "line 1" in report["error"]


def test_a_missing_function_is_named():
    report = runner.check("online-softmax", "scratch", "x = 1\n")
    assert "does not define `online_softmax`" in report["results"][0]["message"]


def test_a_loop_that_never_ends_is_stopped_by_the_time_limit_in_cpython():
    source = "def online_softmax(scores, block):\n    while True:\n        pass\n"
    report = runner.check("online-softmax", "scratch", source, seconds=0.5)
    assert not report["ok"] and report["error"].startswith("TimeLimit")


def test_run_returns_prints_and_a_trimmed_error():
    out = runner.run("print('hello', 6 * 7)\n1 / 0\n")
    assert out["output"] == "hello 42\n"
    assert out["error"].endswith("ZeroDivisionError: division by zero")
    assert 'File "your_code.py", line 2' in out["error"]


def test_handle_answers_the_page_workers_requests():
    sol = content.read(content.step("online-softmax", "probe"), "solution.py")
    reply = runner.handle({"op": "check", "slug": "online-softmax", "step": "probe", "source": sol})
    assert reply["ok"] and reply["result"]["ok"]
    assert runner.handle({"op": "check", "slug": "nope", "step": "x", "source": ""})["ok"] is False


@pytest.mark.parametrize("x,shown", [(1.55302, "1.5530"), (0.0, "0.0"), (float("-inf"), "-inf"),
                                      (float("nan"), "nan"), (285736960, "285,736,960"), (1e-7, "1.0000e-07"),
                                      ((3.0, 1.5), "(3.0000, 1.5000)")])
def test_values_are_shown_as_a_learner_reads_them(x, shown):
    assert fmt(x) == shown


# ---------------------------------------------------------------------------
# The offline path, one test of each step's checker in CPython

def _cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "exercises", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("slug,step", STEPS, ids=[f"{a}-{b}" for a, b in STEPS])
def test_the_offline_cli_passes_the_solution_and_fails_a_wrong_answer(slug, step, tmp_path):
    entry = content.step(slug, step)
    mine = tmp_path / "my_solution.py"
    mine.write_text(content.read(entry, "solution.py"), encoding="utf-8")
    ok = _cli("check", slug, str(mine), "--step", step)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "FAIL" not in ok.stdout
    name, source = next((n, s) for n, s in sorted(content.wrong_answers(entry).items())
                        if _expected(slug, step, n).get("fails"))
    mine.write_text(source, encoding="utf-8")
    bad = _cli("check", slug, str(mine), "--step", step)
    assert bad.returncode == 1, bad.stdout
    assert "FAIL" in bad.stdout
    report = runner.check(slug, step, source)
    first = next(r for r in report["results"] if not r["ok"])
    assert first["message"] in bad.stdout  # the same verdict as in the page


def test_the_offline_cli_checks_every_step_a_single_file_defines(tmp_path):
    steps = content.load("online-softmax")["steps"]
    mine = tmp_path / "all.py"
    mine.write_text("\n\n".join(content.read(s, "solution.py") for s in steps), encoding="utf-8")
    out = _cli("check", "online-softmax", str(mine))
    assert out.returncode == 0, out.stdout + out.stderr
    for s in steps:
        assert f"online-softmax / {s['id']}:" in out.stdout


def test_the_offline_cli_says_what_it_needs_for_an_unknown_exercise(tmp_path):
    mine = tmp_path / "x.py"
    mine.write_text("x = 1\n", encoding="utf-8")
    out = _cli("check", "no-such-exercise", str(mine))
    assert out.returncode == 2 and "online-softmax" in out.stderr


def test_the_judge_op_reaches_the_exercises_judge_and_its_answer_is_valid_json():
    import json
    text = '{"Q": [[30.0], [1.0]], "K": [[30.0], [1.0]], "V": [[1.0], [-1.0]]}'
    reply = runner.handle({"op": "judge", "slug": "break-it", "request": {"op": "break", "bug": 2, "text": text}})
    assert reply["ok"]  # the judge answered (whether the input breaks bug 2 alone is break it's own test)
    assert reply["result"]["buggy"]["max_error"] == "inf"  # the kernel raised: no Infinity in the JSON
    json.loads(json.dumps(reply), parse_constant=lambda c: pytest.fail(f"{c} in the page's JSON"))
    assert runner.handle({"op": "judge", "slug": "online-softmax", "request": {"op": "bugs"}})["ok"] is False


def test_the_page_bundle_ships_what_the_break_it_judge_reads_at_its_paths(tmp_path):
    import json

    import build
    build.exercises_bundle(tmp_path)
    files = json.loads((tmp_path / "py" / "exercises.json").read_text(encoding="utf-8"))["files"]
    base = "site/content/exercises/break-it/"
    for name in ["kernel.py", "weak_tests.py"] + [f"bugs/{b['file']}" for b in
                                                   __import__("exercises.breakit", fromlist=["bugs"]).bugs()]:
        assert files[base + name] == (ROOT / base / name).read_text(encoding="utf-8"), name
    assert "site/content/exercises/flash-backward/scratch/tests.py" in files
    assert not any("solution" in p or "/wrong/" in p for p in files)  # answers are not in the judge's bundle


def test_the_offline_cli_sends_the_triton_port_to_pytest_on_a_gpu(tmp_path):
    mine = tmp_path / "x.py"
    mine.write_text("x = 1\n", encoding="utf-8")
    out = _cli("check", "triton-port", str(mine))
    assert out.returncode == 2 and "test_flash_triton.py" in out.stderr and "own GPU" in out.stderr
    listed = _cli("list")
    assert "triton-port" in listed.stdout and "Port · Compose" in listed.stdout


def test_handle_json_is_handle_through_json_text_as_the_page_worker_calls_it():
    sol = content.read(content.step("online-softmax", "probe"), "solution.py")
    request = {"op": "check", "slug": "online-softmax", "step": "probe", "source": sol}
    reply = json.loads(runner.handle_json(json.dumps(request)))
    assert reply["ok"] is True and reply["result"]["ok"] is True
    assert reply["result"]["passed"] == reply["result"]["total"] > 0
    assert json.loads(runner.handle_json(json.dumps({"op": "nope"})))["ok"] is False
