"""Data for the teachers' page (site/content/pages/teachers.toml): the plans, the
film's question, every step's answers, from the content they describe.

:func:`build` returns ``teachers``:

``plans``
    Each plan with its ``parts`` and ``minutes`` (their sum). A part's minutes
    come from data: a film part plays from the cue ``cue`` to the start of the
    cue ``until`` ("end": the film's end), rounded up to whole minutes, and each
    of its ``moments`` gets the cue's start (``t``, seconds, for the player's
    ``#t=``), its clock and its caption; an exercises part sums its ``steps``'
    minutes (exercise.toml) and names each; a lab part takes the module's lab
    links by index; any other part states ``minutes``.
``question``
    The film's question (prompt, answer, the cue it stops at) and what to ask.
``answers``
    Per exercise, per step: the solution's source, its after-text (what the
    page tells a learner who passes; ``entry`` is the step for rendering it), and for each typical wrong
    answer (``wrong/*``) its note from the step's ``teaching.toml`` (what it
    shows, what to ask next) and, for a Python step, what the step's tests say
    to it: the checker run on it at build time, in the page's language
    (``caught``: the failing tests' titles, passed, total).

Running the checker on every wrong answer is most of a build's time, so its
verdicts are kept on disk between builds (:func:`_verdict`), keyed by the
answer, the exercise's folder and the checker's code: a build after a change to
any of them runs the checker again.

Raises KeyError for a cue id, step id or lab link the data names but the
content lacks, and ValueError for a part of an unknown kind.
"""
from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import json
import math
import multiprocessing
import os
import sys
import tempfile
from pathlib import Path

import i18n
from course.figures import figures
from emulator import i18n as py_i18n
from exercises import content, runner
from exercises.testing import title_of

PAGE = Path("pages") / "teachers.toml"  # under site/content/
KINDS = ("film", "question", "lab", "exercises", "hand-in")


def notes(slug: str, step_id: str, code: str) -> dict:
    """{wrong answer id: {"shows", "ask"}} of one step, from its teaching.toml, in language ``code``."""
    rel = Path("exercises") / slug / step_id / "teaching.toml"
    if not (i18n.CONTENT / rel).is_file():
        return {}
    return {w["id"]: w for w in i18n.load_content(rel, code).get("wrong", [])}


def wrong_files(slug: str, step_id: str) -> dict[str, str]:
    """{id: file name} of a step's wrong/ answers (.py or .wgsl, stored whole or as a patch:
    the name the learner sees either way), sorted by name."""
    entry = {"dir": str(Path(content.EXERCISES_DIR) / slug / step_id)}
    names = [*content.wrong_answers(entry, ".py"), *content.wrong_answers(entry, ".wgsl")]
    return {Path(name).stem: name for name in sorted(names)}


@functools.cache
def _localedir() -> str:
    """A folder holding each translated language's compiled python catalog, for emulator.i18n.use."""
    folder = Path(tempfile.mkdtemp(prefix="cannery-locale-"))
    for lang in i18n.languages():
        if not lang.default:
            (folder / lang.locale / "LC_MESSAGES").mkdir(parents=True)
            (folder / lang.locale / "LC_MESSAGES" / "python.mo").write_bytes(i18n.mo_bytes(lang, "python"))
            (folder / lang.locale / "numbers.json").write_text(json.dumps(i18n.numbers(lang.code).symbols()))
    return str(folder)


ROOT = Path(__file__).resolve().parent.parent
# What a verdict depends on besides the answer and its step's folder: the checker, what it
# imports (the emulator, the planner, the manifest) and the content loader's data.
CHECKER_CODE = ("exercises", "emulator", "planner", "kernels_wgsl/manifest.json")


def cache_dir() -> Path:
    """Where verdicts are kept between builds: $CANNERY_CACHE, else $XDG_CACHE_HOME/cannery
    (~/.cache/cannery)."""
    if os.environ.get("CANNERY_CACHE"):
        return Path(os.environ["CANNERY_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cannery"


@functools.cache
def _fingerprint(folder: str) -> str:
    """sha256 of every file under ``folder`` (an exercise's folder, or one of CHECKER_CODE), by path."""
    digest = hashlib.sha256()
    base = ROOT / folder
    for path in sorted([base] if base.is_file() else base.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _path(slug: str, step_id: str, source: str) -> Path:
    """Where the verdict of ``source`` on step ``slug/step_id`` is kept (see :func:`_verdict`)."""
    exercise = Path(content.EXERCISES_DIR).resolve().relative_to(ROOT) / slug
    key = hashlib.sha256("\0".join([sys.version, slug, step_id, source, _fingerprint(str(exercise)),
                                     *map(_fingerprint, CHECKER_CODE)]).encode()).hexdigest()
    return cache_dir() / "verdicts" / f"{key}.json"


def _kept(path: Path) -> tuple | None:
    try:
        failed, passed, total, loads = json.loads(path.read_text(encoding="utf-8"))
        return tuple(failed), passed, total, loads
    except (OSError, ValueError, TypeError):
        return None


def _check(slug: str, step_id: str, source: str, path: Path) -> tuple:
    """The checker's verdict (``exercises.runner.check``), written to ``path`` (a whole file at
    once, so that parallel builds can share it) unless the time limit cut it short."""
    report = runner.check(slug, step_id, source, seconds=20.0)
    verdict = (tuple(r["name"] for r in report["results"] if not r["ok"]), report["passed"], report["total"],
               report["error"] is None)
    if str(report["error"]).startswith("TimeLimit"):  # a busy machine's verdict: not kept
        return verdict
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_suffix(f".{os.getpid()}.part")
        part.write_text(json.dumps(verdict), encoding="utf-8")
        os.replace(part, path)
    except OSError:  # a read-only home: the next build runs the checker again
        pass
    return verdict


@functools.cache
def _verdict(slug: str, step_id: str, source: str, tests: str) -> tuple:
    """(failing test names, passed, total, loads) of step ``slug/step_id``'s tests on
    ``source`` (``tests``, their text, keys the cache): the same in every language.

    Read from :func:`cache_dir` when a build with the same answer, exercise folder and
    checker code made it (:func:`check_all` fills it); else the checker runs."""
    path = _path(slug, step_id, source)
    return _kept(path) or _check(slug, step_id, source, path)


def _answers(exercises: list) -> list:
    """(slug, step id, source) of every Python step's wrong answers."""
    out = []
    for ex in exercises:
        for st in ex["steps"]:
            folder = Path(content.EXERCISES_DIR) / ex["slug"] / st["id"]
            if not (folder / "tests.py").is_file():
                continue
            out += [(ex["slug"], st["id"], content.wrong_answer({"dir": str(folder)}, name))
                    for name in wrong_files(ex["slug"], st["id"]).values() if name.endswith(".py")]
    return out


def check_all(exercises: list, workers: int | None = None) -> int:
    """Run the checker on every wrong answer whose verdict is not kept yet, in ``workers``
    processes at once (default: one per CPU), so that :func:`build` finds them all kept.
    Returns how many ran. Where the cache cannot be written, :func:`_verdict` runs them."""
    missing = [(slug, step_id, source, path) for slug, step_id, source in _answers(exercises)
               if _kept(path := _path(slug, step_id, source)) is None]
    workers = min(workers or os.cpu_count() or 1, len(missing))
    if workers > 1:
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            list(pool.map(_check, *zip(*missing, strict=True)))
    return len(missing)


@functools.cache
def _titles(slug: str, step_id: str, tests: str, code: str) -> dict:
    """{test name: title} of a step's tests, in language ``code``."""
    py_i18n.use(code, _localedir())
    try:
        return {fn.__name__: title_of(fn) for fn in runner.load_tests(content.step(slug, step_id))}
    finally:
        py_i18n.use(i18n.default().code)


def caught(slug: str, step_id: str, source: str, tests: str, code: str) -> dict:
    """What step ``slug/step_id``'s tests (their text ``tests``, for the cache) say to ``source``,
    in language ``code``: {"failed": [test titles], "passed", "total", "loads"}."""
    failed, passed, total, loads = _verdict(slug, step_id, source, tests)
    titles = _titles(slug, step_id, tests, code)
    return {"failed": [titles[name] for name in failed], "passed": passed, "total": total, "loads": loads}


def _step_answers(ex: dict, st: dict, code: str, render) -> dict:
    step_notes = notes(ex["slug"], st["id"], code)
    folder = Path(content.EXERCISES_DIR) / ex["slug"] / st["id"]
    tests = (folder / "tests.py").read_text(encoding="utf-8") if (folder / "tests.py").is_file() else ""
    wrong = []
    for wid, name in wrong_files(ex["slug"], st["id"]).items():
        note = step_notes.get(wid, {})
        item = {"id": wid, "file": f"wrong/{name}", "shows": render(note.get("shows", "")),
                "ask": render(note.get("ask", "")), "caught": None}
        if name.endswith(".py") and tests:
            item["caught"] = caught(ex["slug"], st["id"], content.wrong_answer({"dir": str(folder)}, name), tests,
                                    code)
        wrong.append(item)
    return {"key": st["key"], "id": st["id"], "title": st["title"], "kind": st["kind"],
            "minutes": st["minutes"], "names": st.get("names", []), "entry": st, "after_md": st.get("after_md", ""),
            "solution": st.get("solution_py") or st.get("solution_wgsl") or "", "wrong": wrong}


def _part(part: dict, film: dict, module: dict, steps: dict, home: str) -> dict:
    out = dict(part)
    kind = part["kind"]
    cues = {c["id"]: c for c in film["cues"]}
    if kind == "film":
        start = cues[part["cue"]]["start_s"]
        end = film["runtime_s"] if part["until"] == "end" else cues[part["until"]]["start_s"]
        out["minutes"] = math.ceil((end - start) / 60)
        out["t"] = start
        out["moments"] = [dict(m, t=cues[m["id"]]["start_s"], clock=cues[m["id"]]["clock"],
                               caption=cues[m["id"]]["text"]) for m in part.get("moments", [])]
    elif kind == "exercises":
        out["steps"] = [steps[key] for key in part["steps"]]
        out["minutes"] = sum(s["minutes"] for s in out["steps"])
    elif kind == "lab":
        out["links"] = [module["lab_links"][i] for i in part["lab_links"]]
    elif kind not in KINDS:
        raise ValueError(f"{PAGE}: part {part['id']!r} has an unknown kind {kind!r} (known: {', '.join(KINDS)})")
    return out


def build(context: dict, render, lang: str | None = None) -> dict:
    """The teachers' page data (see the module docstring), in language ``lang``.

    context: build.py's context after course.build (``film``, ``module``,
    ``exercises``); render(text): a content string rendered as Jinja with the
    page context (the teaching notes name figures as ``figures.…``).
    """
    code = lang or i18n.default().code
    page = i18n.load_content(PAGE, code)
    film, module = context["film"], context["module"]

    def render_note(text: str) -> str:
        return render(text, figures=figures()) if text else ""

    check_all(context["exercises"])
    answers, steps = [], {}
    for ex in context["exercises"]:
        item = {"slug": ex["slug"], "order": ex["order"], "title": ex["title"], "short": ex["short"],
                "downloads": ex["downloads"], "entry": ex, "steps": []}
        for st in ex["steps"]:
            info = _step_answers(ex, st, code, render_note)
            item["steps"].append(info)
            steps[st["key"]] = dict(info, exercise=ex["title"], slug=ex["slug"], order=ex["order"])
        answers.append(item)
    plans = []
    for plan in page["plans"]:
        parts = [_part(p, film, module, steps, context.get("home", "")) for p in plan["parts"]]
        plans.append(dict(plan, parts=parts, minutes=sum(p["minutes"] for p in parts)))
    question = dict(film["question"], ask=page["question"]["ask"],
                    t=next(c["start_s"] for c in film["cues"] if c["id"] == film["question"]["cue"]))
    return {"plans": plans, "question": question, "answers": answers}
