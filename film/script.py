"""Load the film's script (site/content/film.toml), render its caption
templates, and validate every cue before anything is written.

Timestamps follow WebVTT (W3C WebVTT §4.1, "WebVTT timestamp"): ``mm:ss.ttt``
or ``hh:mm:ss.ttt``, minutes and seconds 00-59, exactly three decimals.
"""
from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2

from .film_figures import FilmError

TIMESTAMP = re.compile(r"^(?:(\d{2,}):)?([0-5]\d):([0-5]\d)\.(\d{3})$")
#: Slowest and fastest whole-film runtime the lesson allows, seconds.
RUNTIME_MIN_S = 4 * 60 + 45
RUNTIME_MAX_S = 6 * 60
#: Reading speed the captions are timed for (words per minute); a cue that
#: would need more than READ_MAX_WPM to read in its time fails the build.
READ_WPM = 150
READ_MAX_WPM = 170

_DIGITS = re.compile(r"[0-9]")
_TAG = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)


def parse_timestamp(text: str, where: str = "cue") -> float:
    """Seconds (float) from a WebVTT timestamp string.

    '01:02.500' -> 62.5; '01:00:00.000' -> 3600.0.
    Raises FilmError naming ``where`` for anything else ('1:02.5', '00:61.000', 62.5).
    """
    if not isinstance(text, str):
        raise FilmError(f"{where}: timestamp {text!r} must be a string like '01:02.500'")
    m = TIMESTAMP.match(text)
    if not m:
        raise FilmError(f"{where}: malformed timestamp {text!r}; use mm:ss.ttt or hh:mm:ss.ttt")
    hours = int(m.group(1) or 0)
    return hours * 3600 + int(m.group(2)) * 60 + int(m.group(3)) + int(m.group(4)) / 1000


def format_timestamp(seconds: float) -> str:
    """WebVTT timestamp for a time in seconds: 62.5 -> '00:01:02.500' (always with hours)."""
    ms = round(seconds * 1000)
    h, rest = divmod(ms, 3_600_000)
    m, rest = divmod(rest, 60_000)
    s, ms = divmod(rest, 1000)
    return f"{h:02d}:{m:02d}:{s:02d}.{ms:03d}"


def clock(seconds: float) -> str:
    """Player clock text: 314.6 -> '5:14'."""
    s = int(seconds)
    return f"{s // 60}:{s % 60:02d}"


def load(path: Path) -> dict:
    """Parse the film's TOML script; raises FilmError on a TOML syntax error."""
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise FilmError(f"{path}: {exc}") from exc


def typed_numbers(template: str, allowed: set[str]) -> list[str]:
    """Tokens with digits typed into a caption template outside ``{{ }}`` and
    ``{% %}``, minus the allowed ones (years, format names). Empty = clean."""
    bare = _TAG.sub(" ", template)
    bad = []
    for token in re.findall(r"[\w.,'-]+", bare):
        token = token.strip(".,'")
        if _DIGITS.search(token) and token not in allowed:
            bad.append(token)
    return bad


def _env() -> jinja2.Environment:
    # Plain text out (WebVTT escaping happens in vtt.py); StrictUndefined so a
    # caption naming a missing figure fails the build.
    return jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False,
                              keep_trailing_newline=False)


def render_text(template: str, values: Mapping[str, Any], where: str) -> str:
    """Render one caption template; raises FilmError naming the cue on a missing value."""
    try:
        text = _env().from_string(template).render(**values)
    except jinja2.TemplateError as exc:
        raise FilmError(f"{where}: {exc}") from exc
    return " ".join(text.split())


def validate_cues(cues: list[dict], runtime_range: tuple[float, float] | None = (RUNTIME_MIN_S, RUNTIME_MAX_S),
                  read_max_wpm: float = READ_MAX_WPM, lang: str = "en") -> None:
    """Check every cue: timestamps well formed, start < end, in order, no
    overlap, readable at ``read_max_wpm`` words per minute (the language's
    ``read_max_wpm`` in site/content/languages.toml), ids unique, and (when
    given) the runtime (last end) within runtime_range seconds.

    Each cue is a dict with 'id', 'start', 'end' (strings) and 'text'; ``lang``
    (BCP 47) only names the captions' language in the messages.
    Raises FilmError with the cue id, the language and the rule it broke.
    """
    if not cues:
        raise FilmError("film has no cues")
    seen: set[str] = set()
    prev_end = 0.0
    prev_id = "(start)"
    for i, cue in enumerate(cues):
        cid = cue.get("id") or f"#{i + 1}"
        where = f"cue {cid!r} (#{i + 1})" + ("" if lang == "en" else f" [{lang}]")
        if cid in seen:
            raise FilmError(f"{where}: duplicate id")
        seen.add(cid)
        start = parse_timestamp(cue.get("start"), f"{where} start")
        end = parse_timestamp(cue.get("end"), f"{where} end")
        if not start < end:
            raise FilmError(f"{where}: start {cue['start']} must be before end {cue['end']}")
        if start < prev_end:
            raise FilmError(f"{where}: starts at {cue['start']}, before {prev_id!r} ends; "
                            "cues must be in order without overlap")
        text = cue.get("text", "")
        if not text.strip():
            raise FilmError(f"{where}: empty text")
        words = len(text.split())
        if words / ((end - start) / 60) > read_max_wpm:
            raise FilmError(f"{where}: {words} words in {end - start:.1f} s is faster than "
                            f"{read_max_wpm} words per minute; shorten the caption")
        prev_end, prev_id = end, cid
    if runtime_range is not None:
        lo, hi = runtime_range
        if not lo <= prev_end <= hi:
            raise FilmError(f"runtime {clock(prev_end)} ({prev_end:.1f} s) is outside {clock(lo)} to {clock(hi)}")


def render_script(script: Mapping[str, Any], values: Mapping[str, Any], read_max_wpm: float = READ_MAX_WPM,
                  lang: str = "en") -> dict:
    """Render the script's cues, chapters and question with ``values``; the
    captions (in language ``lang``) must read at ``read_max_wpm`` or slower.

    Returns {'title', 'cues': [{'id','chapter','start','end','start_s','end_s','text','sources'}],
    'chapters': [{'id','title','start_s','end_s','cues'}], 'question': {...}, 'runtime_s'}.
    Raises FilmError for typed numbers, unknown chapters, bad cues.
    """
    allowed = set(script.get("allow", {}).get("tokens", []))
    chapters_in = script.get("chapters", [])
    chapter_ids = [c["id"] for c in chapters_in]
    if len(set(chapter_ids)) != len(chapter_ids):
        raise FilmError("duplicate chapter id in film.toml")
    cues = []
    for i, raw in enumerate(script.get("cues", [])):
        cid = raw.get("id", f"#{i + 1}")
        where = f"cue {cid!r}"
        bad = typed_numbers(raw.get("text", ""), allowed)
        if bad:
            raise FilmError(f"{where}: number(s) typed into the caption {bad}; take them from film/film_figures.py")
        if raw.get("chapter") not in chapter_ids:
            raise FilmError(f"{where}: unknown chapter {raw.get('chapter')!r}")
        cue = dict(raw)
        cue["text"] = render_text(raw.get("text", ""), values, where)
        cue["sources"] = list(raw.get("sources", []))
        cues.append(cue)
    validate_cues(cues, read_max_wpm=read_max_wpm, lang=lang)
    for cue in cues:
        cue["start_s"] = parse_timestamp(cue["start"])
        cue["end_s"] = parse_timestamp(cue["end"])
    runtime = cues[-1]["end_s"]
    chapters = []
    for ch in chapters_in:
        mine = [c for c in cues if c["chapter"] == ch["id"]]
        if not mine:
            raise FilmError(f"chapter {ch['id']!r} has no cues")
        chapters.append({"id": ch["id"], "title": ch["title"], "cues": [c["id"] for c in mine]})
    first_cue = {ch["id"]: next(i for i, c in enumerate(cues) if c["chapter"] == ch["id"]) for ch in chapters}
    order = sorted(range(len(chapters)), key=lambda k: first_cue[chapters[k]["id"]])
    if order != list(range(len(chapters))):
        raise FilmError("chapters must appear in the same order as their cues")
    by_id = {c["id"]: c for c in cues}
    for k, ch in enumerate(chapters):
        # A scene starts where the previous chapter's last caption ends, so the
        # beat before its first caption belongs to the new scene.
        ch["start_s"] = 0.0 if k == 0 else by_id[chapters[k - 1]["cues"][-1]]["end_s"]
        ch["first_cue_s"] = by_id[ch["cues"][0]]["start_s"]
    for k, ch in enumerate(chapters):
        ch["end_s"] = chapters[k + 1]["start_s"] if k + 1 < len(chapters) else runtime

    q = script.get("question", {})
    qcue = next((c for c in cues if c["id"] == q.get("cue")), None)
    if qcue is None:
        raise FilmError(f"question cue {q.get('cue')!r} not found")
    stop = qcue["start_s"] + float(q.get("stop_after", 0.0))
    if not qcue["start_s"] <= stop < qcue["end_s"]:
        raise FilmError("question stop_after must fall inside the question cue")
    rewatch = next((c for c in chapters if c["id"] == q.get("rewatch")), None)
    if rewatch is None:
        raise FilmError(f"question rewatch chapter {q.get('rewatch')!r} not found")
    answer = values
    for part in str(q["figure"]).split("."):
        answer = answer[part]
    # where the film goes on once the question is answered (with no seek
    # pending): the next caption, so the question's caption does not linger
    after = next((c for c in cues if c["start_s"] >= qcue["end_s"]), None)
    resume = after["start_s"] if after is not None else qcue["end_s"]
    question = {
        "cue": qcue["id"], "stop_s": round(stop, 3), "answer": float(answer), "resume_s": resume,
        "answer_cue": after["id"] if after is not None else None,
        "within": float(q["within"]), "near": float(q["near"]),
        "rewatch_s": rewatch["start_s"], "rewatch_title": rewatch["title"],
    }
    if not 0 < question["within"] < question["near"]:
        raise FilmError("question: within must be above 0 and below near")
    for key in ("prompt", "right", "hint", "close", "nearly", "inverted", "reveal"):
        bad = typed_numbers(q[key], allowed)
        if bad:
            raise FilmError(f"question {key}: number(s) typed {bad}")
        question[key] = render_text(q[key], values, f"question {key}")
    return {"title": script.get("title", "Film"), "cues": cues, "chapters": chapters,
            "question": question, "runtime_s": runtime}
