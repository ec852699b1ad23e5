"""Every number the page shows comes from data.

The rendered page text and the captions are scanned for numbers. Each must
equal, to the digits shown, a number found in the data the build renders from:
the emulator's counts, facts/facts.json, the kernel manifest, the film's
computed figures and site/content/*.toml. A short allow-list covers the
numbers that are names rather than measurements, each with its reason.
"""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

import build
import film

# Numbers that are identifiers or fixed conventions, not measurements.
ALLOWED = {
    "2018": "year of Milakov & Gimelshein's paper",
    "2019": "year of the IEEE floating-point standard's revision, in its citation",
    "2022": "year of FlashAttention",
    "2023": "year of FlashAttention-2",
    "2205.14135": "arXiv id of FlashAttention",
    "2307.08691": "arXiv id of FlashAttention-2",
    "1805.02867": "arXiv id of online softmax",
    "754": "IEEE 754, the standard's number",
    "10.1109": "DOI prefix of IEEE",
    "2019.8766229": "DOI suffix of IEEE 754-2019",
    "0.75": "slowest playback speed offered by the player",
    "1.25": "a playback speed offered by the player",
    "1.5": "fastest playback speed offered by the player",
    "3.1": "section number in a paper",
    "3.1.1": "section number in a paper",
    "17.7": "section number of the WGSL specification",
    "3.6.2": "section number of the WebGPU specification (limits)",
}

NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)*(?:e[-+]?\d+)?(?![A-Za-z_])")
CLOCK = re.compile(r"\b\d{1,2}:\d{2}(?:\.\d{1,3})?\b")


class _Text(HTMLParser):
    def __init__(self):
        super().__init__()
        self.parts, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style", "code", "pre"):
            self.skip += 1

    def handle_endtag(self, tag):
        if tag in ("script", "style", "code", "pre"):
            self.skip -= 1

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def _collect(obj, out: set):
    if isinstance(obj, bool):
        return
    if isinstance(obj, (int, float)):
        out.add(float(obj))
    elif isinstance(obj, str):
        for token in NUMBER.findall(obj.replace(",", "")):
            try:
                out.add(float(token))
            except ValueError:
                out.add(token)  # a version such as 0.1.0: matched as written
    elif isinstance(obj, dict):
        for v in obj.values():
            _collect(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _collect(v, out)


@pytest.fixture(scope="module")
def data_numbers():
    context = {
        "facts": build.load_facts(),
        "counts": build.lesson_counts(),
        "manifest": build.MANIFEST,
        "lab": build.lab_content("en"),
    }
    values: set = set()
    for key in ("facts", "counts", "manifest", "lab"):
        _collect(context[key], values)
    f = film.build(context)
    _collect(f["figures"], values)
    _collect(f["question"], values)
    _collect([c.get("start") for c in f["cues"]], values)
    # Derived units of the same data: bytes in MiB, shares as percentages.
    for v in [v for v in values if isinstance(v, float)]:
        values.add(v / 2**20)
        values.add(v * 100)
    return values


def _matches(token: str, values: set) -> bool:
    text = token.rstrip(",").replace(",", "")
    if text in ALLOWED or token.rstrip(",") in ALLOWED:
        return True
    if text in values:
        return True
    try:
        x = float(text)
    except ValueError:
        return False
    decimals = len(text.split(".")[1].split("e")[0]) if "." in text else 0
    if "e" in text:  # scientific: compare to the digits shown
        mantissa = text.split("e")[0]
        digits = len(mantissa.replace(".", "")) - 1
        return any(isinstance(v, float) and v != 0 and abs(v - x) <= 0.5 * 10 ** (-digits) * abs(x) * 1.0001
                   for v in values)
    tol = 0.5 * 10 ** (-decimals) * 1.0001
    return any(isinstance(v, float) and abs(v - x) <= tol for v in values)


def page_numbers(site):
    parser = _Text()
    parser.feed((site / "index.html").read_text(encoding="utf-8"))
    text = " ".join(parser.parts)
    captions = (site / "media" / "captions.vtt").read_text(encoding="utf-8")
    caption_text = "\n".join(line for line in captions.splitlines() if "-->" not in line and line.strip() != "WEBVTT")
    tokens = []
    for source, body in (("page", text), ("captions", caption_text)):
        body = CLOCK.sub(" ", body)  # clock times are checked against cue times separately
        tokens += [(source, t) for t in NUMBER.findall(body)]
    return tokens


def test_every_number_on_the_page_comes_from_data(built_site, data_numbers):
    strays = sorted({f"{src}: {tok}" for src, tok in page_numbers(built_site) if not _matches(tok, data_numbers)})
    assert strays == [], f"numbers typed by hand, not found in data: {strays}"


def test_the_scan_finds_the_reference_figures(built_site):
    tokens = {t.rstrip(",") for _, t in page_numbers(built_site)}
    assert {"285,736,960", "17,301,504", "538,968,064", "270,532,608"} <= tokens


def test_a_typed_number_would_be_caught(data_numbers):
    assert not _matches("123,456,789", data_numbers)
    assert _matches("285,736,960", data_numbers)


def test_clock_times_are_cue_times(built_site):
    f = json.loads((built_site / "media" / "film.json").read_text())
    text = (built_site / "index.html").read_text(encoding="utf-8")
    times = [c["start_s"] for c in f["cues"]] + [c.get("start_s", 0) for c in f["chapters"]] + [f["runtime_s"], 0.0]
    clocks = {c for c in CLOCK.findall(text) if "." not in c}
    assert clocks, "the transcript shows cue times"
    for clock in clocks:
        m, s = clock.split(":")
        t = int(m) * 60 + int(s)
        assert any(abs(t - x) < 1 for x in times), clock
