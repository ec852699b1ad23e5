"""CLI: ``python -m facts [--check]``.

Without flags: compute and write facts/facts.json, facts/probe_qkv.json and
facts/held_out_f16.json.
--check: compute, compare with the files on disk, write nothing; exit 0 when
all are current, 1 when any is stale or missing, 2 when the model wheel
is not available (the message says how to fetch it).
"""

from __future__ import annotations

import argparse
import sys

from . import compute, stale_files
from . import model as model_mod


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m facts", description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="recompute and fail (exit 1) if the committed files are stale")
    args = ap.parse_args(argv)
    try:
        m = model_mod.load()
    except (model_mod.ModelUnavailable, model_mod.ModelMismatch) as e:
        print(f"facts: {e}", file=sys.stderr)
        return 2
    if args.check:
        stale = stale_files(m)
        for path in stale:
            print(f"facts: {path.relative_to(compute.HERE.parent)} is stale; run `python -m facts`",
                  file=sys.stderr)
        if not stale:
            print("facts: facts.json, probe_qkv.json and held_out_f16.json are current")
        return 1 if stale else 0
    for path, text in compute.render(m).items():
        path.write_text(text, encoding="utf-8")
        print(f"facts: wrote {path.relative_to(compute.HERE.parent)} ({len(text.encode()):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
