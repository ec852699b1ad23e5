"""Exercise 3's measured figures, for its page: one run of bench_flash_triton.py on a GPU.

:func:`load` reads the run that the exercise's exercise.toml names (``results``,
a bench/results/triton*.json file written by ``bench_flash_triton.py --json``)
and returns what ``_exercise_gpu_results.html.j2`` shows, numbers untouched
(the template writes them by the page's language rules):

``meta``
    ``gpu``, ``torch``, ``triton``, ``date`` (YYYY-MM-DD), ``command`` (the
    benchmark's command line as a learner types it, output paths left out),
    ``batch`` and ``heads``.
``speed``
    At the largest N measured, one entry per (dtype, d, mask): for each
    direction, ``triton_ms`` and ``sdpa_ms`` (SDPA as it picks), ``ran`` (the
    backend SDPA picked, from the profiler), ``share`` (SDPA's time over
    ours: 1.0 is as fast as SDPA) and ``flash_share`` (the same against SDPA
    held to its FlashAttention-2 backend; None where it was not timed).
``by_n``
    For the ``focus`` case (exercise.toml ``[results_focus]``), the share of
    SDPA's speed at each N, forward and forward+backward.
``memory``
    For the focus case, peak bytes beyond the inputs at each N and direction
    for ``triton``, ``sdpa`` and ``by_hand``; None where the run was out of
    memory (``oom`` names which) or not made.

Raises KeyError or ValueError if the file lacks what a row of the record
format holds (bench_flash_triton.py's docstring).
"""
from __future__ import annotations

import json
from pathlib import Path

DIRECTIONS = ("forward", "forward+backward")


def _command(raw: str) -> str:
    """The recorded command without its --json/--md output paths, as `python3 bench_flash_triton.py …`."""
    words, out, skip = raw.split(), [], False
    for w in words:
        if skip:
            skip = False
            continue
        if w in ("--json", "--md"):
            skip = True
            continue
        out.append(w)
    if out and out[0].endswith("bench_flash_triton.py"):
        out[0] = "bench_flash_triton.py"
    return "python3 " + " ".join(out)


def _share(ours: dict | None, theirs: dict | None) -> float | None:
    if not ours or not theirs or ours["ms"] is None or theirs["ms"] is None:
        return None
    return theirs["ms"] / ours["ms"]


def load(path: Path, focus: dict) -> dict:
    """The page's figures from one recorded run (see the module docstring).

    focus: {"dtype": str, "d": int, "causal": bool}, the case of the by-N and memory tables.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    meta, rows = data["meta"], data["rows"]
    index = {}
    for r in rows:
        who = "triton" if r["kernel"].startswith("triton") else \
            ("sdpa " + r["backend"] if r["kernel"] == "sdpa" else "by hand")
        index[(r["dtype"], r["d"], r["causal"], r["n"], r["direction"], who)] = r
    top = max(r["n"] for r in rows)
    cases = sorted({(r["dtype"], r["d"], r["causal"]) for r in rows if r["n"] == top},
                   key=lambda c: (c[0] != "float16", c[1], c[2]))
    speed = []
    for dt, d, causal in cases:
        entry = {"dtype": dt, "d": d, "causal": causal, "n": top}
        for direction in DIRECTIONS:
            tri = index.get((dt, d, causal, top, direction, "triton"))
            auto = index.get((dt, d, causal, top, direction, "sdpa auto"))
            flash = index.get((dt, d, causal, top, direction, "sdpa flash"))
            entry[direction] = None if not tri or not auto else {
                "triton_ms": tri["ms"], "sdpa_ms": auto["ms"], "ran": auto["ran"],
                "share": _share(tri, auto), "flash_ms": flash["ms"] if flash else None,
                "flash_share": _share(tri, flash)}
        speed.append(entry)
    key = (focus["dtype"], focus["d"], bool(focus["causal"]))
    ns = sorted({r["n"] for r in rows if (r["dtype"], r["d"], r["causal"]) == key})
    by_n, memory = [], []
    for n in ns:
        by_n.append({"n": n, **{direction: _share(index.get((*key, n, direction, "triton")),
                                                 index.get((*key, n, direction, "sdpa auto")))
                                for direction in DIRECTIONS}})
        for direction in DIRECTIONS:
            cells, oom = {}, []
            for name, who in (("by_hand", "by hand"), ("sdpa", "sdpa auto"), ("triton", "triton")):
                r = index.get((*key, n, direction, who))
                cells[name] = None if r is None else r["peak_bytes"]
                if r is not None and r["error"] == "out of memory":
                    oom.append(name)
            memory.append({"n": n, "direction": direction, **cells, "oom": oom})
    return {"meta": {"gpu": meta["gpu"], "torch": meta["torch"].split("+")[0], "triton": meta["triton"],
                     "date": meta["started"][:10], "command": _command(meta["command"]),
                     "batch": rows[0]["batch"], "heads": rows[0]["heads"]},
            "focus": {"dtype": key[0], "d": key[1], "causal": key[2]},
            "speed": speed, "by_n": by_n, "memory": memory}
