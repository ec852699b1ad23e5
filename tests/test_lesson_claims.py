"""Lesson claims agree with the instruments.

What the lab measures (docs/BENCHMARKS.md): on the H200 the tuned fused
backward beats a tuned plain one at d = 16, 64 and 128, while a plain at its roofline
floor would beat the fused at d = 128, and the lesson-tiled kernels that Count shows
can run the other way round. So no English text the site is built from may say that
a fused backward is faster, wins or beats the plain one without saying, in the same
paragraph, that this depends on the GPU. The translations are held to the English
by review; the words checked here are the English ones.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONTENT = ROOT / "site" / "content"
#: The English sources of the site's words: content (not the overlays) and templates.
SOURCES = sorted(p for p in CONTENT.rglob("*") if p.suffix in (".md", ".toml") and "pt-BR" not in p.parts) + \
    sorted((ROOT / "site" / "templates").glob("*.j2")) + [ROOT / "README.md"]
SPEED = re.compile(r"\b(faster|quicker|slower|wins?|won|beats?|beat)\b", re.I)
DEPENDS = re.compile(r"depends? on the GPU|depends on the chip|on your (own )?GPU", re.I)


def paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs, and each string value of a TOML line on its own."""
    return [p for p in re.split(r"\n\s*\n|\n(?=\w+ = \")", text) if p.strip()]


def speed_claims_without_the_gpu(text: str) -> list[str]:
    """Paragraphs of ``text`` that compare a backward's speed without saying it depends on the GPU."""
    return [p.strip()[:120] for p in paragraphs(text)
            if re.search(r"backward", p, re.I) and SPEED.search(p) and not DEPENDS.search(p)]


def test_the_finder_catches_the_old_after_text_and_passes_the_new_one():
    old = ("Recomputing it costs one more QK per tile, arithmetic the GPU has to spare. FlashAttention's backward\n"
           "is faster than the plain one for that reason, although it does more arithmetic.")
    assert speed_claims_without_the_gpu(old)
    assert not speed_claims_without_the_gpu(old + " Whether it is faster depends on the GPU, and on d.")
    assert not speed_claims_without_the_gpu("The forward is faster.\n\nThe backward recomputes P.")


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_backward_speed_claim_without_saying_it_depends_on_the_gpu(path):
    assert speed_claims_without_the_gpu(path.read_text(encoding="utf-8")) == []
