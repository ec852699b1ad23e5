"""Where exercises live: ``site/content/exercises/SLUG/exercise.toml`` names
the steps; each step is a folder ``SLUG/STEP/`` holding the files :func:`step_files`
lists (the one list; what each holds: exercises/README.md, "Adding a step") and its
typical wrong answers in ``wrong/``.

The same relative layout is written into Pyodide's file system by the page's
worker, so paths are found from this file's own location in both runtimes.
"""
from __future__ import annotations

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


def wrong_answers(step_entry: dict) -> dict[str, str]:
    """{file name: source} of the step's typical wrong answers (wrong/*.py)."""
    folder = os.path.join(step_entry["dir"], "wrong")
    if not os.path.isdir(folder):
        return {}
    out = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                out[name] = f.read()
    return out
