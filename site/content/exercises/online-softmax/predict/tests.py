"""Predict: the learner's two guesses, judged against the emulator's count.

The learner's module defines plain_bytes and fused_bytes (the page builds it
from two form fields, so they may arrive as text such as "21,000,000").
"""
from emulator import traffic
from emulator.tiling import InputError, parse_int
from exercises import content
from exercises.testing import Failure, fmt, given, need

STEP = content.step("online-softmax", "predict")
N, D, M, TOL = STEP["n"], STEP["d"], STEP["workgroup_bytes"], STEP["tolerance"]
SETTING = f"N = {N:,}, d = {D}, M = {M:,} B, full attention"


def _judge(mod, name, kernel):
    raw = need(mod, name)
    with given(SETTING):
        try:
            guess = parse_int(name, raw, f"Your {kernel} figure")
        except InputError as exc:
            raise Failure(exc.message, input=SETTING, expected="a whole number of bytes", got=fmt(raw)) from None
        actual = traffic.count(kernel, N, D, False, M).total_bytes
        if guess <= 0 or abs(guess - actual) > TOL * actual:
            how = "too high" if guess > actual else "too low"
            raise Failure(f"{SETTING}: your {kernel} figure is {how} (more than {TOL:.0%} from the count)",
                          input=SETTING, expected=f"{kernel} within {TOL:.0%} of the emulator's count",
                          got=f"{guess:,} B")


def test_plain_bytes(mod):
    """plain kernel's bytes, within the tolerance"""
    _judge(mod, "plain_bytes", "plain")


def test_fused_bytes(mod):
    """fused kernel's bytes, within the tolerance"""
    _judge(mod, "fused_bytes", "fused")
