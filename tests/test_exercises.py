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
pass every test."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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
# The skill-less answers: (slug, step, wrong answer) -> (the one test that fails, what its message says).
SKILL_LESS = {
    ("online-softmax", "scratch", "whole_row_max_first.py"): (
        "test_one_pass_over_the_tiles", "your code read every score 2 times (24 reads of 12 scores); "
        "an online softmax reads each tile once (4 tiles: 12 reads)"),
    ("online-softmax", "scratch", "copies_then_two_passes.py"): (
        "test_holds_one_tile_at_a_time", "16,384 random scores, block 32: your code held 16,384 scores at once "
        "(block = 32): an online softmax holds one block"),
    ("online-softmax", "scratch", "sorted_copy.py"): (
        "test_holds_one_tile_at_a_time", "your code held 16,384 scores at once (block = 32)"),
    ("online-softmax", "scratch", "tiles_kept_then_two_passes.py"): (
        "test_holds_one_tile_at_a_time", "your code held 16,384 scores at once (block = 32)"),
    ("online-softmax", "scratch", "floats_copied_one_by_one.py"): (
        "test_holds_one_tile_at_a_time", "(block = 32): that is a copy of every score; a tile needs about 2 KB: "
        "an online softmax holds one block"),
    ("online-softmax", "compose", "strip_with_values_alongside.py"): (
        "test_holds_a_tile_of_scores", "(N = 192, block_rows 4, block_cols 2): that is a block_rows × N strip of "
        "scores (768 numbers); a tile needs about 768 bytes: a tiled pass holds m, l and O for one query tile"),
    ("online-softmax", "compose", "tiles_into_a_whole_table.py"): (
        "test_holds_a_tile_of_scores", "(N = 192, block_rows 4, block_cols 2): that is an N × N table of scores"),
    ("online-softmax", "compose", "whole_row_softmax.py"): (
        "test_reads_like_the_fused_kernel", "N = 65, d = 4, seed 65, block_rows 32, block_cols 8, full: your code read "
        "every row of K once per row of Q (N = 65: 4,225 reads); a tiled pass reads it once per query tile "
        "(3 tiles: 195 reads)"),
    ("online-softmax", "compose", "whole_score_table.py"): (
        "test_reads_like_the_fused_kernel", "your code read every row of K once per row of Q (N = 65: 4,225 reads); "
        "a tiled pass reads it once per query tile (3 tiles: 195 reads)"),
    ("online-softmax", "compose", "block_rows_ignored.py"): (
        "test_reads_like_the_fused_kernel", "your code read every row of K once per row of Q (N = 65: 4,225 reads)"),
    ("online-softmax", "compose", "block_cols_ignored.py"): (
        "test_reads_like_the_fused_kernel", "your code read every row of K once per row of Q (N = 65: 4,225 reads)"),
    ("online-softmax", "compose", "two_passes_o_never_rescaled.py"): (
        "test_reads_like_the_fused_kernel", "your code read every row of K 2 times as often as a tiled pass "
        "(390 reads); a tiled pass reads it once per query tile (3 tiles: 195 reads)"),
    ("online-softmax", "compose", "causal_masks_every_tile.py"): (
        "test_reads_like_the_fused_kernel", "block_rows 16, block_cols 8, causal: your code read every row of K once "
        "per query tile, the key tiles wholly past the diagonal too (325 reads); a tiled pass reads it once per "
        "query tile, up to that tile's last row (5 tiles: 225 reads)"),
    ("online-softmax", "compose", "strip_of_scores_per_query_tile.py"): (
        "test_reads_like_the_fused_kernel", "your code read 65 rows of K before it used their rows of V, so it held "
        "the scores of 65 keys at once; a tiled pass holds those of one key tile (8 keys) at a time"),
    ("flash-backward", "harden", "whole_row_with_masks.py"): (
        "test_reads_like_the_fused_kernel", "your code read every row of K once per row of Q (N = 30: 900 reads); "
        "a tiled pass reads it once per query tile (4 tiles: 120 reads)"),
    ("flash-backward", "harden", "causal_masks_every_tile.py"): (
        "test_reads_like_the_fused_kernel", "your code read every row of V once per query tile, the key tiles "
        "wholly past the diagonal too (120 reads); a tiled pass reads it once per query tile, up to that tile's "
        "last row (4 tiles: 93 reads)"),
    ("flash-backward", "scratch", "p_table_stored.py"): (
        "test_reads_like_the_fused_backward", "your code read every row of K 2 times per row of Q (1,800 reads); "
        "a tiled pass reads each row of it once (30 reads)"),
    ("flash-backward", "scratch", "d_recomputed_for_every_key.py"): (
        "test_reads_like_the_fused_backward", "your code read every row of O once per key tile (150 reads); "
        "a tiled pass reads each row of it once (30 reads)"),
    ("flash-backward", "harden", "whole_row_softmax_tiled_reads.py"): (
        "test_holds_one_tile_of_scores", "(N = 129, block_rows 4, block_cols 2): that is a block_rows × N strip of "
        "scores (516 numbers); a tile needs about"),
    ("flash-backward", "harden", "score_table_filled_tile_by_tile.py"): (
        "test_holds_one_tile_of_scores", "that is an N × N table of scores (16,641 numbers)"),
    ("flash-backward", "scratch", "p_table_filled_tile_by_tile.py"): (
        "test_holds_no_table_of_p", "(N = 65, block_rows 4, block_cols 3): that is an N × N table of P "
        "(4,225 numbers); a tile needs about"),
    ("flash-backward", "scratch", "p_cache_of_every_pair.py"): (
        "test_holds_no_table_of_p", "that is an N × N table of P (4,225 numbers)"),
}


# The tests that watch how the code works (exercises.instruments, exercises.skill): a skill-less
# answer fails one of them at least, and no other.
INSTRUMENTS = {test for test, _says in SKILL_LESS.values()} | {"test_holds_one_tile_at_a_time",
                                                               "test_holds_a_tile_of_scores",
                                                               "test_holds_no_table_of_p",
                                                               "test_holds_one_tile_of_scores"}
# The answers that import the project's own modules at their top: refused as they load
# (exercises.guard), naming the module and the line: (slug, step, wrong answer) -> what the error says.
REFUSED_AT_LOAD = {
    ("online-softmax", "probe", "asks_the_emulator.py"): 'line 2, in <module>\n    from emulator import traffic\n'
                                                         "ImportError: emulator.traffic: this step runs your code "
                                                         "without the project's own modules",
    ("online-softmax", "probe", "import_module.py"): "import importlib\nImportError: importlib: this step runs",
    ("online-softmax", "probe", "sys_modules.py"): "import sys\nImportError: sys: this step runs",
    ("online-softmax", "compose", "imports_the_reference.py"): (
        "from emulator.attention import reference\nImportError: emulator.attention.reference: this step runs"),
    ("flash-backward", "scratch", "imports_the_reference.py"): (
        "from emulator.backward_reference import reference\n"
        "ImportError: emulator.backward_reference.reference: this step runs"),
    ("flash-backward", "harden", "imports_forward64.py"): (
        "from emulator.backward import forward64\nImportError: emulator.backward.forward64: this step runs"),
}
# Frame walks name a frame's attributes in their source: refused as they load too.
INSIDES = "this step runs your code without reaching into Python's own machinery"
REFUSED_AT_LOAD.update({
    ("online-softmax", "compose", "walks_to_the_tests_oracle.py"): f"SyntaxError: f_globals: {INSIDES}",
    ("flash-backward", "scratch", "frame_walk_to_the_oracle.py"): f"SyntaxError: f_locals: {INSIDES}",
    ("flash-backward", "harden", "frame_walk_to_the_oracle.py"): f"SyntaxError: f_globals: {INSIDES}",
})
# The answers that reach for them inside their function: every test that calls it fails, naming
# the module: (slug, step, wrong answer) -> (the first failing test, its message).
REFUSED_IN_TESTS = {
    ("online-softmax", "probe", "dynamic_import.py"): (
        "test_the_lesson_figures", 'io_bytes("plain", n=4,096, d=16, workgroup_bytes=16,384): emulator.traffic.count: '
        "this step runs your code without the project's own modules: the count is yours to write"),
    ("flash-backward", "scratch", "dynamic_import.py"): (
        "test_one_row", "N = 1, d = 4, seed 1, block_rows 1, block_cols 1, full: "
        "emulator.backward_reference.reference: this step runs your code without the project's own modules: "
        "the count is yours to write"),
    ("flash-backward", "harden", "dynamic_import.py"): (
        "test_random_ragged", "N = 1, d = 4, seed 1, block_rows 2, block_cols 2, full: importlib: this step runs your "
        "code without the project's own modules: the count is yours to write"),
}


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


@pytest.mark.parametrize("slug,step", STEPS, ids=[f"{a}-{b}" for a, b in STEPS])
def test_the_step_has_its_files_and_at_least_two_wrong_answers(slug, step):
    entry = content.step(slug, step)
    for name in ("prompt.md", "starter.py", "solution.py", "tests.py", "hints.md"):
        assert content.read(entry, name).strip(), name
    assert len(content.wrong_answers(entry)) >= 2


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


@pytest.mark.parametrize("slug,step,name", WRONG, ids=[f"{a}-{b}-{c[:-3]}" for a, b, c in WRONG])
def test_the_typical_wrong_answer_fails_and_names_its_input(slug, step, name):
    source = content.wrong_answers(content.step(slug, step))[name]
    report = runner.check(slug, step, source)
    if (slug, step, name) in REFUSED_AT_LOAD:
        assert REFUSED_AT_LOAD[slug, step, name] in report["error"], report["error"]
        return
    assert report["error"] is None
    failed = [r for r in report["results"] if not r["ok"]]
    assert not report["ok"] and failed
    for r in failed:
        assert r["input"], r  # the smallest failing input is named
        assert r["input"] in r["message"]


@pytest.mark.parametrize("slug,step,name", ALTERNATIVES, ids=[f"{a}-{b}-{c[:-3]}" for a, b, c in ALTERNATIVES])
def test_another_correct_answer_passes_whatever_its_loop_order(slug, step, name):
    report = runner.check(slug, step, (ANSWERS / slug / step / name).read_text(encoding="utf-8"))
    assert report["error"] is None, report["error"]
    assert report["ok"], [r["message"] for r in report["results"] if not r["ok"]]


def test_every_python_code_step_has_another_correct_answer_and_a_skill_less_wrong_one():
    code_steps = [(slug, st["id"]) for slug in content.slugs() for st in content.load(slug)["steps"]
                  if st.get("kind") == "code"]
    assert len(code_steps) >= 5  # the seed's five, a figure; a step added later adds to them
    for slug, step in code_steps:
        assert any(a[:2] == (slug, step) for a in ALTERNATIVES), (slug, step)
        assert any(k[:2] == (slug, step) for k in [*SKILL_LESS, *REFUSED_AT_LOAD, *REFUSED_IN_TESTS]), (slug, step)


@pytest.mark.parametrize("key", list(SKILL_LESS), ids=[f"{a}-{b}-{c[:-3]}" for a, b, c in SKILL_LESS])
def test_a_skill_less_answer_gets_the_numbers_right_and_fails_only_the_instrument_naming_what_it_did(key):
    slug, step, name = key
    test, says = SKILL_LESS[key]
    report = runner.check(slug, step, content.wrong_answers(content.step(slug, step))[name])
    failed = {r["name"]: r for r in report["results"] if not r["ok"]}
    assert test in failed and set(failed) <= INSTRUMENTS, [r["message"] for r in failed.values()]
    assert says in failed[test]["message"], failed[test]["message"]
    assert failed[test]["expected"] and failed[test]["got"]


@pytest.mark.parametrize("key", list(REFUSED_IN_TESTS), ids=[f"{a}-{b}-{c[:-3]}" for a, b, c in REFUSED_IN_TESTS])
def test_an_answer_that_imports_the_answer_inside_its_function_fails_every_test_that_calls_it(key):
    slug, step, name = key
    test, says = REFUSED_IN_TESTS[key]
    report = runner.check(slug, step, content.wrong_answers(content.step(slug, step))[name])
    assert report["error"] is None and not report["ok"]
    failed = [r for r in report["results"] if not r["ok"]]
    assert failed[0]["name"] == test and failed[0]["message"] == says, failed[0]["message"]
    module = says.split(": ")[-3]
    assert all(r["got"] == module for r in failed if r["name"] != "test_counts_the_bytes_itself")


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
                        if (slug, step, n) not in REFUSED_AT_LOAD)
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
