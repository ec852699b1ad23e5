#!/usr/bin/env python3
"""Build the Cannery site from site/ into dist/ (or --out), from scratch.

    python build.py                  # writes dist/
    python build.py --out /tmp/site  # writes elsewhere
    python build.py --check          # fails (exit 1) if dist/ or facts are stale
    python build.py --serve          # builds, then serves on http://127.0.0.1:8000

Every page comes from one file in site/content/pages/*.toml naming its
template, header, sections, styles and scripts (one loop renders them all,
as makesite does); a page with ``for_each = "exercises"`` is rendered once per
exercise in site/content/exercises/. Every number a page shows is rendered
from data: the emulator's counts (emulator/), facts/facts.json and
site/content/. Formulas in content Markdown ($...$) become MathML at build
time (latex2mathml). The code editor (CodeMirror 6) is bundled from
node_modules by esbuild into vendor/codemirror/. Output is deterministic: two
builds give byte-identical files.
"""
from __future__ import annotations

import argparse
import base64
import filecmp
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import babel.numbers
import jinja2
import markupsafe

ROOT = Path(__file__).resolve().parent
SITE = ROOT / "site"
NODE = ROOT / "node_modules"
DEFAULT_OUT = ROOT / "dist"
PAGES = SITE / "content" / "pages"
EDITOR_ENTRY = SITE / "editor" / "codemirror-entry.js"
EDITOR_OUT = Path("vendor") / "codemirror" / "codemirror.js"

import i18n  # noqa: E402
from course import measured  # noqa: E402
from emulator import traffic  # noqa: E402
from emulator.backward import CHECK_MAX_N as BACKWARD_CHECK_MAX_N  # noqa: E402
from emulator.tiling import (  # noqa: E402
    CHECK_MAX_N,
    COUNT_MAX_N,
    HEAD_DIMS,
    LESSON_KERNELS,
    M_DEFAULT,
    M_MAX,
    M_MIN,
    MANIFEST,
)
from sitebuild.markdown import markdown  # noqa: E402
from sitebuild.server import CSP, make_server  # noqa: E402

# The Python packages the page's worker runs besides the checker (py/bundle.json).
PAGE_PACKAGES = ("emulator", "planner", "lab_api")

# Only the Pyodide files the page needs (core runtime, stdlib, lock file).
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm",
                 "python_stdlib.zip", "pyodide-lock.json")
GSAP_FILES = ("gsap.min.js",)

def load_toml(path: Path) -> dict:
    """Read a TOML content file."""
    with open(path, "rb") as f:
        return tomllib.load(f)


def load_facts() -> dict:
    """facts/facts.json, parsed (the committed facts about the real model)."""
    path = ROOT / "facts" / "facts.json"
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def lesson_counts() -> dict:
    """The emulator's figures the page quotes, keyed "n{N}_d{d}" (full attention, M default)."""
    out = {}
    for n in (1024, 4096):
        for d in HEAD_DIMS:
            plain = traffic.count("plain", n, d)
            fused = traffic.count("fused", n, d)
            out[f"n{n}_d{d}"] = {
                "n": n, "d": d,
                "plain": plain.as_dict(), "fused": fused.as_dict(),
                "ratio": plain.total_bytes / fused.total_bytes,
                "score_bytes": 4 * n * n,
            }
    return out


def copy_tree(src: Path, dst: Path, suffixes: tuple | None = None) -> None:
    """Copy files from src to dst in sorted order (optionally only some suffixes)."""
    for path in sorted(src.rglob("*")):
        if path.is_dir() or "__pycache__" in path.parts:
            continue
        if suffixes and path.suffix not in suffixes:
            continue
        target = dst / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


def sri(path: Path) -> str:
    """Subresource Integrity value (sha384, base64) of a built file."""
    digest = hashlib.sha384(path.read_bytes()).digest()
    return "sha384-" + base64.b64encode(digest).decode()


def python_bundle(out: Path) -> None:
    """Write py/bundle.json: the source files of the emulator, the GPU planner
    and the lab's request API (PAGE_PACKAGES), the kernel manifest and the WGSL
    sources (planner/shaders.py sizes each pass from them), which the Pyodide
    worker writes into its file system."""
    files = {}
    for package in PAGE_PACKAGES:
        for path in sorted((ROOT / package).glob("*.py")):
            files[f"{package}/{path.name}"] = path.read_text(encoding="utf-8")
    files["kernels_wgsl/manifest.json"] = (ROOT / "kernels_wgsl" / "manifest.json").read_text(encoding="utf-8")
    kernels = ROOT / "kernels_wgsl"
    for path in sorted(kernels.rglob("*.wgsl")):  # gpu_plan reads each pass's limits; parts/ for the includes
        files[f"kernels_wgsl/{path.relative_to(kernels).as_posix()}"] = path.read_text(encoding="utf-8")
    # each language's messages for the Python in the page (emulator/i18n.py reads them)
    catalogs = {lang.code: {"locale": lang.locale, "numbers": i18n.numbers(lang.code).symbols(),
                            "mo": base64.b64encode(i18n.mo_bytes(lang, "python")).decode()}
                for lang in i18n.languages() if not lang.default}
    target = out / "py" / "bundle.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"files": files, "catalogs": catalogs}, sort_keys=True), encoding="utf-8")


def measured_table(out: Path) -> None:
    """Write data/measured-h200.json: the H200's measured figures the Time card shows
    without WebGPU or on a software adapter (course.measured.table, from bench/results/)."""

    target = out / "data" / "measured-h200.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(measured.table(), sort_keys=True, ensure_ascii=False), encoding="utf-8")


def page_catalogs(out: Path) -> None:
    """Write locale/<code>/page.json for each translated language: the page's
    JavaScript messages (gettext domain "page"), read by site/static/js/i18n.js."""
    for lang in i18n.languages():
        if lang.default:
            continue
        target = out / "locale" / lang.code / "page.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(i18n.js_messages(lang, "page"), ensure_ascii=False, sort_keys=True),
                          encoding="utf-8")


def exercises_bundle(out: Path) -> None:
    """Write py/exercises.json: the checker package, each step's tests.py and
    exercise.toml, and the files an exercise's judge reads (its exercise.toml's
    ``bundle`` globs, e.g. break-it's kernel.py, bugs/*.py, weak_tests.py), at
    the same relative paths as in this repository, for the page's Python worker
    (site/static/js/worker.js) where it serves the exercises (it loads
    py/bundle.json too, for the emulator)."""
    files = {}
    for path in sorted((ROOT / "exercises").glob("*.py")):
        files[f"exercises/{path.name}"] = path.read_text(encoding="utf-8")
    base = SITE / "content" / "exercises"
    for path in sorted(base.rglob("*")):
        if path.name in ("exercise.toml", "tests.py") and "wrong" not in path.parts:
            files[path.relative_to(ROOT).as_posix()] = path.read_text(encoding="utf-8")
    for lang in i18n.languages():  # each language's words for the judges (break-it's bug titles)
        if not lang.default:
            for path in sorted((SITE / "content" / lang.code / "exercises").glob("*/exercise.toml")):
                files[path.relative_to(ROOT).as_posix()] = path.read_text(encoding="utf-8")
    for toml_path in sorted(base.glob("*/exercise.toml")):  # files a judge reads (exercise.toml `bundle`)
        for pattern in load_toml(toml_path).get("bundle", []):
            for path in sorted(toml_path.parent.glob(pattern)):
                files[path.relative_to(ROOT).as_posix()] = path.read_text(encoding="utf-8")
    target = out / "py" / "exercises.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"files": files}, sort_keys=True), encoding="utf-8")


def bundle_editor(out: Path) -> None:
    """Bundle CodeMirror 6 (pinned in package.json) and its Python mode from
    node_modules into one self-hosted ES module with esbuild.

    Raises FileNotFoundError if esbuild is missing (run `npm ci`), and
    subprocess.CalledProcessError if esbuild fails.
    """
    esbuild = NODE / ".bin" / "esbuild"
    if not esbuild.exists():
        raise FileNotFoundError(f"{esbuild} is missing: run `npm ci`")
    target = out / EDITOR_OUT
    target.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(esbuild), str(EDITOR_ENTRY.relative_to(ROOT)), "--bundle", "--format=esm", "--minify",
                    "--legal-comments=eof", "--charset=utf8", "--log-level=warning",
                    f"--outfile={target}"], cwd=ROOT, check=True)


def copy_vendor(out: Path) -> None:
    """Copy only the front-end package files the page loads into vendor/."""
    for name in PYODIDE_FILES:
        dst = out / "vendor" / "pyodide" / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(NODE / "pyodide" / name, dst)
    for name in GSAP_FILES:
        dst = out / "vendor" / "gsap" / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(NODE / "gsap" / "dist" / name, dst)


def make_env(code: str | None = None) -> jinja2.Environment:
    """Jinja2 with StrictUndefined and autoescape, in the language ``code``
    (default: the source language): gettext through jinja2.ext.i18n with that
    language's catalog (domain "site"), number filters by its Babel rules,
    and a Markdown filter."""
    lang = i18n.language(code) if code else i18n.default()
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(SITE / "templates")),
        undefined=jinja2.StrictUndefined,
        autoescape=jinja2.select_autoescape(["html", "j2", "xml"], default=True),
        keep_trailing_newline=True,
        extensions=["jinja2.ext.i18n"],
    )
    env.install_gettext_translations(i18n.translations(lang.code, "site"), newstyle=True)
    env.policies["ext.i18n.trimmed"] = True  # as locale/site.cfg extracts them
    nums = i18n.numbers(lang.code)
    env.filters["thousands"] = nums.group
    env.filters["mib"] = lambda x, digits=1: nums.fixed(x / 2**20, digits)
    env.filters["fixed"] = lambda x, digits=1: nums.fixed(x, digits)
    env.filters["num"] = nums.short
    env.filters["percent"] = lambda x: babel.numbers.format_percent(x, format="#,##0%", locale=lang.locale)
    env.filters["tojson_sorted"] = lambda x: json.dumps(x, sort_keys=True)

    @jinja2.pass_context
    def md(ctx, text: str, **extra) -> markupsafe.Markup:
        """Render content Markdown as a Jinja template first (so its numbers come
        from data; ``extra`` adds names such as step=...), then as Markdown with
        MathML formulas."""
        return markupsafe.Markup(markdown(env.from_string(text).render(dict(ctx.get_all(), **extra))))

    env.filters["md"] = md
    return env


def load_pages(code: str) -> list[dict]:
    """Every page file in site/content/pages/, sorted by name, in language ``code``."""
    pages = []
    for path in sorted(PAGES.glob("*.toml")):
        page = i18n.load_content(path.relative_to(SITE / "content"), code)
        page["name"] = path.stem
        pages.append(page)
    return pages


def root_of(output: str) -> str:
    """Relative prefix from a page's output path back to the site root ("", "../", ...)."""
    return "../" * output.count("/")


def render_pages(env: jinja2.Environment, context: dict, out: Path) -> list[str]:
    """Render every page of one language (one per exercise for ``for_each =
    "exercises"``) under that language's prefix; returns the outputs.

    Each page gets ``root`` (back to the site root, for shared files such as
    static/), ``home`` (back to its language's root, for links between pages)
    and ``alternates`` (the same page in every language, for hreflang links
    and the language switch)."""
    written = []
    lang = context["lang"]
    for page in load_pages(lang.code):
        items = [None]
        if page.get("for_each") == "exercises":
            items = context["exercises"]
        for item in items:
            path = page["output"].format(slug=item["slug"]) if item else page["output"]
            output = lang.prefix + path
            root = root_of(output)
            alternates = [{"code": other.code, "name": other.name, "href": root + other.prefix + path,
                           "current": other.code == lang.code} for other in i18n.languages()]
            local = dict(context, page=page, root=root, home=root + lang.prefix, exercise=item,
                         alternates=alternates, page_path=path)
            html = env.get_template(page["template"]).render(**local)
            target = out / output
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(html, encoding="utf-8")
            written.append(output)
    return written


def build(out: Path = DEFAULT_OUT) -> Path:
    """Build the whole site into ``out`` (wiped first). Returns ``out``.

    Raises FileNotFoundError if node_modules is missing (run `npm ci`), and
    whatever the film script's validation raises for a malformed cue.
    """
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    copy_tree(SITE / "static", out / "static")
    copy_vendor(out)
    bundle_editor(out)
    copy_tree(ROOT / "kernels_wgsl", out / "kernels", suffixes=(".wgsl", ".json"))
    python_bundle(out)
    exercises_bundle(out)
    shutil.copyfile(ROOT / "facts" / "facts.json", out / "facts.json")  # linked from Sources
    measured_table(out)
    probe = ROOT / "facts" / "probe_qkv.json"
    if probe.exists():
        (out / "py" / "facts").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(probe, out / "py" / "facts" / "probe_qkv.json")
    held = ROOT / "facts" / "held_out_f16.json"  # the float16 card's inputs, fetched when asked for
    if held.exists():
        (out / "py" / "facts").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(held, out / "py" / "facts" / held.name)

    facts = load_facts()
    counts = lesson_counts()
    page_catalogs(out)
    import course  # the module page and exercise pages: data from site/content
    import film  # the film script → captions, chapters, transcript, sources
    from course import kit, teachers  # the offline kit (kit/cannery-exercises.zip), the teachers' page

    languages = []
    for lang in i18n.languages():
        context = {
            "lang": lang,
            "languages": i18n.languages(),
            "facts": facts,
            "counts": counts,
            "manifest": MANIFEST,
            "lesson_kernels": list(LESSON_KERNELS),
            "lab": lab_content(lang.code),
            "limits": {"count_max_n": COUNT_MAX_N, "check_max_n": CHECK_MAX_N,
                       "backward_check_max_n": BACKWARD_CHECK_MAX_N,
                       "m_min": M_MIN, "m_max": M_MAX, "head_dims": list(HEAD_DIMS)},
            "csp": CSP,
            "lab_rules": lab_rules(lang.code),
        }
        context["film"] = film.build(context, lang=lang.code)
        film.write_assets(context["film"], out, lang=lang.code)
        context.update(course.build(context, lang=lang.code))
        course.write_downloads(context["exercises"], out / lang.prefix)
        env = make_env(lang.code)
        env.globals["sri"] = lambda rel: sri(out / rel)
        context["teachers"] = teachers.build(context, _renderer(env, context), lang=lang.code)
        languages.append((lang, context, env))
    context_kit = kit.write(out, {lang.code: (context["exercises"], _renderer(env, context))
                                  for lang, context, env in languages})
    for _lang, context, env in languages:
        context["kit"] = context_kit
        render_pages(env, context, out)
    return out


def lab_content(code: str) -> dict:
    """site/content/lab.toml in language ``code``, its ``defaults`` completed with the
    workgroup memory M from the manifest (lesson.workgroup_bytes_default), its one source."""
    lab = i18n.load_content("lab.toml", code)
    lab["defaults"] = dict(lab.get("defaults", {}), workgroup_bytes=M_DEFAULT)
    return lab


def lab_rules(code: str) -> dict:
    """The lab form's data-rules in language ``code``: the manifest's input rules and the
    planner's table of what the page refuses before Python starts (planner.cold_rules,
    the tiling rule's messages in that language), which site/static/js/lab/rules.js reads."""
    import planner as plan

    with i18n.python_speaks(code):
        cold = plan.cold_rules()
    return {"head_dims": MANIFEST["head_dims"], "lesson": MANIFEST["lesson"], **cold}


def _renderer(env: jinja2.Environment, context: dict):
    """render(text, **names): content text rendered as a Jinja template with the
    page context and ``names`` (the Markdown a page would show, before HTML)."""
    return lambda text, **names: env.from_string(text).render(dict(context, **names))


def compare_dirs(a: Path, b: Path) -> list:
    """Relative paths that differ between two trees (missing, extra or changed)."""
    diffs = []
    files_a = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
    files_b = {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    for rel in sorted(files_a ^ files_b):
        diffs.append(str(rel))
    for rel in sorted(files_a & files_b):
        if not filecmp.cmp(a / rel, b / rel, shallow=False):
            diffs.append(str(rel))
    return diffs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default dist/)")
    parser.add_argument("--check", action="store_true", help="fail if the output folder is stale")
    parser.add_argument("--serve", action="store_true", help="serve the built site")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    if args.check:
        stale = []
        with tempfile.TemporaryDirectory() as tmp:
            fresh = build(Path(tmp) / "site")
            if not args.out.exists():
                stale = ["(missing)"]
            else:
                stale = compare_dirs(fresh, args.out)
        import facts as facts_pkg
        facts_problem = facts_pkg.stale_reason()
        if stale or facts_problem:
            if stale:
                print(f"{args.out} is stale: {len(stale)} files differ, e.g. {', '.join(stale[:5])}. "
                      f"Run `python build.py`.", file=sys.stderr)
            if facts_problem:
                print(f"facts/facts.json is stale: {facts_problem}", file=sys.stderr)
            return 1
        print(f"{args.out} is up to date.")
        return 0
    import film
    try:
        out = build(args.out)
    except film.FilmError as exc:
        print(f"build failed: {exc}", file=sys.stderr)
        return 1
    print(f"built {out}")
    if args.serve:
        server = make_server(out, port=args.port)
        print(f"serving {out} on http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C to stop)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
