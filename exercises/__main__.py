"""Offline path: the page's tests in your own terminal.

    python -m exercises list
    python -m exercises check online-softmax my_solution.py            # every step it defines
    python -m exercises check online-softmax my_solution.py --step scratch
    python -m exercises starter online-softmax scratch > my_solution.py
    python -m exercises check online-softmax my_solution.py --lang pt-BR   # messages in Portuguese

``--lang`` reads locale/<locale>/LC_MESSAGES/python.mo beside this package (the
offline kit, kit/cannery-exercises.zip, ships it; a plain checkout has only the
.po source, so its messages stay in English).

Exit status: 0 when every step checked passes, 1 when one fails, 2 for a
usage error (unknown exercise or step, missing file, nothing to check).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from . import content, runner


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m exercises", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="exercises and their steps")
    c = sub.add_parser("check", help="run a step's tests on your file")
    c.add_argument("slug")
    c.add_argument("file")
    c.add_argument("--step", help="one step id (default: every step whose names your file defines)")
    c.add_argument("--json", action="store_true", help="print the reports as JSON")
    c.add_argument("--seconds", type=float, default=20.0, help="time limit per step (default 20)")
    c.add_argument("--lang", default="en", help="language of the messages, e.g. pt-BR (default en)")
    s = sub.add_parser("starter", help="print a step's starter code")
    s.add_argument("slug")
    s.add_argument("step")
    args = parser.parse_args(argv)
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
        from emulator import i18n

        i18n.use(args.lang)
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
        reports = [runner.check(args.slug, st["id"], source, filename=os.path.abspath(args.file),
                                seconds=args.seconds) for st in steps]
    except content.ContentError as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(reports, indent=1))
    else:
        for st, rep in zip(steps, reports, strict=True):
            _print_report(rep, f"{args.slug} / {st['id']}")
    return 0 if all(r["ok"] for r in reports) else 1


if __name__ == "__main__":
    raise SystemExit(main())
