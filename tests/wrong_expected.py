"""What each typical wrong answer is expected to do, read from beside the answers.

Each step's ``wrong/expected.toml`` (its keys: the file's own header, and
exercises/README.md, "Adding a step") names every answer that
``exercises.content.wrong_answers`` gives, by that name. The answers themselves are
read only through exercises.content; this module reads only the expectations.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

FILE = "expected.toml"
#: The keys an answer's entry may hold.
KEYS = {"fails", "says", "skill_less", "refused", "page"}
#: The keys a wrong shader's entry may hold (exercise 4's WGSL steps; the file's header says
#: what each means).
WGSL_KEYS = {"static", "says", "skill_less", "only_far"}


def path(step_entry: dict) -> Path:
    """The step's expectations file (``step_entry`` from exercises.content.step)."""
    return Path(step_entry["dir"]) / "wrong" / FILE


def load(step_entry: dict) -> tuple[list[str], dict[str, dict]]:
    """(watch, {answer name: its entry}) for one step; ([], {}) when the file is absent,
    which the tests report as a step whose answers have no expectations."""
    p = path(step_entry)
    if not p.is_file():
        return [], {}
    data = tomllib.loads(p.read_text(encoding="utf-8"))
    watch = data.pop("watch", [])
    return watch, data
