"""Predict: for each bug, the weak tests the learner thinks fail on it,
against the truth found by running the weak suite on the bug
(exercises.breakit.truth).

No answer is given away before the learner commits: while a bug has no
prediction (None), every test fails saying which predictions are saved and
none names the weak tests that fail (exercises.breakit.predict reveals them
once all five bugs are predicted)."""
from emulator.i18n import _
from exercises import breakit
from exercises.testing import N_, Failure, fmt, given, need, titled

NAMES = [t["name"] for t in breakit.test_names()]


def _chosen(catches, bug):
    """The learner's list for ``bug`` (None when not predicted yet), or a Failure."""
    chosen = catches.get(bug, catches.get(str(bug)))
    desc = _("bug {bug} ({title})").format(bug=bug, title=breakit.bug_info(bug)["title"])
    if chosen is None:
        return None
    if not isinstance(chosen, (list, tuple, set)) or any(not isinstance(n, str) for n in chosen):
        raise Failure(_("{input}: give a list of test names, got {got}").format(input=desc, got=fmt(chosen)),
                      input=desc, expected=_("a list of test names"), got=fmt(chosen))
    unknown = sorted(set(chosen) - set(NAMES))
    if unknown:
        raise Failure(_("{input}: there is no weak test named {name}").format(input=desc, name=repr(unknown[0])),
                      input=desc, expected=", ".join(NAMES), got=unknown[0])
    return list(chosen)


def _judge(mod, bug):
    catches = need(mod, "catches")
    title = breakit.bug_info(bug)["title"]
    desc = _("bug {bug} ({title})").format(bug=bug, title=title)
    with given(desc):
        if not isinstance(catches, dict):
            raise Failure(_("{input}: `catches` must be a dict from bug number to a list of test names")
                          .format(input=desc), input=desc, expected=_("a dict"), got=fmt(catches))
        everything = {b: _chosen(catches, b) for b in range(1, 6)}
        report = breakit.predict(everything)
        [result] = [r for r in report["results"] if r["bug"] == bug]
        if not report["revealed"]:
            if result["predicted"] is None:
                raise Failure(_("{input}: no prediction yet; give a list of test names, [] for none").format(
                    input=desc), input=desc, expected=_("a list of test names"), got="None")
            raise Failure(_("{input}: {message}").format(input=desc, message=result["message"]), input=desc,
                          got=_("you predicted: {tests}").format(tests=", ".join(result["predicted"]) or _("none")))
        if not result["ok"]:
            raise Failure(_("{input}: {message}").format(input=desc, message=result["message"]), input=desc,
                          expected=_("tests that fail: {tests}").format(tests=", ".join(result["actual"]) or _("none")),
                          got=_("you predicted: {tests}").format(tests=", ".join(result["predicted"]) or _("none")))


@titled(N_("bug 1, the rescale left out: which weak tests fail?"))
def test_bug_1(mod):
    _judge(mod, 1)


@titled(N_("bug 2, the max not subtracted: which weak tests fail?"))
def test_bug_2(mod):
    _judge(mod, 2)


@titled(N_("bug 3, the sum l rescaled by the wrong factor: which weak tests fail?"))
def test_bug_3(mod):
    _judge(mod, 3)


@titled(N_("bug 4, the last ragged tile skipped: which weak tests fail?"))
def test_bug_4(mod):
    _judge(mod, 4)


@titled(N_("bug 5, NaN from an all-masked tile: which weak tests fail?"))
def test_bug_5(mod):
    _judge(mod, 5)
