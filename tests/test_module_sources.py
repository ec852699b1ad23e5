"""Every source the module cites can be followed: a link on the page, in every language.

The module's Sources once cited "The curriculum's cost-models module" with no link, and
nothing on the site matched it. The ledger's entries come from
site/content/module.toml (words overlaid per language); the built module page must show
a link for each.
"""
from __future__ import annotations

import html.parser
import tomllib
from pathlib import Path

import pytest

import i18n

ROOT = Path(__file__).resolve().parent.parent
SOURCES = tomllib.loads((ROOT / "site" / "content" / "module.toml").read_text(encoding="utf-8"))["sources"]


@pytest.mark.parametrize("source", SOURCES, ids=[s["label"][:40] for s in SOURCES])
def test_every_module_source_has_a_link_to_follow(source):
    assert source.get("url", "").startswith("https://"), source["label"]


class _Entries(html.parser.HTMLParser):
    """Each ledger entry of the module's Sources: its title and the links inside it."""

    def __init__(self):
        super().__init__()
        self.entries: list[dict] = []
        self._in_sources = self._in_title = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id") == "module-sources":
            self._in_sources = True
        if not self._in_sources:
            return
        if tag == "li" and "ledger-entry" in (a.get("class") or ""):
            self.entries.append({"title": "", "links": []})
        elif tag == "h3" and self.entries:
            self._in_title = True
        elif tag == "a" and self.entries and a.get("href", "").startswith("https://"):
            self.entries[-1]["links"].append(a["href"])

    def handle_endtag(self, tag):
        if tag == "h3":
            self._in_title = False
        if tag == "section":
            self._in_sources = False

    def handle_data(self, data):
        if self._in_title:
            self.entries[-1]["title"] += data


@pytest.mark.parametrize("lang", [lang.code for lang in i18n.languages()])
def test_the_built_module_page_links_every_source_it_cites(built_site, lang):
    prefix = i18n.language(lang).prefix
    page = built_site / prefix / "module" / "index.html"
    parser = _Entries()
    parser.feed(page.read_text(encoding="utf-8"))
    assert len(parser.entries) == len(SOURCES)
    unlinked = [e["title"] for e in parser.entries if not e["links"]]
    assert unlinked == []
    assert all("curriculum" not in e["title"] and "currículo" not in e["title"] for e in parser.entries)
