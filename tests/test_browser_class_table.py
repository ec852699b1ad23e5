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

import csv
import io
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


def open_class(page, url):
    """Open the class page and wait until its script has bound the file input
    (class-page.js sets window.cannery.classTable.ready last): files chosen before that
    fire a change event nobody hears."""
    page.goto(url)
    page.wait_for_function("() => Boolean(window.cannery && (window.cannery.classTable || {}).ready)")


def rows(page):
    """Each row's cells, by their first line (an exercise's cell lists its steps below its count)."""
    return [[cell.strip().split("\n")[0] for cell in row.locator("th, td").all_inner_texts()]
            for row in page.locator("#class-table tbody tr").all()]


def test_three_exported_files_give_three_rows_and_the_bad_one_is_named(page, server_url, artifacts):
    open_class(page, server_url + "module/class/index.html")
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
        open_class(page, server_url + "pt-BR/module/class/index.html")
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


# A table a teacher can use: what each learner passed, read from their files.

def write(folder, name, data):
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


def fresh(page, server_url):
    open_class(page, server_url + "module/class/index.html")
    expect(page.locator("#class-status")).to_have_text("No files yet.")


def test_a_second_selection_adds_and_the_same_learner_twice_is_flagged(page, server_url, tmp_path):
    fresh(page, server_url)
    ana = write(tmp_path, "ana/cannery-progress.json", {"version": 2, "name": "Ana", "steps": {}})
    bia = write(tmp_path, "bia/cannery-progress.json", {"version": 2, "name": "Bia", "steps": {}})
    page.set_input_files("#class-files", ana)
    page.set_input_files("#class-files", bia)  # the same file name, another learner: both stay
    expect(page.locator("#class-status")).to_have_text("2 learners in the table.")
    assert [r[0] for r in rows(page)] == ["Ana", "Bia"]
    again = write(tmp_path, "later/ana-again.json", {"version": 2, "name": " ana ", "steps": {}})
    page.set_input_files("#class-files", again)
    expect(page.locator("#class-status")).to_have_text("3 learners in the table. 2 rows are a learner loaded twice.")
    flags = page.locator("#class-table tbody tr.class-twice .class-flag")
    # " ana " (trimmed) sorts before "Ana"; each row names the other's file
    expect(flags).to_have_text(["loaded twice: also in cannery-progress.json", "loaded twice: also in ana-again.json"])
    expect(page.locator("#class-table tbody tr:not(.class-twice) th")).to_have_text("Bia")
    assert page.console_errors == []


def test_each_step_shows_passed_after_the_reveal_or_not_yet(page, server_url, tmp_path):
    fresh(page, server_url)
    steps = {ONLINE[0]: {"passed": True, "passedAt": "2025-03-01T09:00:00Z"},
             "break-it/predict": {"passed": True, "afterReveal": True, "passedAt": "2025-03-02T09:00:00Z"}}
    page.set_input_files("#class-files", write(tmp_path, "ana.json", {"version": 2, "name": "Ana", "steps": steps}))
    row = page.locator("#class-table tbody tr").first
    expect(row.locator("td.class-k")).to_have_text(f"2 of {len(STEPS)} (1 after the reveal)")
    cells = row.locator("td.class-exercise")
    expect(cells).to_have_count(len(content.slugs()))
    for slug, cell in zip(content.slugs(), cells.all(), strict=True):
        marks = cell.locator("li")
        expect(marks).to_have_count(len([s for s in STEPS if s.startswith(slug + "/")]))
    predict = next(st["title"] for st in content.load("break-it")["steps"] if st["id"] == "predict")
    exercise5 = cells.nth(content.slugs().index("break-it"))
    expect(exercise5.locator("li[data-state=revealed]")).to_have_text(f"◐ {predict}: passed after the reveal")
    expect(cells.first.locator("li[data-state=passed]")).to_have_count(1)
    expect(cells.first.locator("li[data-state=todo]")).to_have_count(len(ONLINE) - 1)


def test_the_last_pass_is_the_latest_instant_and_impossible_dates_are_refused(page, server_url, tmp_path):
    fresh(page, server_url)
    tokyo, utc = "2025-03-01T23:00:00+09:00", "2025-03-01T20:00:00Z"  # 14:00 UTC, then 20:00 UTC
    good = {"version": 2, "name": "Ana", "steps": {ONLINE[0]: {"passed": True, "passedAt": tokyo},
                                                   ONLINE[1]: {"passed": True, "passedAt": utc}}}
    bad = {"version": 2, "name": "Bia", "steps": {ONLINE[0]: {"passed": True, "passedAt": "2025-02-30T10:00:00Z"}}}
    page.set_input_files("#class-files", [write(tmp_path, "ana.json", good), write(tmp_path, "bia.json", bad)])
    expect(page.locator("#class-table tbody tr")).to_have_count(1)
    last = page.locator("#class-table tbody tr time")
    expect(last).to_have_attribute("datetime", utc)
    expect(last).to_have_text("Mar 1, 2025, 8:00 PM")
    expect(page.locator("#class-problems")).to_have_text(
        f'bia.json: steps["{ONLINE[0]}"].passedAt should be a date and time such as 2025-03-01T14:05:00Z, '
        'not text ("2025-02-30T10:00:00Z")')


def test_a_long_name_a_reversing_name_and_a_huge_file_leave_the_table_readable(page, server_url, tmp_path,
                                                                             artifacts):
    fresh(page, server_url)
    late = {"break-it/predict": {"passed": True, "afterReveal": True, "passedAt": "2025-03-02T09:00:00Z"}}
    long = write(tmp_path, "long.json", {"version": 2, "name": "W" * 200, "steps": late})
    rlo = write(tmp_path, "\u202enosj.evil.json", "{not json")
    huge = tmp_path / "huge.json"
    huge.write_bytes(b" " * (5 * 1024 * 1024))  # 5 MiB: refused by size, before it is read
    page.set_input_files("#class-files", [long, rlo, str(huge)])
    expect(page.locator("#class-table tbody tr")).to_have_count(1)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    def in_view():  # the last pass and the file, each learner's results, in view without scrolling
        right = page.locator(".table-wrap").bounding_box()
        shown = [b for b in (c.bounding_box() for c in page.locator("#class-table tbody tr td").all()) if b]
        assert shown  # on a phone some columns are hidden; every column shown is in view
        for box in shown:
            assert box["x"] + box["width"] <= right["x"] + right["width"] + 0.5
        return page.locator("#class-table tbody tr th .class-name").first.bounding_box()["height"]
    assert in_view() < 90  # three lines of the name at most
    problems = page.locator("#class-problems li")
    expect(problems).to_have_count(2)
    texts = problems.all_inner_texts()
    assert texts[0] == "nosj.evil.json: the file is not JSON" and "\u202e" not in texts[0]
    assert problems.first.locator("bdi").count() == 1
    assert texts[1] == "huge.json: it is 5.0 MiB, and a progress file is at most 4 MiB"
    page.set_input_files("#class-files", [write(tmp_path, "again/long.json", {"version": 2, "name": "W" * 200,
                                                                              "steps": {}})])
    expect(page.locator("#class-table tbody tr.class-twice")).to_have_count(2)
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    in_view()
    page.screenshot(path=str(artifacts / "class-table-long-name-1280.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 900})
    try:
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        in_view()
        page.screenshot(path=str(artifacts / "class-table-long-name-390.png"), full_page=True)
    finally:
        page.set_viewport_size({"width": 1280, "height": 900})


def test_the_table_exports_as_csv_with_no_formula(page, server_url, tmp_path):
    fresh(page, server_url)
    steps = {ONLINE[0]: {"passed": True, "passedAt": "2025-03-01T23:00:00+09:00"},
             "break-it/predict": {"passed": True, "afterReveal": True}}
    page.set_input_files("#class-files", [
        write(tmp_path, "a.json", {"version": 2, "name": '=HYPERLINK("http://x","y")', "steps": steps}),
        write(tmp_path, "b,c.json", {"version": 2, "name": "Bia \"B\" Souza", "steps": {}})])
    expect(page.locator("#class-table tbody tr")).to_have_count(2)
    page.locator("#class-csv").focus()
    with page.expect_download() as info:
        page.keyboard.press("Enter")
    assert info.value.suggested_filename == "cannery-class-table.csv"
    info.value.save_as(tmp_path / "t.csv")
    text = (tmp_path / "t.csv").read_bytes().decode("utf-8")
    assert text.startswith("\ufeff")
    table = list(csv.reader(io.StringIO(text.removeprefix("\ufeff"), newline="")))
    head = table[0]
    assert head[:5] == ["Learner", "File", "Steps passed", "Passed after the reveal", "Last pass (UTC)"]
    assert len(head) == 5 + len(STEPS) + 1 and head[-1] == "Loaded twice"
    by = {r[0]: dict(zip(head, r, strict=True)) for r in table[1:]}
    assert set(by) == {"'=HYPERLINK(\"http://x\",\"y\")", 'Bia "B" Souza'}
    ana = by["'=HYPERLINK(\"http://x\",\"y\")"]
    assert ana["Steps passed"] == "2" and ana["Passed after the reveal"] == "1"
    assert ana["Last pass (UTC)"] == "2025-03-01T14:00:00.000Z"
    title = next(st["title"] for st in content.load("break-it")["steps"] if st["id"] == "predict")
    exercise = page.locator("#class-table thead th[data-steps~='break-it/predict']").inner_text()
    predict = f"{exercise}: {title}"
    assert ana[predict] == "passed after the reveal" and by['Bia "B" Souza'][predict] == "not yet"
    assert by['Bia "B" Souza']["File"] == "b,c.json"
