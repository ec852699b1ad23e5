"""The WebVTT writer refuses cue text the format cannot carry (W3C WebVTT §4.1, §6.1),
with or without the optional webvtt-py parser installed."""
from __future__ import annotations

import sys

import pytest

from film import vtt
from film.film_figures import FilmError


def cue(text: str, ident: str = "tile-loop") -> dict:
    return {"id": ident, "start_s": 1.0, "end_s": 4.0, "text": text}


@pytest.fixture(params=["with-webvtt-py", "without-webvtt-py"])
def parser_installed(request, monkeypatch):
    """Both ways: the refusal must not come from the optional package."""
    if request.param == "without-webvtt-py":
        monkeypatch.setitem(sys.modules, "webvtt", None)  # `import webvtt` raises ImportError
    return request.param


@pytest.mark.parametrize("text,says", [
    ("The bench holds a tile.\n\nThe rest is lost.", "blank line 2"),
    ("The bench holds a tile.\r\n\r\nThe rest is lost.", "blank line 2"),
    ("The bench holds a tile.\r\rThe rest is lost.", "blank line 2"),
    ("The bench holds a tile.\n  \nThe rest is lost.", "blank line 2"),
    ("\nA leading break.", "blank first line"),
    ("A trailing break.\n", "blank last line"),
    ("00:01.000 --> 00:02.000", "'-->'"),
    ("A NUL \x00 here.", "NUL"),
])
def test_text_webvtt_cannot_carry_is_refused_with_the_cue_id(parser_installed, text, says):
    with pytest.raises(FilmError) as err:
        text_out = vtt.captions([cue(text)])
        vtt.check_roundtrip(text_out, [cue(text)])
    message = str(err.value)
    assert message.startswith("cue 'tile-loop': ")
    assert says in message
    assert "\n" not in message


def test_a_chapter_title_gets_the_same_rule():
    with pytest.raises(FilmError, match=r"cue 'chapter-bench': its text has a blank line 2"):
        vtt.chapters([{"id": "bench", "start_s": 0.0, "end_s": 5.0, "title": "The\n\nbench"}])


def test_what_webvtt_can_carry_is_written_and_reads_back(parser_installed):
    cues = [cue("Q < K & V > 0 -> fine."), cue("One line.", ident="next")]
    cues[1]["start_s"], cues[1]["end_s"] = 4.0, 6.0
    text = vtt.captions(cues)
    assert "\nQ &lt; K &amp; V &gt; 0 -&gt; fine.\n" in text
    vtt.check_roundtrip(text, cues)


@pytest.mark.parametrize("ident", ["a-->b", "a\nb", "a\rb"])
def test_a_cue_id_with_an_arrow_or_a_line_break_is_refused(ident):
    with pytest.raises(FilmError, match="cue id"):
        vtt.captions([cue("Fine.", ident=ident)])
