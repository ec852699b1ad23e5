"""Break it: one input per bug, judged by running the buggy and the correct
kernel against the float64 reference (exercises.breakit.judge_input); then
the five inputs added to the weak suite (exercises.breakit.extended_suite).

The learner's `inputs` holds texts; the judge parses each with
ast.literal_eval (plus the one whitelisted call random_qkv) and never
evaluates it."""
from exercises import breakit
from exercises.testing import Failure, fmt, given, need


def _text(mod, bug):
    inputs = need(mod, "inputs")
    if not isinstance(inputs, dict):
        raise Failure("`inputs` must be a dict from bug number to the input's text",
                      input="inputs", expected="a dict", got=fmt(inputs))
    return inputs.get(bug, inputs.get(str(bug), ""))


def _judge(mod, bug):
    desc = f"your input for bug {bug} ({breakit.bug_info(bug)['title']})"
    with given(desc):
        text = _text(mod, bug)
        if not isinstance(text, str):
            raise Failure(f"{desc}: write the input as text, in quotes", input=desc,
                          expected="a string", got=fmt(text))
        r = breakit.judge_input(bug, text)
        if not r["ok"]:
            got = "could not run it" if r["buggy"] is None else (
                f"largest error of the buggy kernel {r['buggy']['max_error']:.2e}" if r["buggy"]["ok"]
                else "the correct kernel left the bound too")
            raise Failure(f"{desc}: {r['message']}", input=desc,
                          expected="the buggy kernel outside the bound, the correct one within it", got=got)


def test_bug_1(mod):
    """an input that exposes bug 1, the rescale left out"""
    _judge(mod, 1)


def test_bug_2(mod):
    """an input that exposes bug 2, the max not subtracted"""
    _judge(mod, 2)


def test_bug_3(mod):
    """an input that exposes bug 3, the sum l rescaled by the wrong factor"""
    _judge(mod, 3)


def test_bug_4(mod):
    """an input that exposes bug 4, the last ragged tile skipped"""
    _judge(mod, 4)


def test_bug_5(mod):
    """an input that exposes bug 5, NaN from an all-masked tile"""
    _judge(mod, 5)


def test_the_weak_suite_with_your_inputs_catches_every_bug(mod):
    """the weak suite plus your five inputs: every bug caught, the correct kernel passing"""
    desc = "the weak suite with your five inputs added"
    with given(desc):
        texts = {bug: _text(mod, bug) for bug in range(1, 6)}
        r = breakit.extended_suite({k: v for k, v in texts.items() if isinstance(v, str) and v.strip()})
        if not r["ok"]:
            missed = [f"bug {row['kernel']}" for row in r["kernels"]
                      if row["kernel"] != "correct" and not row["caught"]]
            correct = next(row for row in r["kernels"] if row["kernel"] == "correct")
            what = (f"still passes {', '.join(missed)}" if missed else "") + (
                f"{'; it ' if missed else ''}fails the correct kernel ({', '.join(correct['failed'])})"
                if correct["failed"] else "")
            if r["errors"]:
                what += f"{'; ' if what else ''}{len(r['errors'])} of your inputs could not be read"
            raise Failure(f"{desc}: it {what or 'is missing an input'}", input=desc,
                          expected="all five bugs caught, the correct kernel passing",
                          got=", ".join(missed) or "an unreadable input")
