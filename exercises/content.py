"""Where exercises live: ``site/content/exercises/SLUG/exercise.toml`` names
the steps; each step is a folder ``SLUG/STEP/`` holding the files :func:`step_files`
lists (the one list; what each holds: exercises/README.md, "Adding a step") and its
typical wrong answers in ``wrong/``, each a whole file or a patch against the step's
solution (:func:`wrong_answer`).

The same relative layout is written into Pyodide's file system by the page's
worker, so paths are found from this file's own location in both runtimes.
"""
from __future__ import annotations

import difflib
import functools
import os
import tomllib

from emulator.i18n import _

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXERCISES_DIR = os.path.join(ROOT, "site", "content", "exercises")

#: A step's files by its language: a Python step's (kinds "predict" and "code") and a WGSL
#: step's (kind "wgsl", whose checks are exercises/wgsl.py's), besides ``wrong/``.
PYTHON_STEP_FILES = ("prompt.md", "hints.md", "starter.py", "solution.py", "tests.py", "teaching.toml", "after.md")
WGSL_STEP_FILES = ("prompt.md", "hints.md", "starter.wgsl", "solution.wgsl", "teaching.toml", "after.md")
#: The one file a step may leave out: the words shown once it passes.
OPTIONAL_FILES = ("after.md",)
#: Files a Python step may hold (besides wrong/*.py), as the page and CLI read them.
STEP_FILES = ("prompt.md", "starter.py", "solution.py", "tests.py", "hints.md", "after.md")
#: A wrong answer ``wrong/NAME.py`` stored as a patch is ``wrong/NAME.py.patch``: a unified
#: diff from the folder's ``solution.py`` (``solution.wgsl`` for ``NAME.wgsl``) to the answer.
PATCH = ".patch"
#: The rule for which form a wrong answer takes: a patch when its patch (3 lines of context,
#: :func:`patch_of`) is at most this share of the answer's own lines, a whole file otherwise
#: (an answer written afresh, or short, reads better whole). tests/test_exercises.py holds it.
PATCH_AT_MOST = 2 / 3


class ContentError(ValueError):
    """An unknown exercise or step, or a step folder missing a required file."""


def slugs(base: str = EXERCISES_DIR) -> list[str]:
    """Every exercise slug (folder with an exercise.toml), sorted by its ``order``."""
    found = []
    for name in sorted(os.listdir(base)):
        path = os.path.join(base, name, "exercise.toml")
        if os.path.isfile(path):
            found.append((load(name, base)["order"], name))
    return [name for _, name in sorted(found)]


def load(slug: str, base: str = EXERCISES_DIR) -> dict:
    """exercise.toml of ``slug`` as a dict, with each step's ``dir`` added.

    Raises ContentError for an unknown slug.
    """
    path = os.path.join(base, slug, "exercise.toml")
    if not os.path.isfile(path):
        raise ContentError(_("no exercise {slug}; known: {known}").format(
            slug=repr(slug), known=", ".join(_names(base))))
    with open(path, "rb") as f:
        data = tomllib.load(f)
    data["slug"] = slug
    for step in data.get("steps", []):
        step["dir"] = os.path.join(base, slug, step["id"])
    return data


def _names(base: str) -> list[str]:
    return sorted(n for n in os.listdir(base) if os.path.isfile(os.path.join(base, n, "exercise.toml")))


def step(slug: str, step_id: str, base: str = EXERCISES_DIR) -> dict:
    """One step's entry from exercise.toml (with ``dir``). Raises ContentError."""
    ex = load(slug, base)
    for s in ex["steps"]:
        if s["id"] == step_id:
            return s
    raise ContentError(_("exercise {slug} has no step {step}; steps: {steps}").format(
        slug=repr(slug), step=repr(step_id), steps=", ".join(s["id"] for s in ex["steps"])))


def step_files(step_entry: dict, optional: bool = True) -> tuple[str, ...]:
    """The files of a step's folder (``step_entry`` from :func:`step`), besides its
    ``wrong/`` answers: :data:`WGSL_STEP_FILES` for ``kind = "wgsl"``, else
    :data:`PYTHON_STEP_FILES`; without :data:`OPTIONAL_FILES` when ``optional`` is False."""
    names = WGSL_STEP_FILES if step_entry.get("kind") == "wgsl" else PYTHON_STEP_FILES
    return tuple(n for n in names if optional or n not in OPTIONAL_FILES)


def read(step_entry: dict, name: str) -> str:
    """Text of one file in a step's folder ('' when it is absent)."""
    path = os.path.join(step_entry["dir"], name)
    if not os.path.isfile(path):
        return ""
    with open(path, encoding="utf-8") as f:
        return f.read()


def wrong_answers(step_entry: dict, suffix: str = ".py") -> dict[str, str]:
    """{file name: source} of the step's typical wrong answers, ``wrong/*<suffix>``
    (``".py"``, or ``".wgsl"`` for the WGSL exercise's shaders), sorted by name.

    A name is the one the learner and the teacher see (``p_table_stored.py``), whether
    the answer is stored whole or as ``wrong/p_table_stored.py.patch``: each source is
    :func:`wrong_answer`'s. ``step_entry`` is a step from :func:`step`, or any
    ``{"dir": folder}`` whose folder holds ``solution<suffix>`` and ``wrong/`` (the
    Triton exercise's own folder). Raises ContentError as :func:`wrong_answer` does.
    """
    folder = os.path.join(step_entry["dir"], "wrong")
    if not os.path.isdir(folder):
        return {}
    names = {n.removesuffix(PATCH) for n in os.listdir(folder) if n.removesuffix(PATCH).endswith(suffix)}
    return {name: wrong_answer(step_entry, name) for name in sorted(names)}


def wrong_answer(step_entry: dict, name: str) -> str:
    """Source of the wrong answer ``name`` (``"no_rescale.py"``) of a step: the file
    ``wrong/NAME`` as it is, or the patch ``wrong/NAME.patch`` applied to the folder's
    ``solution.py`` (``solution.wgsl`` for a shader) by ``git apply``.

    Raises ContentError when neither file exists, or when both do, or when the patch no
    longer applies to the solution (git's words say which hunk). A developer's error,
    at build or test time: the page and the offline kit ship no wrong answers.
    """
    path = os.path.join(step_entry["dir"], "wrong", name)
    whole, patch = os.path.isfile(path), os.path.isfile(path + PATCH)
    if whole == patch:
        raise ContentError(f"wrong/{name}: expected the file or wrong/{name}{PATCH}, "
                           f"found {'both' if whole else 'neither'} in {step_entry['dir']}")
    if not patch:
        with open(path, encoding="utf-8") as f:
            return f.read()
    solution = os.path.join(step_entry["dir"], _solution_of(step_entry, name))
    return patched(path + PATCH, solution, f"wrong/{name}{PATCH}")


def patched(patch_path: str, solution_path: str, where: str) -> str:
    """The text of ``solution_path`` with the patch at ``patch_path`` applied by ``git
    apply``: a unified diff headed with the solution's file name, as :func:`patch_of`
    writes it. How a wrong answer stored as a patch is read, and an other correct answer
    that is the solution with a few lines changed (tests/exercise_answers/). ``where``
    names the patch in errors. Raises ContentError as :func:`wrong_answer` does."""
    with open(patch_path, encoding="utf-8") as f:
        patch = f.read()
    with open(solution_path, encoding="utf-8") as f:
        return _applied(patch, f.read(), os.path.basename(solution_path), where)


def patch_of(step_entry: dict, name: str, source: str) -> str:
    """The patch that stores wrong answer ``name`` (its text ``source``) as
    ``wrong/NAME.patch``: a unified diff, 3 lines of context, from the folder's solution
    to ``source``, both sides headed with the solution's name (``a/solution.py``,
    ``b/solution.py``) so that ``git apply`` patches that one file."""
    solution = _solution_of(step_entry, name)
    with open(os.path.join(step_entry["dir"], solution), encoding="utf-8") as f:
        before = f.read().splitlines(keepends=True)
    return "".join(difflib.unified_diff(before, source.splitlines(keepends=True), f"a/{solution}", f"b/{solution}"))


def _solution_of(step_entry: dict, name: str) -> str:
    """The solution file a wrong answer's patch applies to: ``solution`` + its suffix."""
    return "solution" + os.path.splitext(name)[1]


@functools.lru_cache(maxsize=256)
def _applied(patch: str, solution_text: str, solution: str, where: str) -> str:
    """``solution_text`` with ``patch`` applied by ``git apply`` (no fuzz: every context
    line must match), in a fresh temporary folder. ``where`` names the patch in errors."""
    # Imported here: the page's Pyodide imports this module but never applies a patch,
    # and it cannot start a process.
    import shutil
    import subprocess
    import tempfile

    git = shutil.which("git")
    if git is None:
        raise ContentError(f"{where}: applying a wrong answer's patch needs git on the PATH")
    with tempfile.TemporaryDirectory(prefix="cannery-wrong-") as tmp:
        target = os.path.join(tmp, solution)
        with open(target, "w", encoding="utf-8") as f:
            f.write(solution_text)
        # The folder is not a repository and git must not look for one above it (it
        # would then apply relative to that repository's root, or skip the file).
        env = dict(os.environ, GIT_CEILING_DIRECTORIES=os.path.dirname(tmp))
        done = subprocess.run([git, "apply", "--whitespace=nowarn", "-"], input=patch, cwd=tmp, env=env,
                              capture_output=True, text=True, encoding="utf-8")
        if done.returncode != 0:
            raise ContentError(f"{where} does not apply to {solution}: {done.stderr.strip()}")
        with open(target, encoding="utf-8") as f:
            out = f.read()
    if out == solution_text:
        raise ContentError(f"{where} changes nothing in {solution}")
    return out


def store(path: str) -> str:
    """Store the wrong answer ``path`` (``…/STEP/wrong/NAME``, or ``NAME.patch``) in the
    form :data:`PATCH_AT_MOST` gives it, replacing the other form; returns the form
    ("patch" or "whole"). Raises ContentError as :func:`wrong_answer` does."""
    folder, name = os.path.split(os.path.abspath(path).removesuffix(PATCH))
    entry = {"dir": os.path.dirname(folder)}
    source = wrong_answer(entry, name)
    patch = patch_of(entry, name, source)
    short = len(patch.splitlines()) <= PATCH_AT_MOST * len(source.splitlines())
    as_patch, as_file = os.path.join(folder, name + PATCH), os.path.join(folder, name)
    keep, drop = (as_patch, as_file) if short else (as_file, as_patch)
    with open(keep, "w", encoding="utf-8") as f:
        f.write(patch if short else source)
    if os.path.isfile(drop):
        os.remove(drop)
    if wrong_answer(entry, name) != source:
        raise ContentError(f"wrong/{name}: the stored form does not give the answer back")
    return "patch" if short else "whole"


def whole(path: str) -> str:
    """Write the wrong answer ``path`` (``…/wrong/NAME`` or ``NAME.patch``) out whole, for
    editing (then :func:`store` it again); returns the file written."""
    folder, name = os.path.split(os.path.abspath(path).removesuffix(PATCH))
    source = wrong_answer({"dir": os.path.dirname(folder)}, name)
    target = os.path.join(folder, name)
    if os.path.isfile(target + PATCH):
        os.remove(target + PATCH)
    with open(target, "w", encoding="utf-8") as f:
        f.write(source)
    return target


if __name__ == "__main__":  # a developer's tool: python -m exercises.content {store,whole} PATH...
    import argparse

    parser = argparse.ArgumentParser(prog="python -m exercises.content",
                                     description="Store wrong answers as the rule says, or write them out whole.")
    parser.add_argument("command", choices=("store", "whole"))
    parser.add_argument("paths", nargs="+", help="site/content/exercises/SLUG/STEP/wrong/NAME (or NAME.patch)")
    args = parser.parse_args()
    for path in args.paths:
        print({"store": store, "whole": whole}[args.command](path), path)
