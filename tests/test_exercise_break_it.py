"""Exercise 5, "Break it": the five bugs are one line each, the weak suite
catches three of them (by different tests) and misses two, and passes the
correct kernel; Predict shows that truth only once every bug has a prediction
(or the learner asks); the judge tells an exposing input from one that is not,
rejects malformed input with a clear message, and the learner's five inputs
make the suite catch every bug."""
from __future__ import annotations

import difflib
import math
import tomllib
from pathlib import Path

import pytest

from exercises import breakit

FOLDER = Path(breakit.FOLDER)
SOLUTION = tomllib.loads((FOLDER / "break" / "solution.toml").read_text(encoding="utf-8"))["inputs"]
BY_BUG = {e["bug"]: e for e in SOLUTION}
BUG_IDS = [1, 2, 3, 4, 5]
WEAK = ["test_one_tile", "test_zero_queries_average_the_values", "test_random_small_scores",
        "test_key_order_does_not_matter", "test_outputs_lie_within_the_values"]
# Which weak tests fail on each bug: Q = K makes a later tile raise the max (bugs 1 and
# 3; only bug 1's weights add up to more than one, pushing O out of the values' range),
# N = 6 has a ragged tile (bug 4); small scores and no masks hide bugs 2 and 5.
TRUTH = {1: ["test_key_order_does_not_matter", "test_outputs_lie_within_the_values"], 2: [],
         3: ["test_key_order_does_not_matter"], 4: ["test_zero_queries_average_the_values"], 5: []}


def test_there_are_five_bugs_of_five_kinds_each_with_its_file():
    bugs = breakit.bugs()
    assert [b["id"] for b in bugs] == BUG_IDS
    assert len({b["kind"] for b in bugs}) == 5
    assert sorted(p.name for p in (FOLDER / "bugs").glob("*.py")) == sorted(b["file"] for b in bugs)
    meta = breakit.meta()
    assert meta["tier"] == "browser" and meta["minutes"] == 50
    assert [s["title"] for s in meta["steps"]] == ["Predict", "Break it"]


@pytest.mark.parametrize("bug", BUG_IDS)
def test_each_bug_differs_from_the_kernel_by_exactly_one_line(bug):
    a = (FOLDER / "kernel.py").read_text(encoding="utf-8").splitlines()
    b = breakit.kernel_source(bug).splitlines()
    assert len(a) == len(b)
    changed = [line for line in difflib.ndiff(a, b) if line[:2] in ("- ", "+ ")]
    assert len(changed) == 2 and changed[0][0] == "-" and changed[1][0] == "+", changed


def test_the_five_bugs_change_five_different_lines_and_the_diffs_show_them():
    expected = {
        1: ("acc[a] = [acc[a][c] * alpha + math.fsum", "acc[a] = [acc[a][c] + math.fsum"),
        2: ("m_new = max(m[a], max(s))", "m_new = 0.0"),
        3: ("l[a] = l[a] * alpha + math.fsum(p)", "l[a] = l[a] * math.exp(shift - m_old) + math.fsum(p)"),
        4: ("n_tiles = (n_keys + BLOCK_COLS - 1) // BLOCK_COLS", "n_tiles = n_keys // BLOCK_COLS"),
        5: ("shift = m_new if m_new > -math.inf else 0.0", "shift = m_new"),
    }
    olds = set()
    for bug, (old, new) in expected.items():
        [(before, after)] = breakit.changed_lines(bug)
        assert before.strip().startswith(old) and after.strip().startswith(new)
        olds.add(before)
        text = breakit.diff(bug)
        assert text.startswith("--- kernel.py\n+++ bugs/")
        assert [ln for ln in text.splitlines() if ln[:1] in "-+" and ln[:3] not in ("---", "+++")] == \
            ["-" + before, "+" + after]
    assert len(olds) == 5


def test_the_correct_kernel_passes_the_weak_suite():
    results = breakit.run_weak_suite(breakit.load_kernel(0))
    assert list(results) == WEAK
    assert all(v is None for v in results.values()), results


@pytest.mark.parametrize("bug", BUG_IDS)
def test_the_weak_suite_catches_bugs_1_3_and_4_by_different_tests_and_misses_2_and_5(bug):
    results = breakit.run_weak_suite(breakit.load_kernel(bug))
    assert [name for name, v in results.items() if v is not None] == TRUTH[bug], results
    assert breakit.truth()[bug] == TRUTH[bug]
    assert len({tuple(v) for v in TRUTH.values()}) == 4  # the answers differ between bugs


GROSS = {
    "no division by l": ("O.append([x / l[a] for x in acc[a]])", "O.append(acc[a])"),
    "only the last key tile kept": ("alpha = math.exp(m_old - shift)", "alpha = 0.0"),
}


@pytest.mark.parametrize("fault", list(GROSS))
def test_the_weak_suite_does_catch_gross_faults(fault):
    old, new = GROSS[fault]
    source = (FOLDER / "kernel.py").read_text(encoding="utf-8")
    assert source.count(old) == 1
    ns = {}
    exec(compile(source.replace(old, new), f"{fault}.py", "exec"), ns)
    failed = [name for name, v in breakit.run_weak_suite(ns["attention"]).items() if v is not None]
    expected = {"no division by l": [n for n in WEAK if n != "test_key_order_does_not_matter"],
                "only the last key tile kept": ["test_zero_queries_average_the_values",
                                                "test_random_small_scores", "test_key_order_does_not_matter"]}
    assert failed == expected[fault]


def test_every_weak_test_catches_at_least_one_gross_fault():
    caught = set()
    for old, new in GROSS.values():
        ns = {}
        exec((FOLDER / "kernel.py").read_text(encoding="utf-8").replace(old, new), ns)
        caught |= {name for name, v in breakit.run_weak_suite(ns["attention"]).items() if v is not None}
    assert caught == set(WEAK)


def test_weak_suite_margins_bugs_1_and_3_are_hidden_by_small_scores_not_by_luck():
    # The two bugs that are wrong at any score stay below the bound on the weak
    # suite's inputs (scores of about 0.01), and leave it at scores of about 1.
    for bug in (1, 3):
        kernel = breakit.load_kernel(bug)
        Q, K, V = breakit.random_qkv(16, 8, 16, scale=0.01)
        small = breakit.max_error(kernel(Q, K, V), breakit.reference_attention(Q, K, V))
        Q, K, V = breakit.random_qkv(16, 8, 16, scale=1.0)
        large = breakit.max_error(kernel(Q, K, V), breakit.reference_attention(Q, K, V))
        assert 1e-3 < small < breakit.TOL / 1.5, (bug, small)
        assert large > 5 * breakit.TOL, (bug, large)


def test_predict_judges_against_the_truth_once_every_bug_has_a_prediction():
    right = breakit.predict(TRUTH)
    assert right["ok"] and right["right"] == 5 and right["revealed"]
    guess = {1: TRUTH[1], "2": ["test_random_small_scores"], 3: TRUTH[3],
             4: ["test_one_tile", "test_random_small_scores"], 5: TRUTH[5]}
    wrong = breakit.predict(guess)
    assert not wrong["ok"] and wrong["right"] == 3 and wrong["revealed"]
    r2, r4 = wrong["results"][1], wrong["results"][3]
    assert r2["bug"] == 2 and r2["predicted"] == ["test_random_small_scores"] and r2["actual"] == []
    assert r2["message"] == "not quite: test_random_small_scores passes on this bug"
    assert r4["message"] == ("not quite: test_one_tile, test_random_small_scores pass on this bug, and "
                             "test_zero_queries_average_the_values catches it")
    with pytest.raises(breakit.InputError, match="no weak test named 'test_nothing'"):
        breakit.predict({1: ["test_nothing"]})


def test_predict_gives_no_answer_away_before_every_bug_has_a_prediction():
    # The issue: the first wrong Check printed "Expected: tests that fail: none".
    partial = breakit.predict({1: [], 2: ["test_one_tile"], 3: None})
    assert not partial["revealed"] and not partial["ok"] and partial["predicted"] == 2
    assert all(r["actual"] is None and not r["ok"] for r in partial["results"])
    assert partial["results"][0]["message"] == ("prediction saved; the answers show once every bug has a "
                                                "prediction (2 of 5 so far)")
    assert partial["results"][2]["predicted"] is None
    assert partial["results"][2]["message"] == ("no prediction yet: tick the weak tests you think fail on it, "
                                                "or none of them")
    shown = breakit.predict({1: []}, reveal=True)  # the learner asked to see the answers
    assert shown["revealed"] and [r["actual"] for r in shown["results"]] == [TRUTH[b] for b in BUG_IDS]
    assert shown["results"][1]["message"] == "not quite: no prediction was made"


def test_through_the_runner_a_partial_prediction_fails_every_test_without_the_answer():
    source = (FOLDER / "predict" / "wrong" / "two_bugs_predicted_so_far.py").read_text(encoding="utf-8")
    report = breakit_runner().check("break-it", "predict", source)
    assert report["passed"] == 0 and report["total"] == 5
    for r in report["results"]:
        assert "tests that fail" not in r["expected"] + r["message"] + r["got"]
        assert r["expected"] in ("", "a list of test names")
    assert report["results"][0]["message"] == ("bug 1 (the rescale left out): prediction saved; the answers show "
                                               "once every bug has a prediction (2 of 5 so far)")
    assert report["results"][0]["got"] == "you predicted: test_key_order_does_not_matter"
    assert report["results"][2]["message"] == ("bug 3 (the sum l rescaled by the wrong factor): no prediction yet; "
                                               "give a list of test names, [] for none")
    full = {**TRUTH, 3: []}
    report = breakit_runner().check("break-it", "predict", f"catches = {full!r}\n")
    [bad] = [r for r in report["results"] if not r["ok"]]
    assert bad["expected"] == "tests that fail: test_key_order_does_not_matter" and bad["got"] == "you predicted: none"


def breakit_runner():
    from exercises import runner
    return runner
    with pytest.raises(breakit.InputError, match="no bug 9"):
        breakit.predict({9: []})


@pytest.mark.parametrize("bug", BUG_IDS)
def test_the_reference_input_exposes_its_bug(bug):
    r = breakit.judge_input(bug, BY_BUG[bug]["exposes"])
    assert r["ok"], r["message"]
    assert r["correct"]["ok"] and r["correct"]["max_error"] < 1e-12
    assert not r["buggy"]["ok"]
    assert f"exposes bug {bug}" in r["message"]


@pytest.mark.parametrize("bug", BUG_IDS)
def test_the_reference_miss_does_not_expose_its_bug(bug):
    r = breakit.judge_input(bug, BY_BUG[bug]["misses"])
    assert not r["ok"]
    assert r["buggy"]["ok"] and r["buggy"]["max_error"] < 1e-12  # the bug is exactly invisible there
    assert f"bug {bug} (" in r["message"] and "survives this input" in r["message"]


def test_what_each_bug_does_on_its_exposing_input_with_real_values():
    one = breakit.judge_input(1, BY_BUG[1]["exposes"])["buggy"]["first_bad"]
    ref = breakit.judge_input(3, BY_BUG[3]["exposes"])["buggy"]["first_bad"]
    # Bug 1: the second tile (score 1, the max) weighs 1, the first e^-1; its values -0.36
    # nearly cancel the first tile's, O = (4/e - 1.44) / (4/e + 4); without the rescale the
    # first tile keeps weight 1: (4 - 1.44) / (4/e + 4).
    assert (one["row"], one["col"]) == (0, 0) and (ref["row"], ref["col"]) == (0, 0)
    assert one["expected"] == pytest.approx((4 / math.e - 1.44) / (4 / math.e + 4), rel=1e-12)
    assert one["got"] == pytest.approx((4 - 1.44) / (4 / math.e + 4), rel=1e-12)
    # Bug 3: the max moves by 2 and l gets exp(+2) for exp(-2): 1 / (1 + e^2), not e^2 / (1 + e^2).
    assert ref["expected"] == pytest.approx(math.exp(2) / (1 + math.exp(2)), rel=1e-12)
    assert ref["got"] == pytest.approx(1 / (1 + math.exp(2)), rel=1e-12)
    assert breakit.judge_input(2, BY_BUG[2]["exposes"])["buggy"]["raised"] == "OverflowError: math range error"
    four = breakit.judge_input(4, BY_BUG[4]["exposes"])["buggy"]["first_bad"]
    assert four["got"] == 0.0 and four["expected"] == pytest.approx(0.2, rel=1e-12)
    five = breakit.judge_input(5, BY_BUG[5]["exposes"])["buggy"]
    assert math.isnan(five["max_error"]) and math.isnan(five["first_bad"]["got"])


def test_a_causal_mask_alone_never_exposes_the_nan_bug_but_a_fully_padded_row_does():
    r = breakit.judge_input(5, "random_qkv(n=13, d=4, seed=3, causal=True)")
    assert not r["ok"] and r["buggy"]["max_error"] < 1e-12
    r = breakit.judge_input(5, "random_qkv(n=3, d=2, seed=3, key_mask=[0, 0, 0])")
    assert r["ok"] and r["correct"]["max_error"] == 0.0  # every row: O = 0, no keys


def test_bug_4_with_fewer_keys_than_one_tile_reads_no_key_at_all():
    r = breakit.judge_input(4, '{"Q": [[1.0, 2.0]], "K": [[1.0, 0.0], [0.0, 1.0]], "V": [[3.0], [5.0]]}')
    assert r["ok"]
    assert r["buggy"]["first_bad"]["got"] == 0.0
    # softmax([1, 2] / sqrt(2)) · [3, 5] = 3 + 2 / (1 + e^(-1/sqrt 2))
    assert r["buggy"]["first_bad"]["expected"] == pytest.approx(3 + 2 / (1 + math.exp(-1 / math.sqrt(2))), rel=1e-12)
    assert r["bound"] == pytest.approx(breakit.TOL * 5.0)


def test_scores_of_1e8_at_the_size_caps_keep_the_correct_kernel_within_the_bound():
    big = 1.0e4  # the largest entry the judge accepts
    text = str({"Q": [[big] * 16, [-big] * 16], "K": [[big] * 16, [-big] * 16, [1.0] * 16] * 21 + [[0.5] * 16],
                "V": [[float(j % 7)] * 16 for j in range(64)], "causal": True})
    r = breakit.judge_input(1, text)
    assert r["input"] == "N = 2, N_k = 64, d = 16, causal"
    assert r["correct"]["ok"] and r["correct"]["max_error"] == 0.0


@pytest.mark.parametrize("text,message", [
    ("", "Write an input first"),
    ("{'Q': [[1.0]]", "Python cannot read that input"),
    ("__import__('os').system('echo hi')", "The only call allowed is random_qkv"),
    ("{'Q': [[1.0]], 'K': [[1.0]], 'V': [[2 ** 10]]}", "Only numbers, True/False/None"),
    ("[[1.0]]", "An input is a dict of Q, K and V"),
    ("{'Q': [[1.0]], 'K': [[1.0]]}", "the input has no V"),
    ("{'Q': [[1.0, 2.0]], 'K': [[1.0]], 'V': [[1.0]]}", "K has rows of 1 numbers, but Q's rows have 2"),
    ("{'Q': [[1.0]], 'K': [[1.0], [2.0]], 'V': [[1.0]]}", "K has 2 rows but V has 1"),
    ("{'Q': [[1.0], [1.0, 2.0]], 'K': [[1.0]], 'V': [[1.0]]}", "the rows of Q have different lengths"),
    ("{'Q': [[True]], 'K': [[1.0]], 'V': [[1.0]]}", "Q[0][0] must be a number"),
    ("{'Q': [[1e300]], 'K': [[1.0]], 'V': [[1.0]]}", "Q[0][0] = 1e+300 is out of range"),
    ("{'Q': [[1.0]], 'K': [[1.0]], 'V': [[1.0]], 'mask': [1]}", "unknown key 'mask'"),
    ("{'Q': [[1.0]], 'K': [[1.0]], 'V': [[1.0]], 'causal': 1}", "causal must be True or False"),
    ("{'Q': [[1.0]], 'K': [[1.0]], 'V': [[1.0]], 'key_mask': [1, 0]}", "key_mask must be a list of 1 values"),
    ("random_qkv(10, 4, 1, masked_keys=[10])", "masked_keys has 10, but the keys are numbered 0 to 9"),
    ("random_qkv(65, 4, 1)", "N (query rows) must be between 1 and 64, got 65"),
    ("random_qkv(0, 4, 1)", "N (query rows) must be between 1 and 64, got 0"),
    ("random_qkv(8, 17, 1)", "d must be between 1 and 16, got 17"),
    ("random_qkv(8, 4, 1, n_keys=1000000000)", "N_k (key rows) must be between 1 and 64, got 1,000,000,000"),
    ("random_qkv(8, 4.5, 1)", "random_qkv's d must be a whole number"),
    ("random_qkv(8, 4)", "random_qkv needs seed"),
    ("random_qkv(8, 4, 1, temperature=2)", "random_qkv has no argument 'temperature'"),
    ("random_qkv(8, 4, 1, scale=float('inf'))", "Only numbers, True/False/None"),
    ("random_qkv(8, 4, 1, scale=1e9)", "scale must be at most 5,774 in size"),
    ("random_qkv(8, 4, 1, key_mask=[1]*8)", "Only numbers, True/False/None"),
    ("random_qkv(8, 4, 1, **{'scale': 2.0})", "write random_qkv's arguments out as name=value"),
    ("{'Q': [[1" + "0" * 30 + "]], 'K': [[1.0]], 'V': [[1.0]]}", "Q[0][0] = a very large whole number is out of range"),
    ("{'Q': [[1" + "0" * 5000 + "]], 'K': [[1.0]], 'V': [[1.0]]}", "Python cannot read that input"),
    ("[" * 5000 + "]" * 5000, "That input is nested too deeply to read."),
    ("{'Q': [[1j]], 'K': [[1.0]], 'V': [[1.0]]}", "Q[0][0] must be a number, got 1j"),
    ("x" * 100_001, "That input is 100,001 characters long; keep it under 100,000"),
])
def test_malformed_input_gets_a_clear_message_and_runs_nothing(text, message):
    r = breakit.judge_input(1, text)
    assert not r["ok"] and r["buggy"] is None and r["correct"] is None
    assert message in r["message"], r["message"]


def test_the_judge_never_evaluates_learner_text(tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    text = f"{{'Q': [[1.0]], 'K': [[1.0]], 'V': [[1.0]], 'causal': open({str(marker)!r}, 'w') is None}}"
    r = breakit.judge_input(1, text)
    assert not r["ok"] and not marker.exists()


def test_the_learners_five_inputs_make_the_suite_catch_every_bug_and_still_pass_the_correct_kernel():
    result = breakit.extended_suite({b: BY_BUG[b]["exposes"] for b in BUG_IDS})
    assert result["ok"] and not result["errors"]
    assert result["tests"] == WEAK + [f"your_input_{b}" for b in BUG_IDS]
    rows = {r["kernel"]: r for r in result["kernels"]}
    assert rows["correct"]["failed"] == []
    for b in BUG_IDS:
        assert f"your_input_{b}" in rows[b]["failed"] and rows[b]["caught"]
        assert [t for t in rows[b]["failed"] if t in WEAK] == TRUTH[b]


def test_with_the_misses_instead_the_suite_still_catches_nothing():
    result = breakit.extended_suite({b: BY_BUG[b]["misses"] for b in BUG_IDS})
    assert not result["ok"]
    rows = {r["kernel"]: r for r in result["kernels"]}
    # The misses add nothing for bugs 2 and 5, which the weak suite does not reach
    # either: bug 2's miss (a score of 676) still fits in a float64.
    assert rows["correct"]["failed"] == []
    assert rows[5]["failed"] == [] and not rows[5]["caught"]
    assert rows[2]["failed"] == [] and not rows[2]["caught"]


def test_the_page_entry_answers_each_op():
    bugs = breakit.handle({"op": "bugs"})
    assert bugs["ok"] and len(bugs["result"]["bugs"]) == 5
    assert bugs["result"]["bugs"][1]["diff"] == breakit.diff(2)
    assert [t["name"] for t in bugs["result"]["tests"]] == WEAK
    assert breakit.handle({"op": "break", "bug": 4, "text": BY_BUG[4]["exposes"]})["result"]["ok"]
    every = {str(b): v for b, v in TRUTH.items()}
    assert breakit.handle({"op": "predict", "predictions": every})["result"]["right"] == 5
    partial = breakit.handle({"op": "predict", "predictions": {"1": [], "2": None}})["result"]
    assert not partial["revealed"] and partial["predicted"] == 1
    assert breakit.handle({"op": "predict", "predictions": {"1": []}, "reveal": True})["result"]["revealed"]
    assert breakit.handle({"op": "predict", "predictions": {"1": ["nope"]}}) == \
        {"ok": False, "message": "there is no weak test named 'nope'"}
    assert breakit.handle({"op": "dance"}) == {"ok": False, "message": "unknown op 'dance'"}


def test_no_builtin_sum_of_floats_in_the_exercise_sources():
    for path in [Path(breakit.__file__), FOLDER / "kernel.py", FOLDER / "weak_tests.py",
                 *(FOLDER / "bugs").glob("*.py")]:
        assert " sum(" not in path.read_text(encoding="utf-8"), path


def _content(path: Path) -> dict:
    ns = {}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), ns)
    return ns


def test_the_step_solutions_agree_with_the_judge():
    assert _content(FOLDER / "predict" / "solution.py")["catches"] == breakit.truth()
    assert _content(FOLDER / "break" / "solution.py")["inputs"] == {b: BY_BUG[b]["exposes"] for b in BUG_IDS}
    assert _content(FOLDER / "break" / "wrong" / "inputs_the_weak_suite_already_has.py")["inputs"] == \
        {b: BY_BUG[b]["misses"] for b in BUG_IDS}


def test_through_the_exercise_runner_a_causal_mask_is_not_enough_for_bug_5():
    from exercises import runner
    source = (FOLDER / "break" / "wrong" / "causal_mask_for_the_nan.py").read_text(encoding="utf-8")
    report = runner.check("break-it", "break", source)
    failed = [r["name"] for r in report["results"] if not r["ok"]]
    # Bugs 2 to 4 too: each of those inputs breaks other bugs that another input spares.
    assert failed == [f"test_bug_{b}" for b in BUG_IDS] + ["test_the_weak_suite_with_your_inputs_catches_every_bug"]
    assert report["results"][5]["message"] == \
        "the weak suite with your five inputs added: it still passes bug 5"
    good = runner.check("break-it", "break", (FOLDER / "break" / "solution.py").read_text(encoding="utf-8"))
    assert good["ok"] and good["passed"] == 6


def test_bug_2_also_fails_when_every_score_underflows():
    # Scores -900 and three of -870 (one full key tile: bug 4 reads it): exp of either is 0
    # in float64 (below exp(-745)), so without the max l = 0 and the row comes out as zeros;
    # the reference puts weight 1 - 1 / (1 + 3 e^30) on the value 2.
    r = breakit.judge_input(2, '{"Q": [[-30.0]], "K": [[30.0], [29.0], [29.0], [29.0]], '
                               '"V": [[1.0], [2.0], [2.0], [2.0]]}')
    assert r["ok"] and r["also_breaks"] == []
    bad = r["buggy"]["first_bad"]
    assert bad["got"] == 0.0 and bad["expected"] == pytest.approx(2.0 - 1.0 / (1.0 + 3 * math.exp(30.0)), rel=1e-15)


def test_the_weak_tests_titles_in_exercise_toml_are_their_docstrings_in_every_language():
    """The Predict step lists each weak test by a title kept in exercise.toml so that
    each language can word it; in English it is the test's docstring, figure included."""
    import course
    en = course.load_exercise("break-it", "en")
    pt = course.load_exercise("break-it", "pt-BR")
    docs = {t["name"]: t["title"] for t in breakit.handle({"op": "bugs"})["result"]["tests"]}
    assert {t["name"]: t["title"] for t in en["judge_data"]["tests"]} == docs
    titles = {t["name"]: t["title"] for t in pt["judge_data"]["tests"]}
    assert titles.keys() == docs.keys()
    assert all(titles[k] != docs[k] for k in docs)
    assert "0,01" in titles["test_random_small_scores"]


def test_one_input_that_breaks_all_five_kernels_is_refused_for_every_bug():
    # A ragged tile, a masked first tile and scores in the hundreds at once: every bug
    # leaves the bound, so the input says nothing about which line it catches.
    source = (FOLDER / "break" / "wrong" / "one_input_breaks_all_five.py").read_text(encoding="utf-8")
    text = _content(FOLDER / "break" / "wrong" / "one_input_breaks_all_five.py")["inputs"][1]
    case = breakit.parse_input(text)
    assert all(not breakit.run_case(breakit.load_kernel(b), case)["ok"] for b in BUG_IDS)
    assert breakit.run_case(breakit.load_kernel(0), case)["ok"]
    r = breakit.judge_input(4, text)
    assert not r["ok"] and r["broad"] and not r["buggy"]["ok"] and r["correct"]["ok"]
    assert r["message"] == (
        "N = 10, N_k = 10, d = 4, 4 of 10 keys masked: every one of the five bugs fails on this input (its largest "
        "score is 1,022.8), so it cannot tell which line it catches. Write one that bug 4 (the last ragged tile "
        "skipped) fails and the others survive.")
    assert breakit.largest_score(case) == pytest.approx(1022.8, abs=0.05)
    report = __import__("exercises.runner", fromlist=["check"]).check("break-it", "break", source)
    failed = [res["name"] for res in report["results"] if not res["ok"]]
    assert failed == [f"test_bug_{b}" for b in BUG_IDS]  # the suite itself would catch every bug
    assert all(res["got"] == "every bug fails on it" for res in report["results"] if not res["ok"])
    for b in BUG_IDS:  # the reference inputs are each aimed: every other bug survives them
        r = breakit.judge_input(b, BY_BUG[b]["exposes"])
        assert not r["broad"] and r["also_breaks"] == []


# ---- an input for a bug spares the bugs that some input can spare ---------------

def _family():
    """A structured family of inputs, text as a learner writes it: random_qkv over N_k
    (one tile, full tiles, ragged, fewer keys than a tile), scale (scores far below the
    bound's reach to past exp's range), masks (none, one key, the whole first tile) and
    seeds; and literals whose values make one running quantity vanish: a second key
    tile that raises the max by s and cancels the first tile's values (O = 0, so a wrong
    l divides nothing), and a first tile of values 0 (acc is 0 until the max moves)."""
    for n_keys in (1, 2, 3, 4, 5, 6, 8, 9, 12):
        for scale in (0.01, 0.3, 1.0, 3.0, 300.0, 1000.0):
            for masked in ((), (0,), (0, 1, 2, 3)):
                for seed in (1, 2):
                    if masked and max(masked) >= n_keys:
                        continue
                    yield (f"random_qkv(n=4, d=4, seed={seed}, scale={scale}, n_keys={n_keys}"
                           + (f", masked_keys={list(masked)}" if masked else "") + ")")
    for s in (0.5, 1.0, 2.0):
        yield str({"Q": [[1.0]], "K": [[0.0]] * 4 + [[s]] * 4, "V": [[1.0]] * 4 + [[-math.exp(-s)]] * 4})
        yield str({"Q": [[1.0]], "K": [[0.0]] * 4 + [[s]] * 4, "V": [[0.0]] * 4 + [[1.0]] * 4})


def _separations(folder=breakit.FOLDER):
    """{(k, j): an input of the family that breaks bug k, spares bug j and passes the correct kernel}."""
    kernels = {b["id"]: breakit.load_kernel(b["id"], folder) for b in breakit.bugs(folder)}
    correct = breakit.load_kernel(0, folder)
    found = {}
    for text in _family():
        case = breakit.parse_input(text)
        want = breakit.reference_for(case)
        if not breakit.run_case(correct, case, want)["ok"]:
            continue
        broken = {b for b, fn in kernels.items() if not breakit.run_case(fn, case, want)["ok"]}
        for k in broken:
            for j in set(kernels) - broken:
                found.setdefault((k, j), text)
    return found


def test_for_every_pair_of_bugs_some_input_breaks_one_and_spares_the_other_as_exercise_toml_says():
    found = _separations()
    for k in BUG_IDS:
        shared = breakit.shared_bugs(k)
        for j in BUG_IDS:
            if j != k:
                # A pair is listed in exercise.toml's [[shared]] exactly when no input of the family separates it.
                assert ((k, j) in found) == (j not in shared), (k, j, found.get((k, j)))
    assert len(found) == 20  # every ordered pair: no [[shared]] entry
    # The two rescale bugs part only on values chosen so that one running quantity vanishes.
    assert found[(1, 3)].startswith('{"Q": [[1.0]]') or found[(1, 3)].startswith("{'Q': [[1.0]]")
    r = breakit.judge_input(1, found[(1, 3)])
    assert 3 not in r["also_breaks"] and not r["buggy"]["ok"]


def test_the_kitchen_sink_input_is_refused_for_each_bug_naming_the_other_bugs_it_breaks():
    path = FOLDER / "break" / "wrong" / "kitchen_sink_for_four_bugs.py"
    texts = _content(path)["inputs"]
    for bug in (1, 2, 3, 4):
        r = breakit.judge_input(bug, texts[bug])
        others = [b for b in (1, 2, 3, 4) if b != bug]
        assert not r["ok"] and r["broad"] and not r["buggy"]["ok"] and r["correct"]["ok"]
        assert r["also_breaks"] == others
        named = [f"bug {b} ({breakit.bug_info(b)['title']})" for b in others]
        assert r["message"] == (
            f"N = 10, N_k = 10, d = 4: bug {bug} fails on this input, but so do {named[0]}, {named[1]} and "
            f"{named[2]}, and other inputs can break bug {bug} and spare each of them: this one shows that the "
            f"kernels differ, not what bug {bug} ({breakit.bug_info(bug)['title']}) needs. Take out what the other "
            f"bugs need and keep what bug {bug} needs.")
    report = __import__("exercises.runner", fromlist=["check"]).check("break-it", "break", path.read_text())
    failed = {res["name"]: res for res in report["results"] if not res["ok"]}
    assert sorted(failed) == ["test_bug_1", "test_bug_2", "test_bug_3", "test_bug_4"]
    assert failed["test_bug_1"]["got"] == "bugs 2, 3, 4 fail on it too"


def test_a_pair_no_input_separates_is_accepted_and_the_feedback_says_why(tmp_path):
    # A folder where bug 3 is bug 1 again: no input breaks one and spares the other, the
    # search finds none, and exercise.toml lists the pair; the judge then accepts an
    # input that breaks both, saying why.
    import shutil

    folder = tmp_path / "content" / "exercises" / "break-it"
    shutil.copytree(FOLDER, folder)
    (folder / "bugs" / "3-wrong-factor-for-l.py").write_text((FOLDER / "bugs" / "1-no-rescale.py").read_text())
    toml = (folder / "exercise.toml").read_text()
    why = "the two kernels are the same code"
    toml += (f'\n[[shared]]\nbug = 1\nalso = 3\nwhy = "{why}"\n'
             f'\n[[shared]]\nbug = 3\nalso = 1\nwhy = "{why}"\n')
    (folder / "exercise.toml").write_text(toml)
    found = _separations(str(folder))
    assert (1, 3) not in found and (3, 1) not in found and (1, 2) in found
    assert breakit.shared_bugs(1, str(folder)) == {3: why}
    r = breakit.judge_input(1, BY_BUG[1]["exposes"], str(folder))
    assert r["ok"] and r["also_breaks"] == [3]
    assert r["message"].endswith(f"It breaks bug 3 (the sum l rescaled by the wrong factor) too, as every input "
                                 f"that breaks bug 1 does: {why}")
    # A bug that an input can spare must still be spared.
    r = breakit.judge_input(1, "random_qkv(n=10, d=4, seed=1, scale=1000.0)", str(folder))
    assert not r["ok"] and r["also_breaks"] == [2, 3, 4]
    assert "but so do bug 2 (the max not subtracted) and bug 4 (the last ragged tile skipped)," in r["message"]
