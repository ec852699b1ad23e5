"""Exercise 4's other correct shaders, in tests/exercise_answers/wgsl-kernel/.

Its WGSL steps share one solution.wgsl (tests/test_exercise_wgsl.py holds them to it), so
each other correct shader sits there once, for every step: whole as NAME.wgsl, or, where
it is that solution with a few lines changed, as NAME.wgsl.patch against it, the way a
step's wrong answers are stored (exercises.content.wrong_answer).
"""
from __future__ import annotations

import os
from pathlib import Path

from exercises import content

FOLDER = Path(__file__).resolve().parent / "exercise_answers" / "wgsl-kernel"


def names() -> list[str]:
    """The shaders' names (``per_key_update.wgsl``), sorted, however each is stored."""
    return sorted({p.name.removesuffix(content.PATCH) for p in FOLDER.iterdir()
                   if p.name.removesuffix(content.PATCH).endswith(".wgsl")})


def source(name: str) -> str:
    """The text of shader ``name``: the file, or its patch applied to the steps' solution."""
    whole = FOLDER / name
    if whole.is_file():
        return whole.read_text(encoding="utf-8")
    scratch = content.step("wgsl-kernel", "scratch")
    solution = os.path.join(scratch["dir"], "solution.wgsl")
    return content.patched(str(FOLDER / (name + content.PATCH)), solution, f"{name}{content.PATCH}")
