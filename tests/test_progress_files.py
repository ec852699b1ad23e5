"""Issues 30 (section 4) and 32 (items 9, 10, 11): progress files as files, under node
(site/static/js/exercise/progress-files.js, with the schema's instant and stepState).

The export's file name carries the learner's name and is safe on every file system; a
time is an instant (an offset counts) and an impossible date is refused; a name's
bidirectional controls are taken out of what a page shows; an import merges by the
record that went further; the class table's CSV quotes its fields and keeps a name
that starts like a formula from running as one.
"""
from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

import pytest
from test_js_parity import NODE

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")
BRIDGE = Path(__file__).with_name("js_progress_files.mjs")
ROOT = BRIDGE.parent.parent


def js(*calls):
    payload = [{"fn": fn, "args": list(args)} for fn, *args in calls]
    out = subprocess.run([NODE, str(BRIDGE)], input=json.dumps(payload), capture_output=True, text=True,
                         check=True, timeout=60, cwd=ROOT)
    replies = json.loads(out.stdout)
    for reply in replies:
        assert reply["ok"], reply
    return [r["value"] for r in replies]


# (the name in the file, the export's file name)
NAMES = [
    ("Ana Silva", "cannery-progress-ana-silva.json"),
    ("  Ana   Sílva  ", "cannery-progress-ana-silva.json"),
    ("João Conceição", "cannery-progress-joao-conceicao.json"),
    ("Zoë / Ørsted\\x", "cannery-progress-zoe-ørsted-x.json"),  # Ø has no decomposition: kept, a letter
    ("a/b\\c:d*e?f\"g<h>i|j", "cannery-progress-a-b-c-d-e-f-g-h-i-j.json"),
    ("../../etc/passwd", "cannery-progress-etc-passwd.json"),
    ("CON", "cannery-progress-con.json"),  # never the whole name: no reserved name (CON, NUL, COM1…)
    (".hidden", "cannery-progress-hidden.json"),
    ("李小龍", "cannery-progress-李小龍.json"),
    ("\u202eevil\u202c name", "cannery-progress-evil-name.json"),
    ("", "cannery-progress.json"),
    ("   ", "cannery-progress.json"),
    ("!!!", "cannery-progress.json"),
    (None, "cannery-progress.json"),
]


@pytest.mark.parametrize("name,file", NAMES, ids=[repr(n) for n, _f in NAMES])
def test_the_export_is_named_for_the_learner_safely(name, file):
    (got,) = js(("exportFileName", name))
    assert got == file


def test_a_very_long_name_is_cut_and_every_name_is_a_safe_file_name():
    long = "Maria " * 60
    (got,) = js(("exportFileName", long))
    stem = got.removeprefix("cannery-progress-").removesuffix(".json")
    (limit,) = js(("exportFileName", "x" * 1000))
    assert len(limit) == len("cannery-progress-.json") + 60
    assert len(stem) <= 60 and not stem.endswith("-") and stem.startswith("maria-maria")
    for _name, file in NAMES:
        assert not set(file) & set('/\\:*?"<>|\u202e') and len(file.encode()) < 255 and not file.startswith(".")


def test_times_are_ordered_as_instants_and_impossible_dates_refused():
    tokyo, utc = "2025-03-01T23:00:00+09:00", "2025-03-01T20:00:00Z"  # 14:00 UTC, then 20:00 UTC
    latest, a, b = js(("latest", [tokyo, utc]), ("instant", tokyo), ("instant", utc))
    assert latest == utc and b - a == 6 * 3600 * 1000
    (none,) = js(("latest", []))
    assert none is None
    bad = ["2025-02-30T10:00:00Z", "2025-02-29T10:00:00Z", "2025-13-01T10:00:00Z", "2025-04-31T10:00:00Z",
           "2025-03-01T24:00:00Z", "2025-03-01T10:60:00Z", "2025-03-01T10:00:60Z", "2025-03-01T10:00:00+24:00",
           "2025-00-10T10:00:00Z", "2025-03-00T10:00:00Z", "yesterday"]
    good = ["2024-02-29T10:00:00Z", "2025-12-31T23:59:59.999Z", "2025-03-01T14:05:00+05:30"]
    got = js(*[("instant", t) for t in bad + good])
    assert got[:len(bad)] == ["NaN"] * len(bad)
    assert all(isinstance(v, int) for v in got[len(bad):])
    impossible = {"version": 2, "steps": {"online-softmax/scratch": {"passed": True,
                                                                      "passedAt": "2025-02-30T10:00:00Z"}}}
    (refused,) = json.loads(subprocess.run(
        [NODE, str(BRIDGE)], input=json.dumps([{"fn": "validate", "args": [impossible]}]),
        capture_output=True, text=True, check=True, cwd=ROOT).stdout)
    assert refused["error"]["field"] == 'steps["online-softmax/scratch"].passedAt'
    assert "date and time" in refused["error"]["message"]


def test_bidirectional_controls_are_taken_out_of_what_is_shown():
    (shown,) = js(("plainText", "ana\u202enosj.json\u2066x\u2069\u200f"))
    assert shown == "ananosj.jsonx"


def test_merge_keeps_the_record_that_went_further():
    mine = {"version": 2, "name": "Ana", "steps": {
        "online-softmax/scratch": {"passed": True, "code": "mine"},
        "online-softmax/compose": {"code": "draft"},
        "break-it/predict": {"passed": True, "afterReveal": True}}}
    theirs = {"version": 2, "name": "Other", "steps": {
        "online-softmax/scratch": {"code": "theirs"},
        "online-softmax/compose": {"passed": True, "code": "done"},
        "break-it/predict": {"passed": True},
        "online-softmax/probe": {"sentence": "s"}}}
    (merged,) = js(("mergeStates", mine, theirs))
    assert merged == {"version": 2, "name": "Ana", "steps": {
        "online-softmax/scratch": {"passed": True, "code": "mine"},
        "online-softmax/compose": {"passed": True, "code": "done"},
        "break-it/predict": {"passed": True},
        "online-softmax/probe": {"sentence": "s"}}}
    (named,) = js(("mergeStates", {"version": 2, "steps": {}}, theirs))
    assert named["name"] == "Other"


def test_the_csv_quotes_its_fields_and_no_name_runs_as_a_formula():
    rows = [["Learner", "File"], ["=HYPERLINK(\"http://x\")", "a,b.json"], ["+1", "-2"], ["@SUM(A1)", "\tx"],
            ["Ana \"Ni\" Souza", "line\nbreak"], ["\u202eSouza", "ok"]]
    (text,) = js(("csvText", rows))
    assert text.endswith("\r\n") and text.count("\r\n") == len(rows)  # the "\n" inside a field is quoted, not a row
    back = list(csv.reader(io.StringIO(text, newline="")))
    assert back == [["Learner", "File"], ["'=HYPERLINK(\"http://x\")", "a,b.json"], ["'+1", "'-2"],
                    ["'@SUM(A1)", "'\tx"], ['Ana "Ni" Souza', "line\nbreak"], ["Souza", "ok"]]


def test_a_step_is_passed_passed_after_the_reveal_or_not_yet():
    got = js(("stepState", {"passed": True}), ("stepState", {"passed": True, "afterReveal": True}),
             ("stepState", {"code": "x"}), ("stepState", None))
    assert got == ["passed", "revealed", "todo", "todo"]
