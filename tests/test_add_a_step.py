"""A step is added by what exercises/README.md ("Adding a step") lists, and nothing else.

In a temporary copy of what the checker and its tests read (exercises/, emulator/, the
exercises' content and its Brazilian Portuguese, the catalogs, tests/test_exercises.py and
its other correct answers), the test adds ``scratch-again`` to exercise 1: a copy of the
Scratch step's folder (prompt, hints, starter, solution, tests, wrong answers with their
wrong/expected.toml, teaching notes), its ``[[steps]]`` entry in exercise.toml, another
correct answer in tests/exercise_answers/, and its pt-BR overlay (the folder and the
step's title). The test holds every other file's bytes to the tree's. Then, in the copy:

- the copy's own tests/test_exercises.py, unedited, finds the step in each test
  parametrized by the steps (its files, solution, starter, every wrong answer held to its
  expected.toml, the other correct answer, the offline CLI) and passes;
- ``python -m i18n check`` passes with the overlay, and without it fails naming exactly
  the step's Portuguese files and title: the overlay is needed, and is all that is needed.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SLUG, FROM, NEW = "online-softmax", "scratch", "scratch-again"
EX = Path("site/content/exercises") / SLUG
PT = Path("site/content/pt-BR/exercises") / SLUG
ANSWERS = Path("tests/exercise_answers") / SLUG

# What the checker, tests/test_exercises.py and `python -m i18n check` read. No site build:
# the copy's pytest runs without tests/conftest.py (its fixtures build the site), which
# test_exercises.py does not use.
COPIED = ("exercises/", "emulator/", "i18n/", "locale/", "site/content/exercises/", "site/content/pt-BR/exercises/",
          "site/content/languages.toml", "kernels_wgsl/manifest.json", "tests/test_exercises.py",
          "tests/wrong_expected.py", "tests/exercise_answers/", "pyproject.toml")
PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--noconftest",
          "-n", "0"]


def _digests(root: Path) -> dict:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def _step_block(text: str, step_id: str) -> str:
    """The ``[[steps]]`` table of ``step_id`` in an exercise.toml, as written there."""
    blocks = re.split(r"(?m)^(?=\[)", text)
    (block,) = [b for b in blocks if b.startswith("[[steps]]") and re.search(rf'(?m)^id = "{step_id}"$', b)]
    return block


def _run(tree: Path, *args, timeout=300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(tree))
    return subprocess.run(list(args), cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)


class Tree:
    """The copy (``root``) and its files' digests (``before``) as copied, before the step."""

    def __init__(self, root: Path):
        listed = subprocess.run(["git", "ls-files", "-z", "--", *COPIED], cwd=ROOT, check=True,
                                capture_output=True).stdout.decode().split("\0")
        for rel in filter(None, listed):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / rel, root / rel)
        self.root, self.before = root, _digests(root)

    def changed(self) -> set:
        after = _digests(self.root)
        return {p for p in self.before.keys() | after.keys() if self.before.get(p) != after.get(p)}


def _add_step(tmp: Path) -> None:
    """The step's folder, its other correct answer and its [[steps]] entry (Scratch's, renamed)."""
    shutil.copytree(tmp / EX / FROM, tmp / EX / NEW)
    shutil.copytree(tmp / ANSWERS / FROM, tmp / ANSWERS / NEW)
    toml = tmp / EX / "exercise.toml"
    block = _step_block(toml.read_text(encoding="utf-8"), FROM)
    block = block.replace(f'id = "{FROM}"', f'id = "{NEW}"', 1)
    block = re.sub(r'(?m)^title = "(.*)"$', r'title = "\1, again"', block, count=1)
    toml.write_text(toml.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + block.rstrip("\n") + "\n",
                    encoding="utf-8")


def _add_overlay(tmp: Path) -> None:
    shutil.copytree(tmp / PT / FROM, tmp / PT / NEW)
    over = tmp / PT / "exercise.toml"
    title = re.search(rf'(?m)^\[steps\.{FROM}\]\ntitle = "(.*)"$', over.read_text(encoding="utf-8"))[1]
    over.write_text(over.read_text(encoding="utf-8").rstrip("\n") + f'\n[steps.{NEW}]\ntitle = "{title}, de novo"\n',
                    encoding="utf-8")


def _outside_the_step(paths: set) -> set:
    """The changed paths that are not inside the new step's own folders."""
    folders = tuple(f"{base.as_posix()}/{NEW}/" for base in (EX, PT, ANSWERS))
    return {p for p in paths if not p.startswith(folders)}


def test_without_its_portuguese_the_i18n_check_names_exactly_the_steps_files(tmp_path):
    tree = Tree(tmp_path)
    _add_step(tmp_path)
    assert _outside_the_step(tree.changed()) == {f"{EX.as_posix()}/exercise.toml"}
    out = _run(tmp_path, sys.executable, "-m", "i18n", "check")
    assert out.returncode == 1, out.stdout[-3000:]
    found = {line for line in out.stdout.splitlines() if line.strip()}
    pt = f"pt-BR/exercises/{SLUG}"
    assert found == {f"{pt}/{NEW}/prompt.md: missing (the translation of exercises/{SLUG}/{NEW}/prompt.md)",
                     f"{pt}/{NEW}/hints.md: missing (the translation of exercises/{SLUG}/{NEW}/hints.md)",
                     f"{pt}/exercise.toml: no translation for steps.{NEW}.title",
                     *{line for line in found if line.startswith(f"{pt}/{NEW}/teaching.toml: no translation for ")}}
    assert any(line.startswith(f"{pt}/{NEW}/teaching.toml: no translation for wrong") for line in found), found


def test_the_added_step_is_found_by_the_exercise_tests_and_passes_them(tmp_path):
    tree = Tree(tmp_path)
    _add_step(tmp_path)
    _add_overlay(tmp_path)
    # every change lies in the step's three folders and its exercise.toml entries, English and pt-BR
    changed = tree.changed()
    assert _outside_the_step(changed) == {f"{EX.as_posix()}/exercise.toml", f"{PT.as_posix()}/exercise.toml"}
    assert changed >= {f"{EX.as_posix()}/{NEW}/wrong/expected.toml", f"{PT.as_posix()}/{NEW}/prompt.md"}

    i18n = _run(tmp_path, sys.executable, "-m", "i18n", "check")
    assert i18n.returncode == 0, i18n.stdout[-3000:]

    listed = _run(tmp_path, *PYTEST, "--collect-only", "tests/test_exercises.py")
    assert listed.returncode == 0, listed.stdout[-3000:] + listed.stderr[-3000:]
    mine = [line for line in listed.stdout.splitlines() if f"{SLUG}-{NEW}" in line]
    wrong = sorted((tmp_path / EX / NEW / "wrong").glob("*.py"))
    for test in ("test_the_step_has_the_files_its_loader_lists", "test_the_solution_passes", "test_the_starter_fails",
                 "test_every_wrong_answer_has_its_expectation_beside_it", "test_another_correct_answer_passes",
                 "test_the_offline_cli_passes_the_solution"):
        assert any(test in line for line in mine), (test, mine)
    assert sum("test_the_typical_wrong_answer_fails_as_its_expectation_says" in line for line in mine) == len(wrong)
    # the step's own tests, and those over every step (folders, code steps, the ladder's seed)
    run = _run(tmp_path, *PYTEST, "-rs", *mine, "tests/test_exercises.py::test_every_step_folder_is_a_step_and_every_"
               "step_has_its_folder", "tests/test_exercises.py::test_every_python_code_step_has_another_correct_"
               "answer_and_a_skill_less_wrong_one", "tests/test_exercises.py::test_exercise_one_keeps_the_seeds_"
               "ladder_in_order", timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    passed = int(re.search(r"(\d+) passed", run.stdout)[1])
    assert passed >= len(mine) and "failed" not in run.stdout and "skipped" not in run.stdout, run.stdout[-2000:]
