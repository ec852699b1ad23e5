"""Every built page in every language (site/content/languages.toml): its
<html lang>, its hreflang links to the same page in each language, and the
language switch's links to the others. The site is built once (conftest's
built_site); relative links are resolved the way a browser resolves them."""
from __future__ import annotations

import posixpath
from html.parser import HTMLParser
from pathlib import Path

import pytest

import i18n


class _Page(HTMLParser):
    """What one page says about its languages."""

    def __init__(self):
        super().__init__()
        self.lang = None
        self.alternates: dict[str, list[str]] = {}
        self.switch: list[dict] = []
        self.current: list[str] = []
        self._in_switch = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "html":
            self.lang = a.get("lang")
        elif tag == "link" and a.get("rel") == "alternate" and "hreflang" in a:
            self.alternates.setdefault(a["hreflang"], []).append(a["href"])
        elif tag == "nav" and "language-switch" in (a.get("class") or "").split():
            self._in_switch += 1
            self.switch_label = a.get("aria-labelledby")
        elif self._in_switch and tag == "a":
            self.switch.append(a)
        elif self._in_switch and tag == "span" and a.get("aria-current") == "page":
            self.current.append(a.get("lang"))

    def handle_endtag(self, tag):
        if tag == "nav" and self._in_switch:
            self._in_switch -= 1


def read(path: Path) -> _Page:
    p = _Page()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def resolve(page_rel: str, href: str) -> str:
    """``href`` (relative, no fragment) from the page at ``page_rel`` (both site-relative)."""
    assert not href.startswith(("/", "http:", "https:")), f"{page_rel}: {href} is not relative"
    return posixpath.normpath(posixpath.join(posixpath.dirname(page_rel), href.split("#")[0]))


def built_pages(site: Path) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))


def same_page_in(lang: i18n.Language, page_rel: str) -> str:
    """The page at ``page_rel`` (in any language) as ``lang`` builds it."""
    for other in i18n.languages():
        if other.prefix and page_rel.startswith(other.prefix):
            page_rel = page_rel[len(other.prefix):]
    return lang.prefix + page_rel


def test_every_page_exists_in_every_language(built_site):
    pages = built_pages(built_site)
    english = [p for p in pages if not any(lang.prefix and p.startswith(lang.prefix) for lang in i18n.languages())]
    assert {"index.html", "module/index.html", "module/online-softmax/index.html"} <= set(english)
    for lang in i18n.languages():
        for p in english:
            assert same_page_in(lang, p) in pages, f"{lang.code} lacks {p}"
    assert len(pages) == len(english) * len(i18n.languages())


def test_each_page_says_its_language_and_links_the_same_page_in_every_language(built_site):
    codes = {lang.code for lang in i18n.languages()}
    checked = 0
    for rel in built_pages(built_site):
        page = read(built_site / rel)
        own = next(lang for lang in i18n.languages() if same_page_in(lang, rel) == rel)
        assert page.lang == own.code, f"{rel}: <html lang={page.lang!r}>, expected {own.code}"
        assert set(page.alternates) == codes | {"x-default"}, f"{rel}: hreflang {sorted(page.alternates)}"
        for code, hrefs in page.alternates.items():
            assert len(hrefs) == 1, f"{rel}: {len(hrefs)} links for hreflang={code}"
            target = resolve(rel, hrefs[0])
            lang = i18n.default() if code == "x-default" else i18n.language(code)
            assert target == same_page_in(lang, rel), f"{rel}: hreflang={code} goes to {target}"
            assert read(built_site / target).lang == lang.code, f"{rel}: {target} is not in {lang.code}"
        checked += 1
    assert checked >= 12


def test_the_language_switch_names_each_language_and_links_the_others(built_site):
    for rel in built_pages(built_site):
        page = read(built_site / rel)
        own = next(lang for lang in i18n.languages() if same_page_in(lang, rel) == rel)
        assert page.switch_label, f"{rel}: the switch has no label"
        assert page.current == [own.code], f"{rel}: current language marked {page.current}"
        others = [lang for lang in i18n.languages() if lang.code != own.code]
        assert [a["hreflang"] for a in page.switch] == [lang.code for lang in others]
        for a, lang in zip(page.switch, others, strict=True):
            assert a["lang"] == lang.code
            assert "data-language-switch" in a
            assert resolve(rel, a["href"]) == same_page_in(lang, rel)


@pytest.mark.parametrize("rel, words", [
    ("pt-BR/index.html", ["Comprimento da sequência N", "Dimensão da cabeça d", ">Contar<", ">Conferir<",
                          ">Cronometrar<", "A fábrica de conservas", "4.096", "65.536"]),
    ("pt-BR/module/index.html", ["O artigo em resumo", "Os cinco exercícios do módulo", "Prever · Do zero"]),
    ("pt-BR/module/online-softmax/index.html", ["Etapa 1: Prever", "Kernel simples: bytes movidos"]),
])
def test_pt_br_pages_carry_their_words_and_numbers(built_site, rel, words):
    text = (built_site / rel).read_text(encoding="utf-8")
    for w in words:
        assert w in text, f"{rel} lacks {w!r}"
