"""Data for the module page and the exercise pages, from site/content/.

:func:`build` returns what the templates need: ``module`` (module.toml with
each exercise resolved: built ones from their exercise.toml, the rest marked
coming), ``exercises`` (every built exercise with its steps' text read from
disk, and ``figures``: the numbers its texts quote, from course/figures.py),
``step_ids`` (all "SLUG/STEP" ids, the denominator of the progress line), and
``io_chart`` (the Probe step's log-log chart, from the emulator).
"""
from __future__ import annotations

import importlib
import math
import tomllib
from pathlib import Path

import i18n
from course import gpu_results
from course.figures import figures
from emulator import traffic
from emulator.tiling import M_DEFAULT, M_MAX
from exercises import content

ROOT = Path(__file__).resolve().parent.parent
MODULE_TOML = ROOT / "site" / "content" / "module.toml"


def _hints(text: str) -> list[str]:
    """hints.md split into hints at blank lines, in order."""
    return [h.strip() for h in text.split("\n\n") if h.strip()]


def predict_figures(step: dict) -> dict:
    """The emulator's answer to the Predict step (bytes, tiles, ratio)."""
    plain = traffic.count("plain", step["n"], step["d"], False, step["workgroup_bytes"])
    fused = traffic.count("fused", step["n"], step["d"], False, step["workgroup_bytes"])
    return {"plain": plain.total_bytes, "fused": fused.total_bytes,
            "ratio": plain.total_bytes / fused.total_bytes,
            "block_rows": fused.tiling.block_rows, "query_tiles": fused.tiling.query_tiles}


def load_exercise(slug: str, lang: str | None = None) -> dict:
    """One exercise with every step's prompt, starter, solution, hints and after-text.

    An exercise that runs outside the page (``in_browser = false``, ``steps = []``)
    keeps its own ``ladder``; each rung becomes a self-marked step
    (``self_steps``, key "SLUG/rung") and its ``files`` become downloads
    (``downloads``: name, href relative to its page, bytes, reference: whether it
    is our solution.py), with the exercise
    folder's prompt.md and hints.md. ``figures`` holds the numbers the texts
    quote (course/figures.py; the Markdown names them as ``exercise.figures``).
    An exercise with a ``judge`` module gets
    ``judge_data``: what that judge's ``handle({"op": "bugs"})`` gives the page
    (for break-it: each bug with its diff from breakit.diff, the weak tests),
    plus the sources its steps show (``judge_files``).
    """
    code = lang or i18n.default().code
    folder = Path(content.EXERCISES_DIR) / slug
    ex = content.load(slug)
    rungs = list(ex.get("ladder", []))  # English rungs: the self-marked steps' ids, in every language
    over = i18n.overlay_path(i18n.language(code), Path("exercises") / slug / "exercise.toml")
    if not i18n.language(code).default and over.exists():
        with open(over, "rb") as f:
            ex = i18n.merge(ex, tomllib.load(f), f"{code}/exercises/{slug}/exercise.toml")

    def text(path: Path) -> str:
        return i18n.read_text(path, code)

    ex["figures"] = figures()  # the texts' `exercise.figures.…`: see course/figures.py
    ex["ladder"] = [s["title"] for s in ex["steps"]] if ex["steps"] else list(ex.get("ladder", []))
    ex["self_steps"] = []
    ex["downloads"] = []
    if not ex.get("in_browser", True):
        ex["self_steps"] = [{"id": rung.lower(), "title": title, "key": f"{slug}/{rung.lower()}"}
                            for rung, title in zip(rungs, ex["ladder"], strict=True)]
        ex["downloads"] = [{"name": name, "href": f"files/{name}", "bytes": (folder / name).stat().st_size,
                            "reference": name == "solution.py"}  # our reference solution, named as a step's is
                           for name in ex.get("files", [])]
        ex["prompt_md"] = text(folder / "prompt.md")
        ex["hints"] = _hints(text(folder / "hints.md"))
    ex["gpu_results"] = gpu_results.load(ROOT / ex["results"], ex["results_focus"]) if ex.get("results") else {}
    ex["judge_data"] = {}
    ex["judge_files"] = {}
    if ex.get("judge"):
        judge = importlib.import_module(ex["judge"])
        ex["judge_data"] = judge.handle({"op": "bugs"})["result"]
        for test in ex["judge_data"].get("tests", []):  # the weak tests' titles, in the page's words
            if test["name"] in ex.get("weak_titles", {}):
                test["title"] = ex["weak_titles"][test["name"]].format(
                    scale=i18n.numbers(code).short(ex["figures"]["weak_scale"]))
        ex["judge_files"] = {name: (folder / name).read_text(encoding="utf-8")
                             for name in ("kernel.py", "weak_tests.py") if (folder / name).is_file()}
    for step in ex["steps"]:
        step["key"] = f"{slug}/{step['id']}"
        for name in (*content.STEP_FILES, "starter.wgsl", "solution.wgsl"):  # .wgsl: exercise 4
            step[name.replace(".", "_")] = content.read(step, name)
            if name.endswith(".md") and step[name.replace(".", "_")]:  # words: in the page's language
                step[name.replace(".", "_")] = text(Path(step["dir"]) / name)
        step["hints"] = _hints(step["hints_md"])
        step["fig"] = predict_figures(step) if step.get("kind") == "predict" else {}
        del step["dir"]  # an absolute path: keep it out of the built pages
    return ex


def io_chart(n: int = 4096, d: int = 32, width: int = 560, height: int = 340) -> dict:
    """Log-log chart data: fused and plain bytes against M at fixed N and d,
    beside the line 64·N²d²/M (Theorem 2's Θ(N²d²/M) with the constant our
    tiling gives: K and V, 2·N·d numbers of 4 bytes, read N/B_r = 8·N·d/M times)."""
    ms = [2 ** k for k in range(12, 19)]
    fused = [traffic.count("fused", n, d, False, m).total_bytes for m in ms]
    plain = [traffic.count("plain", n, d, False, m).total_bytes for m in ms]
    theory = [64 * n * n * d * d / m for m in ms]
    pad_l, pad_r, pad_t, pad_b = 84, 56, 20, 52
    x0, x1 = math.log2(ms[0]), math.log2(ms[-1])
    lo = 2 ** math.floor(math.log2(min(fused + theory)))
    hi = 2 ** math.ceil(math.log2(max(plain)))
    y0, y1 = math.log2(lo), math.log2(hi)

    def x(m):
        return round(pad_l + (math.log2(m) - x0) / (x1 - x0) * (width - pad_l - pad_r), 1)

    def y(v):
        return round(height - pad_b - (math.log2(v) - y0) / (y1 - y0) * (height - pad_t - pad_b), 1)

    def path(vals):
        return " ".join(f"{'M' if i == 0 else 'L'}{x(m)},{y(v)}" for i, (m, v) in enumerate(zip(ms, vals, strict=True)))

    yticks = [2 ** k for k in range(int(y0), int(y1) + 1, 2)]
    return {
        "n": n, "d": d, "width": width, "height": height,
        "points": [{"m": m, "fused": f, "plain": p, "x": x(m), "yf": y(f), "yp": y(p)}
                   for m, f, p in zip(ms, fused, plain, strict=True)],
        "fused_path": path(fused), "plain_path": path(plain), "theory_path": path(theory),
        "xticks": [{"m": m, "x": x(m)} for m in ms],
        "yticks": [{"v": v, "y": y(v), "mib": v / 2**20} for v in yticks],
        "label": {"fused": (x(ms[-1]) - 4, y(fused[-1]) - 10), "plain": (x(ms[-1]) - 4, y(plain[-1]) - 10),
                  "theory": (pad_l + 8, height - pad_b - 10)},
        "axis": {"left": pad_l, "right": width - pad_r, "top": pad_t, "bottom": height - pad_b},
    }


def build(context: dict, lang: str | None = None) -> dict:
    """Template data for the module and exercise pages (see the module docstring),
    in language ``lang`` (BCP 47; default: the source language)."""
    code = lang or i18n.default().code
    module = i18n.load_content(MODULE_TOML.relative_to(i18n.CONTENT), code)
    for link in module.get("lab_links", []):  # M: the manifest's default, or its largest
        link["M"] = M_MAX if link.get("largest_bench") else M_DEFAULT
    built = {slug: load_exercise(slug, code) for slug in content.slugs()}
    rows = []
    for entry in module["exercises"]:
        if entry["slug"] in built:
            ex = built[entry["slug"]]
            rows.append({"slug": ex["slug"], "title": ex["title"], "tier": ex["tier"], "ladder": ex["ladder"],
                         "minutes": ex["minutes"], "built": True,
                         "steps": [s["key"] for s in ex["steps"] + ex["self_steps"]]})
        else:
            rows.append(dict(entry, built=False, steps=[]))
    module["exercise_rows"] = rows
    order = [e["slug"] for e in module["exercises"]]
    exercises = sorted(built.values(), key=lambda ex: order.index(ex["slug"]) if ex["slug"] in order else len(order))
    step_ids = [s["key"] for ex in exercises for s in ex["steps"] + ex["self_steps"]]
    return {"module": module, "exercises": exercises, "step_ids": step_ids, "io_chart": io_chart()}


def write_downloads(exercises: list, out: Path) -> None:
    """Copy each exercise's downloads into ``out``/module/SLUG/files/ (same origin as its page)."""
    for ex in exercises:
        for item in ex["downloads"]:
            target = out / "module" / ex["slug"] / item["href"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((Path(content.EXERCISES_DIR) / ex["slug"] / item["name"]).read_bytes())
