"""Keep the translations: ``python -m i18n update`` and ``python -m i18n check``.

    python -m i18n update   # pybabel extract (one .pot per domain), then init or update each language's .po
    python -m i18n check    # exit 1, listing each problem, if any word lacks its translation

Both run Babel's own command line (babel.messages.frontend) with the mapping
file of each domain, ``locale/<domain>.cfg``.
"""
from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

from babel.messages import frontend, pofile

from . import ROOT, domains, languages, po_path, pot_path
from .checks import problems


def pybabel(*args: str) -> None:
    """Run one pybabel command (extract, init, update) from the repository root."""
    frontend.CommandLineInterface().run(["pybabel", "-q", *args])


def extract(domain: str, output: Path) -> None:
    """Extract ``domain``'s messages, as its mapping file selects them, into ``output`` (.pot)."""
    pybabel("extract", "-F", str(Path("locale") / f"{domain}.cfg"), "-o", str(output),
            "--sort-by-file", "--add-location=file", "--no-wrap", "--project=Cannery",
            "--copyright-holder=Cannery", "--msgid-bugs-address=-", "-c", "TRANSLATORS:", ".")


_DATE_LINE = re.compile(r'^"(POT-Creation-Date|PO-Revision-Date): .*\\n"$', re.M)


def _steady(path: Path) -> None:
    """Pin the header's dates, so that an update that changes no message changes
    no file (and two people's updates do not conflict on a timestamp)."""
    text = path.read_text(encoding="utf-8")
    path.write_text(_DATE_LINE.sub(lambda m: f'"{m.group(1)}: 2026-11-30 00:00+0000\\n"', text), encoding="utf-8")


def update() -> None:
    """Extract every domain and bring each language's catalog up to date."""
    for domain in domains():
        pot = pot_path(domain)
        extract(domain, pot.relative_to(ROOT))
        _steady(pot)
        for lang in languages():
            if lang.default:
                continue
            po = po_path(lang, domain)
            if po.exists():
                pybabel("update", "-i", str(pot), "-o", str(po), "-l", lang.locale, "-D", domain,
                        "--no-fuzzy-matching", "--ignore-obsolete", "--no-wrap")
            else:
                po.parent.mkdir(parents=True, exist_ok=True)
                pybabel("init", "-i", str(pot), "-o", str(po), "-l", lang.locale, "-D", domain, "--no-wrap")
            _steady(po)


def extracted_ids(domain: str) -> set:
    """The msgids the code holds now (a fresh extraction into a temporary file)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"{domain}.pot"
        extract(domain, out)
        with open(out, "rb") as f:
            return {m.id if isinstance(m.id, str) else m.id[0] for m in pofile.read_po(f) if m.id}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["update", "check"])
    args = parser.parse_args(argv)
    import os
    os.chdir(ROOT)
    if args.command == "update":
        update()
        return 0
    found = problems({d: extracted_ids(d) for d in domains()})
    for line in found:
        print(line)
    if found:
        print(f"{len(found)} problems; translate them, or run `python -m i18n update` first", file=sys.stderr)
        return 1
    print("every message, caption and content file is translated")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
