"""Offline path: the page's tests in your own terminal.

    python -m exercises list
    python -m exercises check online-softmax my_solution.py            # every step it defines
    python -m exercises check online-softmax my_solution.py --step scratch
    python -m exercises starter online-softmax scratch > my_solution.py
    python -m exercises check online-softmax my_solution.py --lang pt-BR   # messages in Portuguese

``--lang`` reads locale/<locale>/LC_MESSAGES/python.mo beside this package (the
offline kit, kit/cannery-exercises.zip, ships it; a plain checkout has only the
.po source, so its messages stay in English).

Each step is checked in a Python of its own (a child process, see
:func:`_check_step`): whatever the learner's code does to its process (sys.exit,
os._exit, os.abort, a signal, a loop that ignores the time limit) ends that
child, and this one still prints a report for the step.

Exit status: 0 when every step checked passes (a report of passes was printed),
1 when one fails (or its Python ended before the tests finished), 2 for a usage
error (unknown exercise or step, missing file, a time limit that is not a
number of seconds, nothing to check).
"""
# No `from __future__ import ...` here: it is an import like any other, and would
# find a learner's __future__.py before _folder_last below has run.
import os
import sys


def _folder_last() -> str | None:
    """Move the folder ``python -m`` puts first on sys.path (the current one) to
    the end, before the checker imports anything: a learner's json.py or
    tokenize.py there would otherwise shadow the standard modules the checker
    uses. The learner's own modules there can still be imported. Returns it."""
    if sys.path and sys.path[0] in ("", os.getcwd()):
        folder = sys.path.pop(0)
        sys.path.append(folder)
        return folder or os.getcwd()
    return None


_FOLDER = _folder_last() if __name__ == "__main__" else None

import argparse  # noqa: E402 - after _folder_last
import json  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

from emulator import i18n  # noqa: E402
from emulator.i18n import _, group, short  # noqa: E402

from . import content, runner  # noqa: E402

DEFAULT_SECONDS = 20.0  # time limit per step
MOST_SECONDS = 24 * 3600.0  # a longer limit is a typo, and past the platform's timer
GRACE = 10.0  # s the child may run past its own limit (its start, its report) before it is ended
_STDLIB = frozenset(sys.stdlib_module_names)


def _seconds(text: str) -> float:
    """--seconds: a number of seconds, more than 0 and at most MOST_SECONDS
    (argparse turns the error into a usage message and exit status 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(_("{text} is not a number of seconds").format(text=repr(text))) from None
    if not 0 < value <= MOST_SECONDS:  # nan and inf too
        raise argparse.ArgumentTypeError(
            _("the time limit must be more than 0 s and at most {most} s, not {text}").format(
                most=group(int(MOST_SECONDS)), text=text))
    return value


def _print_report(report: dict, title: str) -> None:
    print(f"== {title}: {report['passed']} of {report['total']} tests pass")
    if report["output"]:
        print("-- printed --")
        print(report["output"].rstrip("\n"))
    if report["error"]:
        print(report["error"])
        return
    for r in report["results"]:
        mark = "PASS" if r["ok"] else "FAIL"
        print(f"{mark}  {r['title']}")
        if not r["ok"]:
            print(f"      {r['message']}")
            if r["traceback"]:
                print("      " + r["traceback"].replace("\n", "\n      "))


def _defines(source: str, names: list) -> bool:
    import ast
    try:
        tree = ast.parse(source)
    except (SyntaxError, RecursionError, MemoryError):
        return True  # let the checker report it
    defined = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Assign):
            defined.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return any(n in defined for n in names)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m exercises", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="exercises and their steps")
    c = sub.add_parser("check", help="run a step's tests on your file")
    c.add_argument("slug")
    c.add_argument("file")
    c.add_argument("--step", help="one step id (default: every step whose names your file defines)")
    c.add_argument("--json", action="store_true", help="print the reports as JSON")
    c.add_argument("--seconds", type=_seconds, default=DEFAULT_SECONDS,
                   help=f"time limit per step, more than 0 (default {short(DEFAULT_SECONDS)})")
    c.add_argument("--lang", default="en", help="language of the messages, e.g. pt-BR (default en)")
    s = sub.add_parser("starter", help="print a step's starter code")
    s.add_argument("slug")
    s.add_argument("step")
    return parser


def _language(argv) -> None:
    """Use --lang's language before the arguments are checked, so that a usage
    error (--seconds) is worded in it too."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--lang", default="en")
    known, _rest = pre.parse_known_args(argv)
    i18n.use(known.lang)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _language(argv)
    args = _parser().parse_args(argv)
    try:
        if args.cmd == "list":
            for slug in content.slugs():
                ex = content.load(slug)
                steps = ", ".join(f"{st['id']} ({', '.join(st.get('names', []))})" for st in ex["steps"])
                if not ex["steps"]:
                    steps = f"{' · '.join(ex.get('ladder', []))}, on your own machine: {', '.join(ex.get('files', []))}"
                print(f"{slug}: {ex['title']}\n    steps: {steps}")
            return 0
        if args.cmd == "starter":
            print(content.read(content.step(args.slug, args.step), "starter.py"), end="")
            return 0
        ex = content.load(args.slug)
        if not ex["steps"]:
            print(f"{args.slug} does not run here: its tests need your own GPU. Run them with pytest, as its "
                  f"prompt says ({', '.join(ex.get('files', []))} in site/content/exercises/{args.slug}/).",
                  file=sys.stderr)
            return 2
        if not os.path.isfile(args.file):
            print(f"no file {args.file}", file=sys.stderr)
            return 2
        with open(args.file, encoding="utf-8") as f:
            source = f.read()
        steps = [content.step(args.slug, args.step)] if args.step else [
            st for st in ex["steps"] if _defines(source, st.get("names", []))]
        if not steps:
            names = "; ".join(f"{st['id']}: {', '.join(st.get('names', []))}" for st in ex["steps"])
            print(f"{args.file} defines none of the names a step checks ({names}).", file=sys.stderr)
            return 2
    except content.ContentError as exc:
        print(exc, file=sys.stderr)
        return 2
    imported = {name.partition(".")[0] for name in sys.modules}
    reports = []
    for st in steps:
        report, theirs = _check_step(args.slug, st["id"], os.path.abspath(args.file), args.seconds, args.lang)
        reports.append(report)
        imported |= theirs
    if args.json:
        print(json.dumps(reports, indent=1))
    else:
        for st, rep in zip(steps, reports, strict=True):
            _print_report(rep, f"{args.slug} / {st['id']}")
    _warn_clashes(_FOLDER, imported)
    return 0 if all(r["ok"] for r in reports) else 1


# The child: one step's check in a Python of its own. -P keeps the current folder
# off sys.path (the learner's json.py cannot shadow the checker's json); the
# package's folder and then the current one are appended.
_CHILD = ("import sys; sys.path.append(sys.argv[1]); from exercises.__main__ import _child; "
          "raise SystemExit(_child(sys.argv[2:]))")


def _child(argv: list) -> int:
    """In the child: check one step, write {"report", "imported"} as JSON to argv[0]."""
    out, slug, step, path, seconds, lang = argv
    sys.path.append(os.getcwd())  # the learner's own modules beside their file, as before
    i18n.use(lang)
    with open(path, encoding="utf-8") as f:
        source = f.read()
    report = runner.check(slug, step, source, filename=path, seconds=float(seconds))
    imported = sorted({name.partition(".")[0] for name in sys.modules} & _STDLIB)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"report": report, "imported": imported}, f)
    return 0


def _flags() -> list:
    """The interpreter options this Python runs under that the child keeps."""
    flags = sys.flags
    return [opt for opt, on in (("-I", flags.isolated), ("-E", flags.ignore_environment), ("-S", flags.no_site),
                                ("-s", flags.no_user_site)) if on]


def _check_step(slug: str, step: str, path: str, seconds: float, lang: str) -> tuple[dict, set]:
    """Check one step in a child Python; (its report, the standard modules it imported).

    A child that ends without a report (the learner's code ended its process)
    or runs GRACE seconds past its limit (the code stopped the timer) gives a
    failed report saying so, never a pass."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "report.json")
        cmd = [sys.executable, *_flags(), "-P", "-c", _CHILD, content.ROOT, out, slug, step, path,
               repr(seconds), lang]
        # the child's own stdout (anything written past the checker's buffer) goes to stderr,
        # so that --json stays JSON
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno())
        try:
            status = proc.wait(timeout=seconds + GRACE)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            error = "TimeLimit: " + _("stopped after {seconds} s: is there a loop that never ends?").format(
                seconds=short(seconds))
            return _ended(slug, step, error), set()
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        try:
            with open(out, encoding="utf-8") as f:
                got = json.load(f)
            return got["report"], set(got["imported"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    if status < 0:
        try:
            how = signal.Signals(-status).name
        except ValueError:
            how = str(-status)
        error = _("Python was ended by the signal {signal} while your code ran, before the tests could report: "
                  "something your code did ended the process (os.abort(), os.kill(), a crash).").format(signal=how)
    else:
        error = _("Python ended with exit status {status} while your code ran, before the tests could report: "
                  "something your code did ended the process.").format(status=status)
    return _ended(slug, step, error), set()


def _ended(slug: str, step: str, error: str) -> dict:
    """The report of a step whose Python did not report: failed, with ``error``."""
    total = len(runner.load_tests(content.step(slug, step)))
    return {"slug": slug, "step": step, "ok": False, "passed": 0, "total": total, "output": "", "error": error,
            "results": [], "touched": []}


def _warn_clashes(folder: str | None, imported: set) -> None:
    """Name the files in ``folder`` (the current one) named like a standard module
    the checker imported, and ask for them to be renamed (the checker used
    Python's own: see _folder_last)."""
    if not folder or not os.path.isdir(folder):
        return
    clashes = []
    for entry in sorted(os.listdir(folder)):
        stem, ext = os.path.splitext(entry)
        package = ext == "" and os.path.isfile(os.path.join(folder, entry, "__init__.py"))
        if (ext == ".py" or package) and stem in _STDLIB and stem in imported:
            clashes.append((entry, stem))
    for entry, stem in clashes:
        print(_("Note: {file} in this folder has the name of Python's module {module}, which the checker uses. "
                "The checker used Python's own {module}; rename your file (my_{module}.py, say), or an import of "
                "{module} will not find it.").format(file=entry, module=stem), file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
