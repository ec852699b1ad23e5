"""Break it: one input per bug, judged by running the buggy and the correct
kernel against the float64 reference (exercises.breakit.judge_input); then
the five inputs added to the weak suite (exercises.breakit.extended_suite).

The learner's `inputs` holds texts; the judge parses each with
ast.literal_eval (plus the one whitelisted call random_qkv) and never
evaluates it."""
from emulator.i18n import _, ngettext
from exercises import breakit
from exercises.testing import N_, Failure, fmt, given, marked, need, titled


def _text(mod, bug):
    inputs = need(mod, "inputs")
    if not isinstance(inputs, dict):
        raise Failure(_("`inputs` must be a dict from bug number to the input's text"),
                      input="inputs", expected=_("a dict"), got=fmt(inputs))
    return inputs.get(bug, inputs.get(str(bug), ""))


def _judge(mod, bug):
    desc = _("your input for bug {bug} ({title})").format(bug=bug, title=breakit.bug_info(bug)["title"])
    with given(desc):
        text = _text(mod, bug)
        if not isinstance(text, str):
            raise Failure(_("{input}: write the input as text, in quotes").format(input=desc), input=desc,
                          expected=_("a string"), got=fmt(text))
        r = breakit.judge_input(bug, text)
        if not r["ok"]:
            if r["buggy"] is None:
                got = _("could not run it")
            elif r["broad"] and len(r["also_breaks"]) == len(breakit.bugs()) - 1:
                got = _("every bug fails on it")
            elif r["broad"]:
                got = _("bugs {bugs} fail on it too").format(bugs=", ".join(map(str, r["also_breaks"])))
            elif r["buggy"]["ok"]:
                got = _("largest error of the buggy kernel {error}").format(
                    error=marked(f"{r['buggy']['max_error']:.2e}"))
            else:
                got = _("the correct kernel left the bound too")
            raise Failure(_("{input}: {message}").format(input=desc, message=r["message"]), input=desc,
                          expected=_("the buggy kernel outside the bound; the correct one and the other bugs' "
                                     "within it"), got=got)


@titled(N_("an input that exposes bug 1, the rescale left out"))
def test_bug_1(mod):
    _judge(mod, 1)


@titled(N_("an input that exposes bug 2, the max not subtracted"))
def test_bug_2(mod):
    _judge(mod, 2)


@titled(N_("an input that exposes bug 3, the sum l rescaled by the wrong factor"))
def test_bug_3(mod):
    _judge(mod, 3)


@titled(N_("an input that exposes bug 4, the last ragged tile skipped"))
def test_bug_4(mod):
    _judge(mod, 4)


@titled(N_("an input that exposes bug 5, NaN from an all-masked tile"))
def test_bug_5(mod):
    _judge(mod, 5)


@titled(N_("the weak suite plus your five inputs: every bug caught, the correct kernel passing"))
def test_the_weak_suite_with_your_inputs_catches_every_bug(mod):
    desc = _("the weak suite with your five inputs added")
    with given(desc):
        texts = {bug: _text(mod, bug) for bug in range(1, 6)}
        r = breakit.extended_suite({k: v for k, v in texts.items() if isinstance(v, str) and v.strip()})
        if not r["ok"]:
            missed = [_("bug {n}").format(n=row["kernel"]) for row in r["kernels"]
                      if row["kernel"] != "correct" and not row["caught"]]
            correct = next(row for row in r["kernels"] if row["kernel"] == "correct")
            problems = []
            if missed:
                problems.append(_("it still passes {bugs}").format(bugs=", ".join(missed)))
            if correct["failed"]:
                problems.append(_("it fails the correct kernel ({tests})").format(tests=", ".join(correct["failed"])))
            if r["errors"]:
                problems.append(ngettext("{count} of your inputs could not be read",
                                         "{count} of your inputs could not be read",
                                         len(r["errors"])).format(count=len(r["errors"])))
            what = "; ".join(problems) or _("it is missing an input")
            raise Failure(_("{input}: {problem}").format(input=desc, problem=what), input=desc,
                          expected=_("all five bugs caught, the correct kernel passing"),
                          got=", ".join(missed) or _("an unreadable input"))
