"""The builder and the server: deterministic output, a --check that catches a
stale dist/, every internal link resolving, serving from a subpath, and the
content type of every asset kind."""
from __future__ import annotations

import html.parser
import json
import re
import shutil
import threading
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

import build
import i18n
from sitebuild.server import make_server

# ---------------------------------------------------------------------------
# Deterministic build and --check

@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """One build made by this module (not the session's, which other work in the same
    tree may have changed since): what ``build.py --check`` compares a dist/ with."""
    return build.build(tmp_path_factory.mktemp("fresh") / "dist")


@pytest.fixture
def dist(fresh, tmp_path):
    """A dist/ of the fresh build, to edit."""
    out = tmp_path / "dist"
    shutil.copytree(fresh, out)
    return out


@pytest.fixture
def check_against_fresh(fresh, monkeypatch):
    """``--check`` builds the site again into a temporary folder: here it gets a copy of
    the module's fresh build (test_check_passes_on_a_fresh_build runs the real one)."""
    def copy(out):
        shutil.copytree(fresh, out)
        return out
    monkeypatch.setattr(build, "build", copy)


def test_two_builds_are_byte_identical(fresh, tmp_path):
    # both builds here, back to back (not against the session's build)
    again = build.build(tmp_path / "again")
    files = sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    assert len(files) > 20, files
    assert build.compare_dirs(fresh, again) == []


def test_check_passes_on_a_fresh_build(dist, capsys):
    assert build.main(["--out", str(dist), "--check"]) == 0
    assert "up to date" in capsys.readouterr().out


@pytest.mark.parametrize("how", ["a file edited", "a file deleted", "a file added", "the folder missing"])
def test_check_fails_when_dist_is_stale_with(how, dist, tmp_path, capsys, monkeypatch, check_against_fresh):
    import facts

    # Only dist is at issue here; the facts are recomputed (about 10 s) in the test above.
    monkeypatch.setattr(facts, "stale_reason", lambda: None)
    out = dist
    if how == "a file edited":
        page = out / "index.html"
        page.write_text(page.read_text(encoding="utf-8").replace("The cannery", "The canary", 1), encoding="utf-8")
    elif how == "a file deleted":
        (out / "static" / "js" / "lab" / "main.js").unlink()
    elif how == "a file added":
        (out / "static" / "leftover.js").write_text("// from an old build\n", encoding="utf-8")
    else:
        out = tmp_path / "never-built"
    assert build.main(["--out", str(out), "--check"]) == 1
    err = capsys.readouterr().err
    assert "stale" in err
    if how == "a file edited":
        assert "index.html" in err
    if how == "a file deleted":
        assert "main.js" in err


def test_check_fails_when_the_facts_say_they_are_stale(dist, capsys, monkeypatch, check_against_fresh):
    """build.py asks facts.stale_reason()."""
    import facts
    monkeypatch.setattr(facts, "stale_reason", lambda: "the model's checksum changed")
    assert build.main(["--out", str(dist), "--check"]) == 1
    assert "facts/facts.json is stale: the model's checksum changed" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# Link check: every internal link, anchor, asset and <track> resolves.

URL_ATTRS = {"href", "src", "poster", "data-film", "data-captions", "data-chapters"}


class _Collector(html.parser.HTMLParser):
    """Ids, and (tag, attribute, value) of every URL-bearing attribute."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.refs: list[tuple[str, str, str]] = []
        self.tracks: list[str] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name == "id":
                self.ids.add(value)
            if name in URL_ATTRS:
                self.refs.append((tag, name, value))
            if tag == "track" and name == "src":
                self.tracks.append(value)
            if name in ("aria-describedby", "aria-labelledby", "aria-controls", "for", "list"):
                for ref in value.split():
                    self.refs.append((tag, name, "#" + ref))


def _parse(page: Path) -> _Collector:
    c = _Collector()
    c.feed(page.read_text(encoding="utf-8"))
    return c


def _local(value: str) -> bool:
    parts = urlsplit(value)
    return not parts.scheme and not parts.netloc and not value.startswith("//")


def _js_specifiers(text: str) -> list[str]:
    """Relative module specifiers and `new URL("…", import.meta.url)` targets."""
    pats = [r'\bfrom\s+["\'](\.{1,2}/[^"\']+)["\']',
            r'\bimport\s*\(\s*["\'](\.{1,2}/[^"\']+)["\']\s*\)',
            r'\bimport\s+["\'](\.{1,2}/[^"\']+)["\']',
            r'new\s+URL\(\s*["\'](\.{0,2}/?[^"\':]+)["\']\s*,\s*import\.meta\.url\s*\)']
    found = []
    for pat in pats:
        found += re.findall(pat, text)
    return found


def test_every_internal_link_anchor_asset_and_track_in_dist_resolves(built_site):
    pages = sorted(built_site.rglob("*.html"))
    assert pages, "no HTML in dist/"
    film = json.loads((built_site / "media" / "film.json").read_text(encoding="utf-8"))
    starts = {c["start_s"] for c in film["cues"]}
    broken = []
    checked = 0
    for page in pages:
        c = _parse(page)
        for tag, attr, value in c.refs:
            if not _local(value):
                if tag == "a" and value.startswith("https://"):
                    continue  # a citation the reader may follow; the page never fetches it
                broken.append(f"{page.name}: <{tag} {attr}={value!r}> leaves the site")
                continue
            path, _, anchor = value.partition("#")
            target = page if path == "" else (page.parent / unquote(path)).resolve()
            checked += 1
            if not target.is_file():
                broken.append(f"{page.name}: <{tag} {attr}={value!r}> → missing {target}")
            elif anchor.startswith("t="):
                # a film moment (the teachers' page links its plans' cues): the start of a cue
                if float(anchor[2:]) not in starts:
                    broken.append(f"{page.name}: <{tag} {attr}={value!r}> → not a cue's start")
            elif anchor and "=" in anchor:
                # a lab state in the fragment (the module page links into the lab): keys the lab reads
                state = dict(part.split("=", 1) for part in anchor.split("&"))
                known = {"kernel", "n", "d", "causal", "M"}
                if set(state) != known or state["kernel"] not in build.MANIFEST["kernels"]:
                    broken.append(f"{page.name}: <{tag} {attr}={value!r}> → not a lab state")
            elif anchor and target.suffix == ".html" and anchor not in _parse(target).ids:
                broken.append(f"{page.name}: <{tag} {attr}={value!r}> → no id {anchor!r}")
        for src in c.tracks:
            assert (page.parent / src).is_file(), src
    for script in sorted(built_site.glob("static/**/*.js")):
        for spec in _js_specifiers(script.read_text(encoding="utf-8")):
            checked += 1
            target = (script.parent / spec).resolve()
            if spec.endswith("/") and target.is_dir():
                continue
            if not target.is_file():
                broken.append(f"{script.relative_to(built_site)}: {spec!r} → missing")
    for sheet in sorted(built_site.glob("static/**/*.css")):
        for spec in re.findall(r'url\(\s*["\']?([^"\')]+)', sheet.read_text(encoding="utf-8")):
            if spec.startswith(("data:", "#")):
                continue
            checked += 1
            if not (sheet.parent / spec).resolve().is_file():
                broken.append(f"{sheet.relative_to(built_site)}: url({spec}) → missing")
    assert not broken, "\n".join(broken)
    assert checked > 30, f"only {checked} links seen: is the parser still finding them?"


def test_the_page_links_its_captions_and_chapters_and_they_exist(built_site):
    c = _parse(built_site / "index.html")
    values = {attr: value for _, attr, value in c.refs}
    for attr in ("data-captions", "data-chapters"):
        target = built_site / values[attr]
        assert target.is_file()
        assert target.read_text(encoding="utf-8").startswith("WEBVTT")


@pytest.mark.parametrize("page", ["index.html", "module/index.html", "module/online-softmax/index.html"])
def test_every_css_and_script_the_page_loads_carries_a_matching_integrity_hash(page, built_site):
    path = built_site / page
    text = path.read_text(encoding="utf-8")
    tags = re.findall(r'<(?:link rel="stylesheet"|script type="module")[^>]*>', text)
    assert len(tags) >= 3
    for tag in tags:
        src = re.search(r'(?:href|src)="([^"]+)"', tag).group(1)
        integrity = re.search(r'integrity="([^"]+)"', tag)
        assert integrity, tag
        assert integrity.group(1) == build.sri((path.parent / src).resolve()), src


def test_every_page_file_in_site_content_pages_is_built_in_every_language(built_site):
    """One loop renders every page: the lesson, the module, the teachers' page,
    the class table, and one page per exercise, once per language of site/content/languages.toml, under its prefix."""
    import i18n
    from exercises import content
    outputs = {str(p.relative_to(built_site)) for p in built_site.rglob("*.html")}
    pages = ({"index.html", "module/index.html", "teachers/index.html", "module/class/index.html"}
             | {f"module/{slug}/index.html" for slug in content.slugs()})
    assert {lang.prefix for lang in i18n.languages()} == {"", "pt-BR/"}
    assert outputs == {lang.prefix + page for lang in i18n.languages() for page in pages}


def test_formulas_are_mathml_rendered_at_build_time(built_site):
    text = (built_site / "module" / "online-softmax" / "index.html").read_text(encoding="utf-8")
    assert text.count("<math ") > 20
    assert "$" not in re.sub(r"<pre>.*?</pre>", "", text, flags=re.S)  # no TeX left for a script to render
    assert "<mi>&#x02113;</mi>" in text  # the running sum l, as a math identifier


def test_the_editor_bundle_is_built_from_the_pinned_codemirror(built_site):
    import json
    pins = json.loads((build.ROOT / "package.json").read_text())["dependencies"]
    for name in ("codemirror", "@codemirror/lang-python"):
        assert re.fullmatch(r"\d+\.\d+\.\d+", pins[name]), name
    bundle = (built_site / "vendor" / "codemirror" / "codemirror.js").read_text(encoding="utf-8")
    assert "export{" in bundle.replace(" ", "")
    imports = re.search(r"""(?:^|[;\n}])\s*import\s*[\w{*"']""", bundle)
    assert not imports, "the bundle imports something: it must be self-contained"


class _FormRules(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.rules = None

    def handle_starttag(self, tag, attrs):
        if tag == "form" and dict(attrs).get("id") == "lab-form":
            self.rules = json.loads(dict(attrs)["data-rules"])


@pytest.mark.parametrize("code", [lang.code for lang in i18n.languages()])
def test_the_lab_forms_rules_are_the_manifests_and_the_planners_table_in_its_language(built_site, code):
    """What the cold page refuses (site/static/js/lab/rules.js reads data-rules) is the
    planner's own table, planner.cold_rules, in the page's language."""
    import planner as plan
    from emulator.i18n import group
    from emulator.tiling import MANIFEST, InputError, make_tiling

    lang = i18n.language(code)
    parser = _FormRules()
    parser.feed((built_site / lang.prefix / "index.html").read_text(encoding="utf-8"))
    with i18n.python_speaks(code), pytest.raises(InputError) as refusal:
        table = plan.cold_rules()
        filled = {"{m}": group(8192), "{half}": group(4096)}
        make_tiling("fused", 1, 128, False, 8192)
    assert parser.rules == {"head_dims": MANIFEST["head_dims"], "lesson": MANIFEST["lesson"], **table}
    fused = next(g for g in parser.rules["tiling"] if "fused" in g["kernels"])
    words = fused["by_d"]["128"]["message"]
    for mark, text in filled.items():
        assert mark in words
        words = words.replace(mark, text)
    assert words == refusal.value.message
    # M ≥ 2 tiles · 2 (K and V) · 4 B · d · 8 rows = 128·d
    assert fused["by_d"]["128"]["smallest_m"] == 16384 and fused["by_d"]["64"]["smallest_m"] == 8192


class _TimeNotes(html.parser.HTMLParser):
    """The Time card's notes on its tuned kernels (#time-result's data-notes), as JSON."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.notes = None

    def handle_starttag(self, tag, attrs):
        if dict(attrs).get("id") == "time-result":
            self.notes = json.loads(dict(attrs)["data-notes"])


@pytest.mark.parametrize("code", [lang.code for lang in i18n.languages()])
def test_the_time_card_has_a_note_for_each_timed_tuned_kernel_and_no_other(built_site, code):
    """site/content/lab.toml [tuned], in the page's language: one sentence for every kernel
    Time may run beside the lesson's (planner.TIMED, the manifest's "timed" forward kernels
    beyond the lesson's), so none falls back to the generic words, and none for a kernel
    Time never runs, which no reader would see."""
    import planner as plan

    lang = i18n.language(code)
    parser = _TimeNotes()
    parser.feed((built_site / lang.prefix / "index.html").read_text(encoding="utf-8"))
    assert parser.notes is not None
    assert set(parser.notes) == set(plan.TIMED)
    assert all(isinstance(v, str) and v.strip() for v in parser.notes.values()), parser.notes
    english = build.lab_content("en")["tuned"]
    if not lang.default:
        assert all(parser.notes[k] != english[k] for k in plan.TIMED), code


def test_a_favicon_is_linked_so_the_browser_asks_for_no_favicon_ico(built_site):
    c = _parse(built_site / "index.html")
    icons = [v for tag, attr, v in c.refs if tag == "link" and attr == "href" and v.endswith(".svg")]
    assert icons == ["static/favicon.svg"]
    assert (built_site / "static" / "favicon.svg").read_text(encoding="utf-8").startswith("<svg")


# ---------------------------------------------------------------------------
# Serving: content types, headers, subpath

def _get(url: str):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.headers, r.read()


ASSET_KINDS = [
    # (path in dist, content type the server must send)
    ("index.html", "text/html; charset=utf-8"),
    ("static/js/lab/main.js", "text/javascript; charset=utf-8"),
    ("static/js/worker.js", "text/javascript; charset=utf-8"),
    ("vendor/pyodide/pyodide.mjs", "text/javascript; charset=utf-8"),
    ("vendor/pyodide/pyodide.asm.wasm", "application/wasm"),
    ("vendor/pyodide/python_stdlib.zip", "application/zip"),
    ("vendor/pyodide/pyodide-lock.json", "application/json"),
    ("static/css/cannery.css", "text/css; charset=utf-8"),
    ("media/captions.vtt", "text/vtt; charset=utf-8"),
    ("kernels/manifest.json", "application/json"),
    ("kernels/fused.wgsl", "text/plain; charset=utf-8"),
    ("static/favicon.svg", "image/svg+xml"),
]


@pytest.mark.parametrize("path,content_type", ASSET_KINDS, ids=[p.rsplit(".", 1)[-1] + "-" + p for p, _ in ASSET_KINDS])
def test_the_server_sends_the_right_content_type_for(path, content_type, server_url, built_site):
    assert (built_site / path).is_file(), path
    status, headers, body = _get(server_url + path)
    assert status == 200
    assert headers["Content-Type"] == content_type
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert body == (built_site / path).read_bytes()


def test_content_types_do_not_come_from_the_platform_mimetypes_table(monkeypatch, built_site):
    """Windows' registry can map .mjs to text/plain; the server must not care."""
    import mimetypes
    monkeypatch.setattr(
        mimetypes, "types_map",
        dict(mimetypes.types_map, **{".mjs": "text/plain", ".wasm": "application/octet-stream"}),
    )
    server = make_server(built_site, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        assert _get(base + "vendor/pyodide/pyodide.mjs")[1]["Content-Type"] == "text/javascript; charset=utf-8"
        assert _get(base + "vendor/pyodide/pyodide.asm.wasm")[1]["Content-Type"] == "application/wasm"
    finally:
        server.shutdown()


@pytest.mark.parametrize("error,quiet", [(ConnectionResetError(104, "Connection reset by peer"), True),
                                         (BrokenPipeError(32, "Broken pipe"), True),
                                         (ValueError("a bug in a handler"), False)])
def test_the_server_is_quiet_when_a_browser_hangs_up_and_reports_anything_else(error, quiet, built_site, capsys):
    server = make_server(built_site, port=0)
    try:
        try:
            raise error
        except Exception:
            server.handle_error(None, ("127.0.0.1", 1))
    finally:
        server.server_close()
    err = capsys.readouterr().err
    assert (err == "") is quiet, err
    if not quiet:
        assert "a bug in a handler" in err


CSP_PARTS = ["default-src 'self'", "script-src 'self' 'wasm-unsafe-eval'", "worker-src 'self'",
             "connect-src 'self'", "object-src 'none'", "base-uri 'none'"]


@pytest.mark.parametrize("path", ["index.html", "static/js/worker.js", "vendor/pyodide/pyodide.mjs"])
def test_the_content_security_policy_header_reaches(path, server_url):
    """A worker's script gets its policy from its own response headers, not the page's <meta>."""
    csp = _get(server_url + path)[1]["Content-Security-Policy"]
    assert [part.strip() for part in csp.split(";")] == CSP_PARTS
    assert "unsafe-eval" not in csp.replace("wasm-unsafe-eval", "")
    assert "unsafe-inline" not in csp


def test_every_page_carries_the_policy_in_a_meta_tag_and_no_inline_script(built_site):
    pages = sorted(built_site.rglob("*.html"))
    assert pages
    for page in pages:
        text = page.read_text(encoding="utf-8")
        meta = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', text)
        assert meta and [p.strip() for p in meta.group(1).replace("&#39;", "'").split(";")] == CSP_PARTS, page
        for script in re.findall(r"<script\b[^>]*>", text):
            assert "src=" in script, f"{page.name}: inline script: {script}"
        assert not re.search(r"<[^>]*\son[a-z]+\s*=", text), f"{page.name}: inline event handler"
        assert not re.search(r'<[^>]*\sstyle\s*=\s*"', text), f"{page.name}: inline style attribute"


def test_the_site_served_from_a_subpath_resolves_every_asset_the_page_names(subpath_url, built_site):
    status, _, body = _get(subpath_url)
    assert status == 200
    c = _Collector()
    c.feed(body.decode("utf-8"))
    seen = 0
    for _, _, value in c.refs:
        path = value.partition("#")[0]
        if not path or not _local(value):
            continue
        url = urljoin(subpath_url, path)
        assert urlsplit(url).path.startswith("/cannery/"), url
        assert _get(url)[0] == 200, url
        seen += 1
    assert seen >= 6
    # and nothing is served outside the prefix
    with pytest.raises(urllib.error.HTTPError) as err:
        _get(subpath_url.replace("/cannery/", "/index.html"))
    assert err.value.code == 404


def test_no_script_the_site_ships_uses_eval_or_writes_inline_styles_or_handlers(built_site):
    """The CSP would refuse them (no 'unsafe-eval', no 'unsafe-inline'); catch them before a browser does."""
    found = []
    for script in sorted(built_site.glob("static/**/*.js")):
        text = script.read_text(encoding="utf-8")
        for pattern in (r"\beval\s*\(", r"\bnew\s+Function\s*\(", r"set(?:Timeout|Interval)\s*\(\s*[\"'`]",
                        r"<[a-z][^>]*\sstyle\s*=", r"<[a-z][^>]*\son[a-z]+\s*="):
            found += [f"{script.relative_to(built_site)}: {m.group(0)[:60]}" for m in re.finditer(pattern, text)]
    assert found == []


def test_every_part_a_kernel_includes_travels_to_the_page_and_its_python(built_site):
    """The page joins kernels/<file> with kernels/parts/ (gpu/files.js), and the planner in
    the page's Python joins kernels_wgsl/ from py/bundle.json: both need every part."""
    kernels = build.ROOT / "kernels_wgsl"
    parts = sorted(p.relative_to(kernels).as_posix() for p in (kernels / "parts").glob("*.wgsl"))
    assert "parts/header.wgsl" in parts
    bundle = json.loads((built_site / "py" / "bundle.json").read_text(encoding="utf-8"))["files"]
    for rel in parts:
        text = (kernels / rel).read_text(encoding="utf-8")
        assert (built_site / "kernels" / rel).read_text(encoding="utf-8") == text
        assert bundle[f"kernels_wgsl/{rel}"] == text
