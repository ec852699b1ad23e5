"""Exercise 3's page shows the recorded GPU run (exercise.toml ``results``): the command that
measured it, time beside SDPA at the largest N, the share of SDPA's speed by N and peak memory,
in English and in Brazilian Portuguese, every number written from the data by the language's rules."""
from __future__ import annotations

import json
import re
import tomllib
from html import unescape
from pathlib import Path

import babel.numbers
import pytest

import i18n
from course import gpu_results

ROOT = Path(__file__).resolve().parent.parent
META = tomllib.loads((ROOT / "site/content/exercises/triton-port/exercise.toml").read_text(encoding="utf-8"))
RUN = json.loads((ROOT / META["results"]).read_text(encoding="utf-8"))
FIG = gpu_results.load(ROOT / META["results"], META["results_focus"])
PAGES = {"en": "module/triton-port/index.html", "pt-BR": "pt-BR/module/triton-port/index.html"}


def _section(built_site: Path, code: str) -> str:
    html = (built_site / PAGES[code]).read_text(encoding="utf-8")
    start = html.index('<section id="measured"')
    return html[start:html.index("</section>", start)]


def _cells(table_html: str) -> list[list[str]]:
    rows = re.findall(r"<tr>(.*?)</tr>", table_html, re.S)
    return [[unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td>(.*?)</td>", r, re.S)]
            for r in rows if "<td>" in r]


def _table(section: str, cls: str) -> str:
    start = section.index(f'class="{cls}"')
    return section[start:section.index("</table>", start)]


def test_the_page_reads_its_figures_from_a_recorded_run():
    path = ROOT / META["results"]
    assert path.is_file() and path.parent == ROOT / "bench" / "results" and path.name.startswith("triton")
    assert RUN["meta"]["gpu"] and RUN["meta"]["command"].startswith("bench_flash_triton.py --module solution")
    assert FIG["focus"] == {"dtype": "bfloat16", "d": 64, "causal": True}  # the episode's case


def test_the_figures_come_from_the_recorded_rows():
    rows = RUN["rows"]
    top = max(r["n"] for r in rows)
    first = FIG["speed"][0]
    tri = next(r for r in rows if r["kernel"].startswith("triton") and r["n"] == top and r["dtype"] == first["dtype"]
               and r["d"] == first["d"] and r["causal"] == first["causal"] and r["direction"] == "forward")
    auto = next(r for r in rows if r["kernel"] == "sdpa" and r["backend"] == "auto" and r["n"] == top
                and r["dtype"] == first["dtype"] and r["d"] == first["d"] and r["causal"] == first["causal"]
                and r["direction"] == "forward")
    assert first["forward"]["triton_ms"] == tri["ms"] and first["forward"]["sdpa_ms"] == auto["ms"]
    assert first["forward"]["share"] == auto["ms"] / tri["ms"]
    assert FIG["meta"]["command"].startswith("python3 bench_flash_triton.py --module solution")
    assert "--json" not in FIG["meta"]["command"] and "--md" not in FIG["meta"]["command"]
    assert [m["n"] for m in FIG["memory"][::2]] == sorted({r["n"] for r in rows if (r["dtype"], r["d"], r["causal"])
                                                          == (FIG["focus"]["dtype"], FIG["focus"]["d"],
                                                              FIG["focus"]["causal"])})


@pytest.mark.parametrize("code", ["en", "pt-BR"])
def test_the_page_writes_each_figure_by_its_languages_rules(built_site, code):
    section = _section(built_site, code)
    locale = i18n.language(code).locale
    nums = i18n.numbers(code)
    assert unescape(FIG["meta"]["command"]) in unescape(section)
    assert FIG["meta"]["gpu"] in section
    speed = _cells(_table(section, "gpu-speed"))
    expected = []
    for c in FIG["speed"]:
        for direction in ("forward", "forward+backward"):
            x = c[direction]
            if x:
                expected.append([nums.fixed(x["triton_ms"], 2), nums.fixed(x["sdpa_ms"], 2), x["ran"],
                                 babel.numbers.format_percent(x["share"], format="#,##0%", locale=locale)])
    assert [row[4:8] for row in speed] == expected
    by_n = _cells(_table(section, "gpu-by-n"))
    assert [row[0] for row in by_n] == [nums.group(r["n"]) for r in FIG["by_n"]]
    memory = _cells(_table(section, "gpu-memory"))
    oom = {"en": "out of memory", "pt-BR": "sem memória"}[code]
    for row, m in zip(memory, FIG["memory"], strict=True):
        for cell, name in zip(row[2:], ("by_hand", "sdpa", "triton"), strict=True):
            want = oom if name in m["oom"] else ("–" if m[name] is None else nums.fixed(m[name] / 2**20, 1))
            assert cell == want, (m, name)
    top = nums.group(FIG["speed"][0]["n"])
    assert f"N = {top}" in section
