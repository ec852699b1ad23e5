"""The teachers' page (site/content/pages/teachers.toml,
course/teachers.py) and the class table page, on the built site.

Two plans of 50 and 90 minutes, whose minutes come from data (a film part's from
its cues, an exercises part's from its steps); every film link lands on a cue's
start; every typical wrong answer has its note in both languages, and what the
tests say to it is what the checker says; both pages are linked from the lesson
and the module, in both languages, and print without their controls. The
browser side (a link opens the film at its cue, the class table over three
files, axe) is in test_browser_teachers.py and test_browser_class_table.py.
"""
from __future__ import annotations

import json
import math
import re
import tomllib
from pathlib import Path

import pytest

import build
import i18n
from course import teachers
from exercises import content, runner

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "site" / "content" / "pages" / "teachers.toml"
LANGS = [lang.code for lang in i18n.languages()]


@pytest.fixture(scope="module")
def film(built_site) -> dict:
    return json.loads((built_site / "media" / "film.json").read_text(encoding="utf-8"))


def html_of(site: Path, code: str, page: str = "teachers/index.html") -> str:
    return (site / i18n.language(code).prefix / page).read_text(encoding="utf-8")


def step_minutes() -> dict:
    return {f"{slug}/{st['id']}": st["minutes"] for slug in content.slugs() for st in content.load(slug)["steps"]}


def test_two_plans_of_50_and_90_minutes_with_film_question_lab_and_exercises(film):
    data = tomllib.loads(PAGE.read_text(encoding="utf-8"))
    cues = {c["id"]: c["start_s"] for c in film["cues"]}
    minutes = step_minutes()
    totals = []
    for plan in data["plans"]:
        parts = []
        for part in plan["parts"]:
            if part["kind"] == "film":
                end = film["runtime_s"] if part["until"] == "end" else cues[part["until"]]
                parts.append(math.ceil((end - cues[part["cue"]]) / 60))
            elif part["kind"] == "exercises":
                parts.append(sum(minutes[k] for k in part["steps"]))
            else:
                parts.append(part["minutes"])
        assert {"film", "question", "lab", "exercises"} <= {p["kind"] for p in plan["parts"]}
        totals.append(sum(parts))
    assert totals == [50, 90]


@pytest.mark.parametrize("code", LANGS)
def test_the_page_shows_each_plans_minutes_from_the_data(built_site, code):
    html = html_of(built_site, code)
    for plan, total in zip(("short", "long"), (50, 90), strict=True):
        section = html[html.index(f'id="plan-{plan}"'):]
        section = section[:section.index("</section>")]
        assert re.search(rf"<tfoot><tr><th scope=\"row\">[^<]+</th><td>{total}</td>", section)
        shown = [int(m) for m in re.findall(r'<span class="part-minutes">(\d+) min</span>', section)]
        assert sum(shown) == total


@pytest.mark.parametrize("code", LANGS)
def test_every_film_link_is_a_cues_start(built_site, film, code):
    html = html_of(built_site, code)
    starts = {c["id"]: c["start_s"] for c in film["cues"]}
    links = re.findall(r'href="(?:\.\./)+(?:pt-BR/)?index\.html#t=([\d.]+)" data-cue="([\w-]+)"', html)
    assert len(links) >= 10
    for t, cue in links:
        assert float(t) == starts[cue], cue
    data = tomllib.loads(PAGE.read_text(encoding="utf-8"))
    named = {m["id"] for plan in data["plans"] for p in plan["parts"] for m in p.get("moments", [])}
    assert named == {cue for _t, cue in links}
    prefix = i18n.language(code).prefix
    home = build.root_of(prefix + "teachers/index.html") + prefix
    assert f'href="{home}index.html#t={starts[film["question"]["cue"]]}"' in html  # the question's moment


def test_every_wrong_answer_has_a_note_in_every_language():
    for slug in content.slugs():
        for st in content.load(slug)["steps"]:
            wrong = set(teachers.wrong_files(slug, st["id"]))
            for code in LANGS:
                notes = teachers.notes(slug, st["id"], code)
                assert set(notes) == wrong, (slug, st["id"], code, sorted(wrong ^ set(notes)))
                assert all(n["shows"] and n["ask"] for n in notes.values())


@pytest.mark.parametrize("slug,step,name", [("online-softmax", "scratch", "no_rescale.py"),
                                            ("flash-backward", "scratch", "d_left_out.py")])
def test_what_the_page_says_the_tests_say_is_what_the_checker_says(built_site, slug, step, name):
    html = html_of(built_site, "en")
    report = runner.check(slug, step, content.wrong_answers(content.step(slug, step))[name])
    first = next(r["title"] for r in report["results"] if not r["ok"])
    block = html[html.index(f"<code>wrong/{name}</code>", html.index(f'id="answer-{slug}-{step}"')):]
    said = re.search(r'<p class="caught">([^<]+)</p>', block)[1]
    assert said == (f"The tests say: {report['passed']} of {report['total']} pass; it fails "
                    f"“{first}”.").replace("'", "&#39;").replace('"', "&#34;")


@pytest.mark.parametrize("code", LANGS)
def test_each_steps_solution_is_on_the_page(built_site, code):
    html = html_of(built_site, code)
    for slug in content.slugs():
        for st in content.load(slug)["steps"]:
            solution = content.read(st, "solution.py") or content.read(st, "solution.wgsl")
            first = solution.strip().splitlines()[-1].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            block = html[html.index(f'id="answer-{slug}-{st["id"]}"'):]
            assert first.replace("'", "&#39;").replace('"', "&#34;") in block[:block.index("</article>")], st["id"]
    assert 'module/triton-port/files/solution.py" download="solution.py"' in html


@pytest.mark.parametrize("code", LANGS)
def test_the_lesson_and_the_module_link_the_teachers_page_and_the_class_table(built_site, code):
    prefix = i18n.language(code).prefix

    def href(page: str, target: str) -> str:
        return f'href="{build.root_of(prefix + page)}{prefix}{target}"'

    assert href("index.html", "teachers/index.html") in html_of(built_site, code, "index.html")
    module = html_of(built_site, code, "module/index.html")
    assert href("module/index.html", "teachers/index.html") in module
    assert href("module/index.html", "module/class/index.html") in module
    assert href("teachers/index.html", "module/class/index.html") in html_of(built_site, code)
    table = html_of(built_site, code, "module/class/index.html")
    assert 'type="file" id="class-files" accept="application/json,.json" multiple' in table


def test_the_page_has_a_print_stylesheet_that_drops_controls_and_opens_solutions(built_site):
    css = (built_site / "static" / "css" / "teachers.css").read_text(encoding="utf-8")
    printed = css[css.index("@media print"):]
    assert ".language-switch" in printed and "details::details-content" in printed
    assert 'href="../static/css/teachers.css"' in html_of(built_site, "en")


@pytest.mark.parametrize("code", LANGS)
def test_the_page_says_the_tests_are_readable_and_aim_at_natural_shortcuts(built_site, code):
    html = html_of(built_site, code)
    said = re.search(r'<p id="answers-honest">(.*?)</p>', html, re.S)[1]
    words = {"en": ("a learner can read them", "no natural shortcut passes", "not a grade"),
             "pt-BR": ("quem aprende pode lê-los", "nenhum atalho natural passe", "não uma nota")}[code]
    flat = " ".join(said.split())
    assert all(" ".join(w.split()) in flat for w in words), flat


def test_a_verdict_is_kept_between_builds_and_made_again_when_its_inputs_change(tmp_path, monkeypatch):
    """course.teachers keeps the checker's verdicts on disk, keyed by the answer, the exercise's
    folder and the checker's code: a second build (a new process: the in-memory cache emptied)
    reads it; another answer, or a changed checker, runs the checker again."""
    monkeypatch.setenv("CANNERY_CACHE", str(tmp_path))
    calls = []
    real = runner.check

    def counted(*args, **kwargs):
        calls.append(args[:2])
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "check", counted)
    step = content.step("online-softmax", "scratch")
    wrong = content.wrong_answers(step)["no_rescale.py"]
    tests = (Path(content.EXERCISES_DIR) / "online-softmax" / "scratch" / "tests.py").read_text(encoding="utf-8")

    def verdict(source):
        teachers._verdict.cache_clear()
        return teachers._verdict("online-softmax", "scratch", source, tests)

    first = verdict(wrong)
    assert calls == [("online-softmax", "scratch")] and first[1] < first[2]  # it fails some tests
    assert len(list((tmp_path / "verdicts").glob("*.json"))) == 1
    assert verdict(wrong) == first and len(calls) == 1  # read back, not run
    solved = verdict(content.read(step, "solution.py"))
    assert len(calls) == 2 and solved[0] == () and solved[1] == solved[2]
    monkeypatch.setattr(teachers, "_fingerprint", lambda folder: f"changed {folder}")  # the checker's code moved
    assert verdict(wrong) == first and len(calls) == 3
