"""In Chromium: the class table (module/class/) over three
exported progress files.

Three files in the shape "Export progress" writes ({version, name?, steps,
exported}) and one that breaks the schema are chosen at once: one row per good
file, by the learner's name or else the file's name, with the steps passed of
all the module's steps, per exercise, and the last pass; the bad file is named
with its field, and the others still show. Then in Portuguese, with axe. One
page for the whole file (its context bypasses the CSP only for axe, and keeps
the clock in UTC so that times read the same everywhere).
"""
from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect
from test_browser_a11y import AXE, run_axe

from exercises import content

pytestmark = pytest.mark.browser

# Every step on the module's progress line (a run-elsewhere exercise counts its ladder).
STEPS = [f"{slug}/{st['id']}" for slug in content.slugs() for st in content.load(slug)["steps"]] + [
    f"{slug}/{rung.lower()}" for slug in content.slugs() for rung in
    (content.load(slug).get("ladder", []) if not content.load(slug)["steps"] else [])]
ONLINE = [f"online-softmax/{st['id']}" for st in content.load("online-softmax")["steps"]]


def exported(name=None, passed=(), later=None, **extra):
    steps = {key: {"passed": True, "passedAt": f"2025-03-0{i + 1}T09:00:00.000Z"} for i, key in enumerate(passed)}
    if later:
        steps[later[0]] = {"passed": True, "passedAt": later[1]}
    steps["online-softmax/compose"] = steps.get("online-softmax/compose", {"code": "# work in progress\n"})
    data = {"version": 1, "steps": steps, "exported": "2025-03-10T16:00:00.000Z", **extra}
    if name:
        data["name"] = name
    return json.dumps(data, indent=1)


FILES = {
    "ana.json": exported("Ana Souza", ONLINE[:2], later=("break-it/predict", "2025-03-04T14:05:00.000Z")),
    "bruno-progress.json": exported(None, ONLINE),
    "carla.json": exported("Carla", []),
    "broken.json": json.dumps({"version": "1", "steps": {}}),
}


@pytest.fixture(scope="module")
def page(browser, server_url, tmp_path_factory):
    if not AXE.exists():
        pytest.skip("node_modules/axe-core missing: run `npm ci`")
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True, timezone_id="UTC")
    pg = ctx.new_page()
    pg.console_errors = []
    pg.on("pageerror", lambda e: pg.console_errors.append(str(e)))
    folder = tmp_path_factory.mktemp("class")
    pg.files = []
    for name, text in FILES.items():
        (folder / name).write_text(text, encoding="utf-8")
        pg.files.append(str(folder / name))
    yield pg
    ctx.close()


def rows(page):
    return [[cell.strip() for cell in row.locator("th, td").all_inner_texts()]
            for row in page.locator("#class-table tbody tr").all()]


def test_three_exported_files_give_three_rows_and_the_bad_one_is_named(page, server_url, artifacts):
    page.goto(server_url + "module/class/index.html")
    expect(page.locator("#class-status")).to_have_text("No files yet.")
    page.set_input_files("#class-files", page.files)
    expect(page.locator("#class-table tbody tr")).to_have_count(3)
    expect(page.locator("#class-status")).to_have_text("3 learners in the table. 1 file could not be read:")
    expect(page.locator("#class-problems")).to_have_text(
        'broken.json: version should be a whole number, 0 or more, not text ("1")')
    n = len(STEPS)
    exercises = len(content.slugs())
    table = rows(page)
    assert [r[0] for r in table] == ["Ana Souza", "bruno-progress", "Carla"]  # by name, else the file's name
    assert [r[1] for r in table] == [f"3 of {n}", f"{len(ONLINE)} of {n}", f"0 of {n}"]
    assert table[0][2] == f"2 / {len(ONLINE)}" and table[1][2] == f"{len(ONLINE)} / {len(ONLINE)}"
    assert table[0][2 + 4] == f"1 / {len(content.load('break-it')['steps'])}"  # exercise 5, break it
    assert [r[-1] for r in table] == ["ana.json", "bruno-progress.json", "carla.json"]
    last = page.locator("#class-table tbody tr").first.locator("time")
    expect(last).to_have_attribute("datetime", "2025-03-04T14:05:00.000Z")  # the latest pass, not the first
    expect(last).to_have_text("Mar 4, 2025, 2:05 PM")
    assert table[2][2 + exercises] == "none yet"
    page.locator("#class").screenshot(path=str(artifacts / "class-table-1280.png"))
    assert run_axe(page, "light") == [] and run_axe(page, "dark") == []
    page.click("#class-clear")
    expect(page.locator("#class-table tbody tr")).to_have_count(0)
    assert page.console_errors == []


def test_in_portuguese_and_on_a_phone(page, server_url, artifacts):
    page.set_viewport_size({"width": 390, "height": 900})
    try:
        page.goto(server_url + "pt-BR/module/class/index.html")
        page.set_input_files("#class-files", page.files)
        expect(page.locator("#class-status")).to_have_text("3 alunos na tabela. 1 arquivo não pôde ser lido:")
        expect(page.locator("#class-problems")).to_contain_text("version deveria ser um número inteiro")
        first = page.locator("#class-table tbody tr").first
        expect(first.locator("td").first).to_have_text(f"3 de {len(STEPS)}")
        expect(first.locator("time")).to_have_text("4 de mar. de 2025, 14:05")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        page.screenshot(path=str(artifacts / "class-table-pt-BR-390.png"), full_page=True)
        assert run_axe(page, "light") == []
    finally:
        page.set_viewport_size({"width": 1280, "height": 900})
