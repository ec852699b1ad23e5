"""WebVTT writers for the captions and chapters tracks (W3C WebVTT §4).

Cue text escapes '&', '<' and '>' as the spec requires for cue payloads
(§4.2.2); a cue identifier never contains '-->' nor a line break; a cue text
that the format cannot carry (a blank line, '-->', NUL) is refused by
:func:`payload_problem`, with no optional package needed.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from .film_figures import FilmError
from .script import format_timestamp


def escape(text: str) -> str:
    """Escape a cue payload: 'a < b & c' -> 'a &lt; b &amp; c'."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def payload_problem(text: str) -> str | None:
    """What a cue's text holds that a WebVTT cue payload cannot carry, or None.

    W3C WebVTT §4.1 (cue payload) and §6.1 (parser): a blank line ends the cue,
    so the rest would be lost or read as a new block; the payload must not
    contain "-->" (a timing line) nor U+0000 (the parser replaces it). A line
    break is CR LF, CR or LF. Leading or trailing line breaks make an empty
    first or last line, which the format cannot carry either.
    """
    if "-->" in text:
        return "contains '-->', which WebVTT reads as a timing line"
    if "\x00" in text:
        return "contains a NUL character (U+0000)"
    lines = _LINE_BREAK.split(text)
    for k, line in enumerate(lines):
        if not line.strip(" \t\f"):
            where = "first" if k == 0 else ("last" if k == len(lines) - 1 else f"line {k + 1}")
            return f"has a blank {where} line, and a blank line ends a WebVTT cue (the rest would be lost)"
    return None


def _cue(ident: str, start: float, end: float, text: str) -> str:
    if "-->" in ident or _LINE_BREAK.search(ident):
        raise FilmError(f"cue id {ident!r} may not contain '-->' or a line break")
    problem = payload_problem(text)
    if problem:
        raise FilmError(f"cue {ident!r}: its text {problem}")
    return f"{ident}\n{format_timestamp(start)} --> {format_timestamp(end)}\n{escape(text)}\n"


def captions(cues: Iterable[Mapping]) -> str:
    """The captions track: one cue per caption, identified by its cue id."""
    body = "\n".join(_cue(c["id"], c["start_s"], c["end_s"], c["text"]) for c in cues)
    return "WEBVTT\n\n" + body


def chapters(chs: Iterable[Mapping]) -> str:
    """The chapters track: one cue per chapter, text = chapter title."""
    body = "\n".join(_cue(f"chapter-{c['id']}", c["start_s"], c["end_s"], c["title"]) for c in chs)
    return "WEBVTT\n\n" + body


def check_roundtrip(text: str, cues: list[Mapping]) -> None:
    """Parse the written track back with webvtt-py (if installed) and check it
    has the same cues, times and text. Raises FilmError on any difference."""
    try:
        import io

        import webvtt  # webvtt-py, in the [test] extra
    except ImportError:
        return
    try:
        parsed = list(webvtt.from_buffer(io.StringIO(text)))
    except Exception as exc:  # webvtt.errors.MalformedFileError and friends
        raise FilmError(f"captions.vtt does not parse: {exc}") from exc
    if len(parsed) != len(cues):
        raise FilmError(f"captions.vtt has {len(parsed)} cues, script has {len(cues)}")
    for p, c in zip(parsed, cues, strict=True):
        if abs(_secs(p.start) - c["start_s"]) > 0.0015 or abs(_secs(p.end) - c["end_s"]) > 0.0015:
            raise FilmError(f"cue {c['id']!r}: times changed in captions.vtt")
        if " ".join(p.text.split()) != escape(c["text"]) and " ".join(p.text.split()) != c["text"]:
            raise FilmError(f"cue {c['id']!r}: text changed in captions.vtt")


def _secs(ts: str) -> float:
    parts = ts.split(":")
    total = 0.0
    for p in parts:
        total = total * 60 + float(p)
    return total
