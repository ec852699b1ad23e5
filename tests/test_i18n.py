"""The languages: every word translated, every number from data, written the language's way.

The machinery is i18n/ (Babel catalogs, content overlays, Babel number
rules); these tests hold the built site and the sources to it.
"""
from __future__ import annotations

import html.parser
import json
import re
from pathlib import Path

import pytest

import i18n
from i18n import checks

PT = i18n.language("pt-BR")


# ---------------------------------------------------------------- completeness

@pytest.fixture(scope="module")
def extracted():
    from i18n.__main__ import extracted_ids
    return {domain: extracted_ids(domain) for domain in i18n.domains()}


def test_every_message_caption_and_content_file_has_its_pt_br_translation(extracted):
    """python -m i18n check: each msgid the code holds now (a fresh Babel
    extraction), each caption (keyed by cue id), each content word and each
    exercise text has its Portuguese, with the same placeholders and no typed number."""
    found = checks.problems(extracted)
    assert not found, f"{len(found)} problems, e.g.\n" + "\n".join(found[:40])


def test_the_extraction_finds_the_words_of_each_domain(extracted):
    """The check above is only as good as the extraction: each domain must hold
    words from each of its places (templates, page scripts, Python in the page)."""
    assert "Sequence length N" in extracted["site"] or any("Sequence length" in m for m in extracted["site"])
    assert len(extracted["site"]) > 100
    assert len(extracted["page"]) > 100
    assert len(extracted["python"]) > 30


def test_kernel_labels_reach_the_site_catalog_from_the_manifest_alone(extracted):
    """Each kernel's label is a msgid of the site domain, extracted from kernels_wgsl/manifest.json
    (i18n/extract.py), and no template lists the labels."""
    manifest = json.loads((i18n.ROOT / "kernels_wgsl" / "manifest.json").read_text(encoding="utf-8"))
    labels = [e["label"] for e in manifest["kernels"].values()]
    assert len(labels) >= 8 and set(labels) <= extracted["site"]
    templates = "".join(p.read_text(encoding="utf-8") for p in (i18n.ROOT / "site" / "templates").rglob("*.j2"))
    assert [label for label in labels if label in templates] == []
    pot = (i18n.ROOT / "locale" / "site.pot").read_text(encoding="utf-8")
    for label in labels:
        assert f'#: kernels_wgsl/manifest.json\nmsgid "{label}"' in pot, label


def test_the_manifest_extractor_yields_a_new_kernels_label_at_its_line():
    import io

    from i18n.extract import manifest_labels
    text = ('{"kernels": {\n  "a": {"label": "First kernel"},\n  "b": {\n    "direction": "forward",\n'
            '    "label": "Second, N×N"\n  },\n  "c": {"label": ""}\n}}\n')
    found = list(manifest_labels(io.BytesIO(text.encode("utf-8")), [], [], {}))
    assert [(line, message) for line, _func, message, _comments in found] == [(2, "First kernel"), (5, "Second, N×N")]
    assert found[1][3] == ["The label of the kernel b (the lab's Kernel menu)."]


def test_a_step_title_left_untranslated_is_caught_though_a_list_of_step_ids_is_data():
    """`steps` is a data key (module.toml's lists of "SLUG/STEP" ids), but an exercise's
    [[steps]] tables hold words: a new step's title missing from the overlay is named."""
    base = {"steps": [{"id": "scratch", "title": "From scratch", "names": ["f"]}],
            "objectives": [{"id": "o", "text": "Tiles", "steps": ["ex/scratch"]}]}
    over = {"objectives": {"o": {"text": "Blocos"}}}
    assert i18n.missing_words(base, over) == ["steps.scratch.title"]
    assert i18n.missing_words(base, {**over, "steps": {"scratch": {"title": "Do zero"}}}) == []


def test_a_missing_cue_a_missing_word_and_a_typed_number_are_each_caught(tmp_path):
    base = {"title": "Fused attention", "cues": [{"id": "hook", "start": "00:01.000", "text": "A film."},
                                                 {"id": "size", "start": "00:02.000", "text": "{{ N }} words."}],
            "summary": ["One.", "Two."]}
    over = {"title": "Atenção fundida", "cues": {"hook": {"text": "Um filme."}}, "summary": ["Um.", "Dois."]}
    assert i18n.missing_words(base, over) == ["cues.size.text"]
    over["cues"]["size"] = {"text": "{{ N }} palavras."}
    assert i18n.missing_words(base, over) == []
    merged = i18n.merge(base, over, "film.toml")
    assert [c["text"] for c in merged["cues"]] == ["Um filme.", "{{ N }} palavras."]
    assert [c["start"] for c in merged["cues"]] == ["00:01.000", "00:02.000"]  # timings stay English's
    with pytest.raises(i18n.I18nError, match="no item with that id"):
        i18n.merge(base, {"cues": {"hoook": {"text": "x"}}}, "film.toml")
    with pytest.raises(i18n.I18nError, match="not in the English file"):
        i18n.merge(base, {"titel": "x"}, "film.toml")
    with pytest.raises(i18n.I18nError, match="1 items, the English file has 2"):
        i18n.merge(base, {"summary": ["Um."]}, "film.toml")


@pytest.mark.parametrize(("text", "english", "bad"), [
    ("l = 1,553 depois do segundo bloco", "l = 1.553 after the second tile", ["1,553"]),
    ("a tabela tem 285.736.960 bytes", "the table holds 285,736,960 bytes", ["285.736.960"]),
    ("{{ d16.ratio }} vezes menos", "{{ d16.ratio }} times less", []),
    ("em float32 e fp16, desde 2022", "in float32 and fp16, since 2022", []),
    ("três passadas, não 4", "three passes, not 3", ["4"]),
    ("as {n} linhas de `[1, 2, 3, 0]`", "the {n} rows of `[1, 2, 3, 0]`", []),
    ("até 256 invocações", "at most 256 invocations", []),
    ("$e^{-1} + 16.5$", "$e^{-1} + 16.5$", []),
])
def test_typed_numbers_are_found_and_data_and_names_are_not(text, english, bad):
    assert checks.typed_numbers(text, english) == bad


def test_placeholders_must_match():
    assert checks.placeholders("Kernel {i} of {k}") == {"{i}", "{k}"}
    assert checks.placeholders("Runtime %(clock)s") == {"%(clock)s"}
    assert checks.placeholders("{{ N }} words") == {"{{N}}"}


# ---------------------------------------------------------------- numbers

def test_numbers_follow_babel_locale_rules():
    en, pt = i18n.numbers("en"), i18n.numbers("pt-BR")
    assert (en.group(285736960), pt.group(285736960)) == ("285,736,960", "285.736.960")
    assert (en.fixed(16.5157, 1), pt.fixed(16.5157, 1)) == ("16.5", "16,5")
    assert (en.fixed(1.55293, 3), pt.fixed(1.55293, 3)) == ("1.553", "1,553")
    assert (en.short(16.5), pt.short(16.5)) == ("16.5", "16,5")
    assert pt.symbols() == {"decimal": ",", "group": "."}


def test_python_in_the_page_writes_portuguese_with_the_compiled_catalog(tmp_path):
    """emulator/i18n.py reads what build.py ships: the .mo Babel compiles and the number marks."""
    from emulator import i18n as page_i18n
    folder = tmp_path / "pt_BR"
    (folder / "LC_MESSAGES").mkdir(parents=True)
    (folder / "LC_MESSAGES" / "python.mo").write_bytes(i18n.mo_bytes(PT, "python"))
    (folder / "numbers.json").write_text(json.dumps(i18n.numbers("pt-BR").symbols()), encoding="utf-8")
    catalog = i18n.js_messages(PT, "python")
    msgid, msgstr = next(iter(sorted((k, v) for k, v in catalog.items() if isinstance(v, str))))
    try:
        page_i18n.use("pt-BR", str(tmp_path))
        assert page_i18n._(msgid) == msgstr
        assert (page_i18n.group(17301504), page_i18n.fixed(16.5157, 1)) == ("17.301.504", "16,5")
        page_i18n.use("xx-XX", str(tmp_path))  # a language without files falls back to English
        assert page_i18n._(msgid) == msgid and page_i18n.group(4096) == "4,096"
    finally:
        page_i18n.use("en")


# ---------------------------------------------------------------- the built site

CODE_TAGS = {"code", "pre", "math", "script", "style", "kbd", "samp", "svg", "textarea"}
# English shapes that a pt-BR number never has: a decimal point followed by
# other than exactly three digits (16.5, 272.5, 0.09, 11.0901), two or more
# comma groups (285,736,960), or comma groups then a decimal point (1,234.5).
# One comma group (4,096) is left alone: in pt-BR it is a decimal (1,553).
ENGLISH_NUMBER = re.compile(r"^[-−]?\d+\.\d{1,2}$|^[-−]?\d+\.\d{4,}$|^[-−]?\d{1,3}(,\d{3}){2,}$"
                            r"|^[-−]?\d{1,3}(,\d{3})+\.\d+$")
# Versions are names, not quantities: "Python 3.10", "Pyodide 0.27.1".
VERSION = re.compile(r"\b(Python|Pyodide|Triton|PyTorch|CUDA|WGSL|WebGPU|Babel|v)\s?\d+(\.\d+)+")


class _Text(html.parser.HTMLParser):
    """Visible prose of a page: text outside code, formulas and scripts."""

    def __init__(self):
        super().__init__()
        self.stack: list[str] = []
        self.chunks: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in {"br", "img", "input", "meta", "link", "hr", "source", "track", "col", "wbr"}:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in self.stack:  # an end tag with no start (a <p> closed implicitly) changes nothing
            while self.stack.pop() != tag:
                pass

    def handle_data(self, data):
        if not CODE_TAGS & set(self.stack):
            self.chunks.append(data)


def english_numbers(text: str) -> list[str]:
    """Tokens of ``text`` written as English writes numbers (URLs, versions and names skipped)."""
    bad = []
    for token in VERSION.sub(" ", text).split():
        token = token.strip("()[]{}\"'«»“”‘’;:!?…")
        token = token.rstrip(".,")
        if not token or "/" in token or re.search(r"[A-Za-z_@=]", token) or token.count(".") > 1 and "," not in token \
                and not re.fullmatch(r"\d{1,3}(\.\d{3})+", token):
            continue
        if ENGLISH_NUMBER.match(token):
            bad.append(token)
    return bad


def test_the_english_number_finder_tells_the_two_languages_apart():
    assert english_numbers("plain 285,736,960 B, fused 16.5 times less, 272.5 MiB, ln 11.0901, 1,234.5") == \
        ["285,736,960", "16.5", "272.5", "11.0901", "1,234.5"]
    assert english_numbers("285.736.960 B; 16,5 vezes; 272,5 MiB; l = 1,553; Pyodide 0.27.1; float32") == []


def test_every_pt_br_page_writes_its_numbers_the_portuguese_way(built_site):
    pages = sorted((built_site / PT.prefix).rglob("*.html"))
    assert len(pages) >= 7
    bad = {}
    for page in pages:
        parser = _Text()
        parser.feed(page.read_text(encoding="utf-8"))
        found = english_numbers(" ".join(parser.chunks))
        if found:
            bad[str(page.relative_to(built_site))] = found[:10]
    assert not bad, bad


def test_the_pt_br_captions_and_film_data_write_numbers_the_portuguese_way(built_site):
    media = built_site / "media"
    captions = (media / "captions.pt-BR.vtt").read_text(encoding="utf-8")
    body = "\n".join(line for line in captions.splitlines() if "-->" not in line)
    assert english_numbers(body) == []
    assert "285.736.960" in captions or "17.301.504" in captions
    film = json.loads((media / "film.pt-BR.json").read_text(encoding="utf-8"))
    texts = [c["text"] for c in film["cues"]] + [v for v in film["question"].values() if isinstance(v, str)]
    assert english_numbers(" ".join(texts)) == []


def test_each_language_gets_its_page_catalog_and_the_python_catalogs(built_site):
    page = json.loads((built_site / "locale" / PT.code / "page.json").read_text(encoding="utf-8"))
    assert len(page) > 100 and all(v for v in page.values())
    bundle = json.loads((built_site / "py" / "bundle.json").read_text(encoding="utf-8"))
    assert bundle["catalogs"][PT.code]["numbers"] == {"decimal": ",", "group": "."}
    assert len(bundle["catalogs"][PT.code]["mo"]) > 1000


def test_templates_type_no_figure_outside_data():
    """A figure a template types (not through {{ }}) would reach the pt-BR page
    in English form: templates may hold only small whole numbers and names."""
    bad = {}
    for path in sorted((i18n.ROOT / "site" / "templates").glob("*.j2")):
        text = re.sub(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", " ", path.read_text(encoding="utf-8"), flags=re.S)
        text = re.sub(r"<[^>]*>", " ", text)  # attributes: sizes and coordinates of drawings
        text = VERSION.sub(" ", text)
        found = [t for t in english_numbers(text) if not re.fullmatch(r"\d+", t)]
        found += [t for t in checks.typed_numbers(text, text) if re.search(r"\d{4,}|[.,]\d", t)
                  and not re.fullmatch(r"(19|20)\d\d", t)]
        if found:
            bad[path.name] = found
    assert not bad, bad


def test_pt_br_content_words_come_from_the_overlays_not_copies(built_site):
    """A sanity line against an overlay that merely repeats the English: the
    pt-BR lesson's title and the module's first objective differ from English."""
    en = i18n.load_content("module.toml", "en")
    pt = i18n.load_content("module.toml", "pt-BR")
    assert pt["title"] != en["title"]
    assert pt["objective_groups"][0]["items"][0]["text"] != en["objective_groups"][0]["items"][0]["text"]
    assert pt["objective_groups"][0]["items"][0]["steps"] == en["objective_groups"][0]["items"][0]["steps"]
    lesson = (built_site / PT.prefix / "index.html").read_text(encoding="utf-8")
    assert '<html lang="pt-BR">' in lesson
    assert 'hreflang="en"' in lesson and 'hreflang="pt-BR"' in lesson


def test_languages_are_declared_once():
    codes = [lang.code for lang in i18n.languages()]
    assert codes[0] == "en" and "pt-BR" in codes
    for lang in i18n.languages():
        if not lang.default:
            for domain in i18n.domains():
                assert i18n.po_path(lang, domain).exists()
            assert (i18n.CONTENT / lang.code).is_dir() or lang.default
    assert Path(i18n.LANGUAGES_TOML).name == "languages.toml"
