"""Run one step's tests against a learner's source and report in their terms.

``check(slug, step, source)`` returns a JSON-ready report::

    {"ok": bool, "passed": int, "total": int, "output": str,
     "error": str | None,            # the code did not load: trimmed traceback
     "results": [{"name", "title", "ok", "message", "input", "expected",
                  "got", "traceback"}]}

``run(source)`` executes the learner's code for the Run button and returns
{"output": prints, "error": trimmed traceback or None}.

Both also return "touched": what the learner's code replaced in the shared
interpreter (builtins, sys.modules, a module's or a class's names, see
exercises.sandbox), put back before they return; the page starts a fresh
Python when it is not empty. In a Check, a test during which the code
changed them fails (its expected values cannot be trusted), and one more
result, "your code leaves Python's modules as they were", names them.

"output" is what the code wrote to sys.stdout and sys.stderr, in the order
written (as a terminal shows both), through the checker's own buffer
(:class:`Output`): the learner's code may close or replace sys.stdout
without breaking the report, and both streams are put back afterwards. Past
OUTPUT_LIMIT characters the rest is dropped, and the output ends with a line
saying how many characters were not kept.

The learner's code is compiled under the file name ``your_code.py`` (or the
real path, offline), and tracebacks keep only frames from that file.
"""
from __future__ import annotations

import importlib
import io
import json
import linecache
import math
import os
import signal
import sys
import traceback
import types
from contextlib import contextmanager

from emulator.i18n import _, group, short

from . import content, guard, sandbox
from .guard import builtins_for
from .testing import Failure, LearnerError, TimeLimit, title_of

LEARNER_FILE = "your_code.py"
# Builtins the checker uses between the end of the learner's code and the moment the
# guard puts the builtins back (exercises.sandbox): learner code may delete them.
_isinstance, _type, _len, _min, _max, _BaseException = isinstance, type, len, min, max, BaseException
OUTPUT_LIMIT = 20_000  # characters of printed output kept


class Output(io.TextIOBase):
    """sys.stdout and sys.stderr while the learner's code runs: keeps the first
    ``limit`` characters written, counts the rest, and ignores close() (a
    learner's ``sys.stdout.close()`` must not lose what was printed, nor make
    the next print raise "I/O operation on closed file")."""

    def __init__(self, limit: int = OUTPUT_LIMIT):
        super().__init__()
        self.limit = limit
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0
        self.reset: list[str] = []  # settings captured() had to put back (names as exercises.sandbox gives them)

    def write(self, text) -> int:
        # builtins as they were at import: learner code that deletes builtins.len can still print
        if not _isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {_type(text).__name__}")
        n = _len(text)
        room = _max(0, self.limit - self.kept)
        if room:
            self.parts.append(text[:room])
            self.kept += _min(room, n)
        self.dropped += _max(0, n - room)
        return n

    def writable(self) -> bool:
        return True

    def close(self) -> None:
        """Ignored: the checker reads the output after the code ends."""

    @property
    def closed(self) -> bool:
        return False

    @property
    def encoding(self) -> str:
        return "utf-8"

    def text(self) -> str:
        """What was written, with a closing line if some of it was not kept."""
        out = "".join(self.parts)
        if self.dropped:
            out += ("" if out.endswith("\n") else "\n") + _(
                "[… {count} more characters were printed and are not shown: the output is cut after "
                "{limit} characters.]").format(count=group(self.dropped), limit=group(self.limit))
        return out


@contextmanager
def captured(out: Output):
    """Send sys.stdout and sys.stderr to ``out``; put back the streams that were
    there before, whatever the code did to them (closed, replaced, deleted),
    and the recursion limit first of all (a limit the code set too low would
    stop the checker's own code).

    sys.stdin is empty meanwhile, so input() raises EOFError at once instead of
    waiting on the CLI's terminal (or on nothing, in the page's worker). And
    os._exit raises SystemExit instead of ending the process: it would end the
    CLI without a report, and kill Pyodide in the page."""
    saved = sys.stdout, sys.stderr, sys.stdin
    limit = sys.getrecursionlimit()
    real_exit = os._exit
    sys.stdout = sys.stderr = out
    sys.stdin = io.StringIO("")
    os._exit = _no_exit
    try:
        yield out
    finally:
        os._exit = real_exit
        if sys.getrecursionlimit() != limit:
            sys.setrecursionlimit(limit)
            out.reset.append("sys.setrecursionlimit")
        sys.stdout, sys.stderr, sys.stdin = saved


def _no_exit(status=0):
    """os._exit while the learner's code runs (see :func:`captured`)."""
    exc = SystemExit(_("os._exit({status}) would end Python itself; the checker stopped your code instead")
                     .format(status=status))
    exc.os_exit = status  # what the report says (see _raised)
    raise exc


def trimmed_traceback(exc: BaseException, filename: str) -> str:
    """The traceback of ``exc`` with only the learner's own frames kept."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    lines = []
    if frames:
        lines.append(_("Traceback (your code only, most recent call last):") + "\n")
        lines += traceback.format_list(frames)
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines).rstrip("\n")


def _register(source: str, filename: str) -> None:
    """Let tracebacks quote the learner's lines."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)


@contextmanager
def time_limit(seconds: float | None):
    """Raise TimeLimit after ``seconds`` where the platform has SIGALRM (CPython
    on Unix, main thread); elsewhere do nothing (the page stops its worker)."""
    usable = (seconds and hasattr(signal, "SIGALRM") and hasattr(signal, "setitimer")
              and sys.platform != "emscripten")
    if usable:
        # worded now: when the alarm rings, the learner's code may have deleted the builtins
        message = _("stopped after {seconds} s: is there a loop that never ends?").format(seconds=short(seconds))
        try:
            def _alarm(signum, frame):
                raise TimeLimit(message)
            old = signal.signal(signal.SIGALRM, _alarm)
        except ValueError:  # not the main thread
            usable = False
    if not usable:
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def load_module(source: str, filename: str = LEARNER_FILE, name: str = "your_code",
                guarded: bool = True) -> types.ModuleType:
    """Compile and execute the learner's source as a fresh module; ``guarded``:
    with the builtins of exercises.guard (no import of the project's modules).

    Raises whatever the code raises (SyntaxError included, "nested too deeply"
    from exercises.sandbox.refuse_deep_nesting, an ImportError from exercises.guard);
    callers trim it.
    """
    _register(source, filename)
    sandbox.refuse_deep_nesting(source, filename)
    mod = types.ModuleType(name)
    mod.__file__ = filename
    if guarded:
        guard.refuse_insides(source, filename)
        mod.__builtins__ = builtins_for()
    code = compile(source, filename, "exec", dont_inherit=True)  # not this file's __future__ annotations
    sys.modules.setdefault(name, mod)  # while it loads, for dataclasses' string annotations
    try:
        exec(code, mod.__dict__)
    finally:
        if sys.modules.get(name) is mod:
            del sys.modules[name]
    return mod


def load_tests(step_entry: dict) -> list:
    """The step's test functions (``test_*`` in tests.py), in file order."""
    path = step_entry["dir"] + "/tests.py"
    source = content.read(step_entry, "tests.py")
    if not source:
        raise content.ContentError(f"step {step_entry['id']!r} has no tests.py")
    # the tests' own builtins: learner code that deletes builtins.len does not stop the tests' own len()
    ns = {"__name__": f"tests_{step_entry['id']}", "__file__": path, "__builtins__": dict(sandbox.BUILTINS)}
    exec(compile(source, path, "exec"), ns)
    return [v for k, v in ns.items() if k.startswith("test_") and callable(v)]


def _names(found: list) -> str:
    shown = ", ".join(found[:3])
    return shown + (_(" and {count} more").format(count=len(found) - 3) if len(found) > 3 else "")


def _untrusted(r: dict, found: list) -> None:
    r.update(ok=False, input="", expected="", got="", traceback="", message=_(
        "during this test your code changed {names}, which the tests use to work out what they expect, "
        "so this result cannot count (they were put back).").format(names=_names(found)))


def _clean_state_result(found: list) -> dict:
    return {"name": "test_leaves_python_as_it_was", "title": _("your code leaves Python's modules as they were"),
            "ok": False, "input": "", "expected": "", "got": "", "traceback": "",
            "message": _("your code changed {names}. The tests and the emulator share them; define functions "
                         "of your own instead of replacing these.").format(names=_names(found))}


def run_tests(tests: list, mod: types.ModuleType, filename: str = LEARNER_FILE,
              guard: sandbox.Snapshot | None = None) -> list:
    """Run each test on ``mod``; one result dict per test. With ``guard``, a
    test during which the shared state changed fails (and the state is put back)."""
    results = []
    for fn in tests:
        r = {"name": fn.__name__, "title": title_of(fn), "ok": False, "message": "",
             "input": "", "expected": "", "got": "", "traceback": ""}
        _run_one(fn, mod, r, filename, guard)
        results.append(r)
    return results


def _run_one(fn, mod: types.ModuleType, r: dict, filename: str, guard: sandbox.Snapshot | None = None) -> None:
    """Run test ``fn`` on ``mod``, filling its result ``r``. Every way out of the
    learner's code is a result: an exception of any kind (SystemExit,
    KeyboardInterrupt and other BaseExceptions too) fails the test with a
    sentence saying what happened; only the time limit stops the whole check.

    With ``guard``, the shared state is compared and put back as soon as the
    test ends, before the result's words and traceback are made (they use the
    builtins the learner's code may have deleted)."""
    try:
        fn(mod)
        caught = None
    except _BaseException as exc:  # noqa: BLE001 - every way out is reported
        caught = exc
    found = []
    if guard:
        found = guard.changes()
        guard.touched += [f for f in found if f not in guard.touched]
        guard.restore()
    if isinstance(caught, LearnerError) and isinstance(caught.error, TimeLimit):
        raise caught.error from None
    if isinstance(caught, TimeLimit):
        raise caught
    if caught is None:
        r["ok"] = True
    elif isinstance(caught, Failure):
        r.update(message=caught.message, input=caught.input, expected=caught.expected, got=caught.got)
    elif isinstance(caught, LearnerError):
        r.update(message=_("{input}: {what}").format(input=caught.input, what=_raised(caught.error, filename)),
                 input=caught.input, traceback=trimmed_traceback(caught.error, filename))
    else:  # raised outside given(): still show it
        r.update(message=_raised(caught, filename), traceback=trimmed_traceback(caught, filename))
    if found:
        _untrusted(r, found)


def _from_learner(exc: BaseException, filename: str) -> bool:
    """Whether a frame of the learner's file is in ``exc``'s traceback (else the
    tests' own code raised it, working with a value the learner's code returned)."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            return True
        tb = tb.tb_next
    return False


def _raised(exc: BaseException, filename: str) -> str:
    """What happened, in a sentence: "your code raised ZeroDivisionError", or
    what an exception that would end or interrupt Python means, or that the
    tests' own code failed on what the learner's code returned (10**400 is too
    large for a float: the learner's code raised nothing)."""
    name = type(exc).__name__
    if not _from_learner(exc, filename):
        return _("the tests could not use what your code returned: working with it raised {error} ({detail})").format(
            error=name, detail=_detail(exc))
    if isinstance(exc, SystemExit) and hasattr(exc, "os_exit"):
        return _("your code called os._exit({status}), which would end Python itself; the checker stopped it "
                 "there. A function gives its answer with return.").format(status=exc.os_exit)
    if isinstance(exc, SystemExit):
        return _("your code raised SystemExit (sys.exit(), exit() or quit()), which would end Python; the checker "
                 "stopped it there. A function gives its answer with return.")
    if isinstance(exc, KeyboardInterrupt):
        return _("your code raised KeyboardInterrupt (what Ctrl+C raises), which would stop the checker; the "
                 "checker stopped your code there instead.")
    if not isinstance(exc, Exception):
        return _("your code raised {error}, which derives from BaseException and not from Exception: it would get "
                 "past the checker's handlers and stop it, so the checker stopped your code there.").format(error=name)
    return _("your code raised {error}").format(error=name)


def _detail(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a learner's object may refuse
        text = ""
    return text[:200] or type(exc).__name__


def check(slug: str, step_id: str, source: str, filename: str = LEARNER_FILE,
          seconds: float | None = 20.0, base: str = content.EXERCISES_DIR) -> dict:
    """Run step ``step_id`` of exercise ``slug`` against ``source``; a report dict.

    Raises content.ContentError for an unknown exercise or step.
    """
    entry = content.step(slug, step_id, base)
    tests = load_tests(entry)
    out = Output()
    report = {"slug": slug, "step": step_id, "ok": False, "passed": 0, "total": len(tests),
              "output": "", "error": None, "results": [], "touched": []}
    guard = sandbox.Snapshot()
    try:
        with captured(out), time_limit(seconds):
            try:
                mod, caught = load_module(source, filename), None
            except _BaseException as exc:  # noqa: BLE001 - SystemExit too: show it, do not exit
                mod, caught = None, exc
            guard.touched += guard.changes()
            guard.restore()  # first of all: what follows (the traceback too) uses the builtins
            if isinstance(caught, TimeLimit):
                raise caught
            if caught is not None:
                report["error"] = trimmed_traceback(caught, filename)
                return report
            report["results"] = run_tests(tests, mod, filename, guard)
    except TimeLimit as exc:
        report["error"] = f"TimeLimit: {exc}"
        return report
    finally:
        late = [f for f in out.reset + guard.changes() if f not in guard.touched]
        guard.restore()
        report["output"] = out.text()
        report["touched"] = guard.touched + late
    if report["touched"]:
        report["results"].append(_clean_state_result(report["touched"]))
        report["total"] += 1
    report["passed"] = sum(1 for r in report["results"] if r["ok"])
    report["ok"] = report["passed"] == report["total"] and report["total"] > 0
    return report


def run(source: str, filename: str = LEARNER_FILE, seconds: float | None = 20.0) -> dict:
    """Execute the learner's code (the Run button): its prints (stdout and
    stderr, see :class:`Output`) and any error."""
    out = Output()
    error = None
    guard = sandbox.Snapshot()
    caught, found = None, []
    try:
        with captured(out), time_limit(seconds):
            try:
                load_module(source, filename, name="__main__", guarded=False)
            except _BaseException as exc:  # noqa: BLE001
                caught = exc
            found = guard.changes()
            guard.restore()  # before anything else: leaving the with, and the traceback, use the builtins
    except _BaseException as exc:  # noqa: BLE001 - the time limit, just as the code ended
        caught = caught or exc
    found += [f for f in guard.changes() if f not in found]
    guard.restore()
    if caught is not None:
        error = trimmed_traceback(caught, filename)
    return {"output": out.text(), "error": error, "touched": out.reset + found}


def judge(slug: str, request: dict) -> dict:
    """Pass ``request`` to the judge module exercise ``slug`` names in its
    exercise.toml (``judge = "exercises.NAME"``, e.g. exercises.breakit), for
    steps whose page asks more than "check my code": its ``handle(request)``
    answers {"ok": True, "result": ...} or {"ok": False, "message": ...}.

    Raises content.ContentError for an unknown exercise or one without a judge.
    """
    name = content.load(slug).get("judge", "")
    if not name.startswith("exercises.") or not name[len("exercises."):].isidentifier():
        raise content.ContentError(f"exercise {slug!r} has no judge")
    return importlib.import_module(name).handle(request)


def json_safe(value):
    """``value`` with every non-finite float replaced by the string "inf",
    "-inf" or "nan", so that JSON.parse in the page can read it (JSON has no
    Infinity or NaN; Python's json writes them anyway)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def handle(request: dict) -> dict:
    """The page worker's entry: {"op": "check"|"run", "slug", "step", "source"},
    or {"op": "judge", "slug", "request": {...}} (see :func:`judge`)."""
    try:
        if request.get("op") == "judge":
            return json_safe(judge(request["slug"], request.get("request") or {}))
        if request.get("op") == "run":
            return {"ok": True, "result": run(request["source"], seconds=None)}
        if str(request.get("op", "")).startswith("wgsl-"):  # exercise 4: exercises/wgsl_judge.py
            from . import wgsl_judge

            return json_safe(wgsl_judge.handle(request))  # its reports hold inf where O does
        if request.get("op") == "check":
            return {"ok": True, "result": check(request["slug"], request["step"], request["source"], seconds=None)}
        return {"ok": False, "message": _("unknown op {op}").format(op=repr(request.get("op")))}
    except content.ContentError as exc:
        return {"ok": False, "message": str(exc)}


def handle_json(text: str) -> str:
    """String form of :func:`handle` for the page's worker (site/static/js/worker.js):
    the request as JSON text in, the reply as JSON text out."""
    return json.dumps(handle(json.loads(text)))

