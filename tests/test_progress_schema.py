"""One schema for every progress file (site/static/js/exercise/progress-schema.js).

The module runs under node (tests/js_parity.mjs). A good file, an old unversioned
one and one from a later site are read; each malformed file is refused with a
message that names the bad field; read leniently (what a browser stored), a bad
step record is set aside while the good ones load. The pages' side of the same
faults is in tests/test_browser_progress_exercise.py and _module.py.
"""
from __future__ import annotations

import json

import pytest
from test_js_parity import NODE, js

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

GOOD = {"version": 2, "name": "Ana", "exported": "2025-03-01T14:05:00.000Z",
        "steps": {"online-softmax/scratch": {"code": "x = 1\n", "passed": True, "passedCode": "x = 1\n",
                                             "passedAt": "2025-03-01T14:00:00.000Z", "checks": 3, "fails": 2,
                                             "hints": 1},
                  "online-softmax/predict": {"answer": {"plain_bytes": "21,000,000", "fused_bytes": "4.5e6"}},
                  # Break it's Predict: bug 3 has no prediction yet (null), and the answers were shown
                  "break-it/predict": {"answer": {"1": ["test_one_tile"], "2": [], "3": None}, "revealed": True},
                  "online-softmax/probe": {"sentence": "…", "selfAssessed": True, "answerShown": False}}}
SCRATCH = 'steps["online-softmax/scratch"]'

# (what is wrong, the file, the field the message names, words the message holds)
BAD = [
    ("code is a number", {"version": 1, "steps": {"online-softmax/scratch": {"code": 5}}},
     f"{SCRATCH}.code", "should be text, not a number (5)"),
    ("a record is a string", {"version": 1, "steps": {"online-softmax/scratch": "oops"}},
     SCRATCH, 'should be a table, not text ("oops")'),
    ("steps is a list", {"version": 1, "steps": []}, "steps", "should be a table of step records"),
    ("steps is missing", {"version": 1}, "steps", "is missing"),
    ("version is text", {"version": "1", "steps": {}}, "version", 'not text ("1")'),
    ("version is negative", {"version": -1, "steps": {}}, "version", "not a number (-1)"),
    ("version is a fraction", {"version": 1.5, "steps": {}}, "version", "whole number"),
    ("version is missing beside steps", {"steps": {}}, "version", "is missing"),
    ("passed is text", {"version": 1, "steps": {"online-softmax/scratch": {"passed": "yes"}}},
     f"{SCRATCH}.passed", "true or false"),
    ("checks is negative", {"version": 1, "steps": {"online-softmax/scratch": {"checks": -2}}},
     f"{SCRATCH}.checks", "whole number, 0 or more"),
    ("passedAt is not a time", {"version": 1, "steps": {"online-softmax/scratch": {"passedAt": "yesterday"}}},
     f"{SCRATCH}.passedAt", "date and time"),
    ("answer holds a number", {"version": 1, "steps": {"online-softmax/predict": {"answer": {"plain_bytes": 3}}}},
     'steps["online-softmax/predict"].answer', "table of answers"),
    ("a key that is no step id", {"version": 1, "steps": {"__proto__": {"passed": True}}},
     'steps["__proto__"]', "not a step id"),
    ("name is a number", {"version": 1, "name": 7, "steps": {}}, "name", "should be text"),
    ("name is too long", {"version": 1, "name": "a" * 201, "steps": {}}, "name", "longer than 200"),
    ("exported is not a time", {"version": 1, "exported": 0, "steps": {}}, "exported", "date and time"),
    ("v0 passed is not a list", {"passed": "online-softmax/scratch"}, "passed", "list of step ids"),
    ("v0 code holds a number", {"code": {"online-softmax/scratch": 1}}, 'code["online-softmax/scratch"]',
     "should be text"),
    ("not a table", [1, 2], "", "the file holds a list"),
    ("null", None, "", "the file holds null"),
]


@pytest.fixture(scope="module")
def refused():
    return js([{"fn": "validateProgress", "args": [case[1], True]} for case in BAD])


@pytest.mark.parametrize("i", range(len(BAD)), ids=[c[0] for c in BAD])
def test_a_bad_file_is_refused_naming_its_field(refused, i):
    _what, _data, field, words = BAD[i]
    reply = refused[i]
    assert not reply["ok"], reply
    assert reply["error"]["kind"] == "SchemaError"
    assert reply["error"]["field"] == field
    assert reply["error"]["message"].startswith(field)
    assert words in reply["error"]["message"]


def test_good_old_and_newer_files_are_read():
    old = {"passed": ["online-softmax/scratch"], "code": {"online-softmax/scratch": "y = 2\n",
                                                        "online-softmax/compose": "z = 3\n"}}
    newer = {"version": 7, "steps": {"online-softmax/scratch": {"passed": True, "later": {"kept": 1}}}, "more": 1}
    good, migrated, later = js([{"fn": "validateProgress", "args": [data, True]} for data in (GOOD, old, newer)])
    assert good == {"ok": True, "value": {"state": GOOD, "setAside": {}}}
    assert migrated["value"]["state"] == {"version": 2, "steps": {
        "online-softmax/scratch": {"passed": True, "code": "y = 2\n"},
        "online-softmax/compose": {"code": "z = 3\n"}}}
    assert later["value"]["state"] == newer  # a field this site does not know is kept as it is


def test_read_leniently_a_bad_record_is_set_aside_and_the_rest_loads():
    stored = {"version": 1, "steps": {"online-softmax/scratch": {"code": 5},
                                      "online-softmax/compose": "oops",
                                      "online-softmax/probe": {"code": "ok = 1\n", "passed": True}}}
    (reply,) = js([{"fn": "validateProgress", "args": [stored, False]}])
    assert reply["value"]["state"] == {"version": 2, "steps": {"online-softmax/probe": {"code": "ok = 1\n",
                                                                                       "passed": True}}}
    aside = reply["value"]["setAside"]
    assert aside["online-softmax/scratch"]["record"] == {"code": 5}
    assert aside["online-softmax/scratch"]["reason"].startswith(f"{SCRATCH}.code should be text")
    assert aside["online-softmax/compose"]["record"] == "oops"
    # a bad top level is no record to set aside: it still throws, naming the field
    (top,) = js([{"fn": "validateProgress", "args": [{"version": "1", "steps": {}}, False]}])
    assert top["error"]["field"] == "version"


def test_text_that_is_not_json_says_so():
    bad, good = js([{"fn": "parseProgress", "args": ["{not json"]},
                    {"fn": "parseProgress", "args": [json.dumps(GOOD)]}])
    assert bad["error"]["message"] == "the file is not JSON"
    assert good["value"] == GOOD


def test_a_version_1_file_migrates_and_a_pass_after_the_reveal_says_so():
    """Version 2 records a Predict step passed after its answers were shown
    (afterReveal). A version 1 record cannot say when the answers were shown, so one that passed
    with them shown (revealed) migrates as passed after the reveal; every other field is kept."""
    v1 = {"version": 1, "name": "Ana", "steps": {
        "break-it/predict": {"passed": True, "revealed": True, "answer": {"1": []}, "fails": 1},
        "online-softmax/predict": {"passed": True, "answer": {"plain_bytes": "1"}},
        "online-softmax/scratch": {"passed": True, "code": "x = 1\n"},
        "break-it/break": {"revealed": True}}}
    (reply,) = js([{"fn": "validateProgress", "args": [v1, True]}])
    state = reply["value"]["state"]
    assert state["version"] == 2 and state["name"] == "Ana"
    assert state["steps"]["break-it/predict"] == {**v1["steps"]["break-it/predict"], "afterReveal": True}
    for key in ("online-softmax/predict", "online-softmax/scratch", "break-it/break"):
        assert state["steps"][key] == v1["steps"][key]
    v2 = {"version": 2, "steps": {"break-it/predict": {"passed": True, "afterReveal": "yes"}}}
    (bad,) = js([{"fn": "validateProgress", "args": [v2, True]}])
    assert bad["error"]["field"] == 'steps["break-it/predict"].afterReveal'
    (first,) = js([{"fn": "validateProgress", "args": [
        {"version": 2, "steps": {"break-it/predict": {"firstAnswer": {"1": 3}}}}, True]}])
    assert first["error"]["field"] == 'steps["break-it/predict"].firstAnswer'
