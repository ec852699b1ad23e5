"""The offline kit, ``kit/cannery-exercises.zip``: the exercises' tests in a terminal.

Unzipped, its folder ``cannery-exercises/`` runs every in-page step's tests with
the standard library alone (CPython 3.11 or later, for ``tomllib``), from that
folder::

    python3 -m exercises list
    python3 -m exercises starter online-softmax scratch > my_solution.py
    python3 -m exercises check online-softmax my_solution.py

It holds the checker (``exercises/``), the emulator that it and the tests import
(``emulator/`` and the GPU planner ``planner/``, with ``kernels_wgsl/manifest.json`` and the WGSL sources the
emulator sizes each pass from), and for each exercise its ``exercise.toml``, the
files its judge reads (``bundle``), the files an exercise run elsewhere offers
(``files``), and per step ``tests.py`` and the starter. Each prompt and its hints
come as Markdown with their figures written in, in every language
(``prompt.md``, ``prompt.pt-BR.md``), and a README per language sits at the top.
The checker's messages come in every language too (``locale/<locale>/``, compiled
from the catalogs: ``check --lang pt-BR``).
Left out: the solutions of the steps checked here and the ``wrong/`` answers (a page
offers a solution after a pass), and the teacher notes. An exercise run elsewhere
(Triton) has no page to offer its solution, so its ``solution.py`` comes among its
``files``; the README names every solution the zip holds (:func:`solutions`).

Deterministic: entries sorted by path, every timestamp 1980-01-01 00:00, the same
permissions, deflate at level 9; the same sources give the same bytes.
"""
from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import i18n
from exercises import content

ROOT = Path(__file__).resolve().parent.parent
NAME = "cannery-exercises"
#: Where the zip lies in the built site (shared by every language).
HREF = f"kit/{NAME}.zip"
#: The oldest CPython the kit runs on (exercises/ reads exercise.toml with tomllib).
PYTHON_MIN = "3.11"
README = Path("kit") / "README.md"  # under site/content/ (each language's overlay beside it)
_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can hold


def _suffix(code: str) -> str:
    """'' for the source language, '.pt-BR' for another: prompt.md / prompt.pt-BR.md."""
    return "" if i18n.language(code).default else f".{code}"


def source_files() -> dict[str, bytes]:
    """{path in the kit folder: bytes} of every file copied as it is (no rendering)."""
    files: dict[str, bytes] = {}

    def add(path: Path) -> None:
        files[path.relative_to(ROOT).as_posix()] = path.read_bytes()

    for folder in ("exercises", "emulator", "planner"):
        for path in sorted((ROOT / folder).glob("*.py")):
            add(path)
    add(ROOT / "kernels_wgsl" / "manifest.json")
    for path in sorted((ROOT / "kernels_wgsl").rglob("*.wgsl")):
        add(path)
    base = Path(content.EXERCISES_DIR)
    for slug in content.slugs():
        ex = content.load(slug)
        add(base / slug / "exercise.toml")
        for pattern in (*ex.get("bundle", []), *ex.get("files", [])):
            for path in sorted((base / slug).glob(pattern)):
                add(path)
        for step in ex["steps"]:
            for name in ("tests.py", "starter.py", "starter.wgsl"):
                path = Path(step["dir"]) / name
                if path.is_file():
                    add(path)
    return files


def texts(exercises: list, render: Callable[..., str], code: str) -> dict[str, str]:
    """{path in the kit folder: text} of the prompts and hints of one language,
    each rendered by ``render(text, exercise=..., step=..., fig=...)`` (the page's
    Jinja context, so the figures are the ones the page shows)."""
    out = {}
    rel = Path(content.EXERCISES_DIR).relative_to(ROOT).as_posix()
    for ex in exercises:
        if ex.get("prompt_md"):  # an exercise run elsewhere: one prompt and its hints
            out[f"{rel}/{ex['slug']}/prompt{_suffix(code)}.md"] = render(ex["prompt_md"], exercise=ex)
            out[f"{rel}/{ex['slug']}/hints{_suffix(code)}.md"] = render("\n\n".join(ex["hints"]), exercise=ex)
        for st in ex["steps"]:
            names = {"exercise": ex, "step": st, "fig": st["fig"]}
            out[f"{rel}/{ex['slug']}/{st['id']}/prompt{_suffix(code)}.md"] = render(st["prompt_md"], **names)
            out[f"{rel}/{ex['slug']}/{st['id']}/hints{_suffix(code)}.md"] = render("\n\n".join(st["hints"]), **names)
    return out


def solutions(files: dict[str, bytes]) -> list[str]:
    """The paths in ``files`` (the kit's) that hold one of our solutions (``solution.py``, ``solution.wgsl``)."""
    return sorted(p for p in files if Path(p).stem == "solution")


def readme(render: Callable[..., str], code: str, held: list[str]) -> dict[str, str]:
    """{"README.md" or "README.pt-BR.md": text}: site/content/kit/README.md in language ``code``;
    ``held``: the solutions the kit holds (:func:`solutions`), which the README names."""
    text = i18n.read_text(i18n.CONTENT / README, code)
    kit = {"folder": NAME, "python_min": PYTHON_MIN, "solutions": held}
    return {f"README{_suffix(code)}.md": render(text, kit=kit)}


def zip_bytes(files: dict[str, bytes]) -> bytes:
    """A zip of ``files`` under the folder NAME/, the same bytes for the same files."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for path in sorted(files):
            info = zipfile.ZipInfo(f"{NAME}/{path}", date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, so that the permissions below mean the same everywhere
            info.external_attr = 0o644 << 16
            z.writestr(info, files[path], compresslevel=9)
    return buffer.getvalue()


def write(out: Path, languages: dict[str, tuple[list, Callable[..., str]]]) -> dict:
    """Write ``out``/kit/cannery-exercises.zip; ``languages`` maps each language
    code to (its exercises from course.build, its render function). Returns
    {"href": HREF, "bytes": size, "name": file name, "folder": NAME,
    "python_min": PYTHON_MIN} for the pages that link it."""
    files = source_files()
    for lang in i18n.languages():  # the checker's messages and number marks (check --lang pt-BR)
        if not lang.default:
            files[f"locale/{lang.locale}/LC_MESSAGES/python.mo"] = i18n.mo_bytes(lang, "python")
            files[f"locale/{lang.locale}/numbers.json"] = json.dumps(i18n.numbers(lang.code).symbols(),
                                                                     sort_keys=True).encode()
            for path in sorted((i18n.CONTENT / lang.code / "exercises").glob("*/exercise.toml")):
                files[path.relative_to(ROOT).as_posix()] = path.read_bytes()  # the judges' words
    held = solutions(files)
    for code, (exercises, render) in languages.items():
        for path, text in {**texts(exercises, render, code), **readme(render, code, held)}.items():
            files[path] = text.encode("utf-8")
    data = zip_bytes(files)
    target = out / HREF
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return {"href": HREF, "bytes": len(data), "name": Path(HREF).name, "folder": NAME, "python_min": PYTHON_MIN}
