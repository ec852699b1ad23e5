"""Predict: for each bug, the weak tests the learner thinks fail on it,
against the truth found by running the weak suite on the bug
(exercises.breakit.truth)."""
from exercises import breakit
from exercises.testing import Failure, fmt, given, need

NAMES = [t["name"] for t in breakit.test_names()]


def _judge(mod, bug):
    catches = need(mod, "catches")
    title = breakit.bug_info(bug)["title"]
    desc = f"bug {bug} ({title})"
    with given(desc):
        if not isinstance(catches, dict):
            raise Failure(f"{desc}: `catches` must be a dict from bug number to a list of test names",
                          input=desc, expected="a dict", got=fmt(catches))
        chosen = catches.get(bug, catches.get(str(bug)))
        if chosen is None:
            raise Failure(f"{desc}: no prediction yet; give a list of test names, [] for none",
                          input=desc, expected="a list of test names", got="None")
        if not isinstance(chosen, (list, tuple, set)) or any(not isinstance(n, str) for n in chosen):
            raise Failure(f"{desc}: give a list of test names, got {fmt(chosen)}",
                          input=desc, expected="a list of test names", got=fmt(chosen))
        unknown = sorted(set(chosen) - set(NAMES))
        if unknown:
            raise Failure(f"{desc}: there is no weak test named {unknown[0]!r}",
                          input=desc, expected=", ".join(NAMES), got=unknown[0])
        [result] = [r for r in breakit.predict({bug: list(chosen)})["results"] if r["bug"] == bug]
        if not result["ok"]:
            actual = ", ".join(result["actual"]) or "none"
            raise Failure(f"{desc}: {result['message']}", input=desc,
                          expected=f"tests that fail: {actual}",
                          got=f"you predicted: {', '.join(result['predicted']) or 'none'}")


def test_bug_1(mod):
    """bug 1, the rescale left out: which weak tests fail?"""
    _judge(mod, 1)


def test_bug_2(mod):
    """bug 2, the max not subtracted: which weak tests fail?"""
    _judge(mod, 2)


def test_bug_3(mod):
    """bug 3, the sum l rescaled by the wrong factor: which weak tests fail?"""
    _judge(mod, 3)


def test_bug_4(mod):
    """bug 4, the last ragged tile skipped: which weak tests fail?"""
    _judge(mod, 4)


def test_bug_5(mod):
    """bug 5, NaN from an all-masked tile: which weak tests fail?"""
    _judge(mod, 5)
