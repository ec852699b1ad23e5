"""Predict: the learner's two guesses, judged against the emulator's count.

The learner's module defines plain_bytes and fused_bytes (the page builds it
from two form fields, so they may arrive as text such as "21,000,000").
"""
from emulator import traffic
from emulator.i18n import _, group
from emulator.tiling import InputError, parse_int
from exercises import content
from exercises.testing import N_, Failure, fmt, given, need, titled

STEP = content.step("online-softmax", "predict")
# The kernels as the page's inputs name them ("simples" and "fundido" in pt-BR).
KERNEL_WORDS = {"plain": N_("plain"), "fused": N_("fused")}
N, D, M, TOL = STEP["n"], STEP["d"], STEP["workgroup_bytes"], STEP["tolerance"]


def _judge(mod, name, kernel):
    raw = need(mod, name)
    setting = _("N = {n}, d = {d}, M = {m} B, full attention").format(n=group(N), d=D, m=group(M))
    with given(setting):
        try:
            guess = parse_int(name, raw, _("Your plain figure") if kernel == "plain" else _("Your fused figure"))
        except InputError as exc:
            raise Failure(exc.message, input=setting, expected=_("a whole number of bytes"), got=fmt(raw)) from None
        actual = traffic.count(kernel, N, D, False, M).total_bytes
        if guess <= 0 or abs(guess - actual) > TOL * actual:
            share = group(round(TOL * 100))
            if guess > actual:
                message = _("{input}: your {kernel} figure is too high (more than {share}% from the count)")
            else:
                message = _("{input}: your {kernel} figure is too low (more than {share}% from the count)")
            word = _(KERNEL_WORDS[kernel])
            raise Failure(message.format(input=setting, kernel=word, share=share),
                          input=setting, expected=_("{kernel} within {share}% of the emulator's count")
                          .format(kernel=word, share=share),
                          got=f"{group(guess)} B")


@titled(N_("plain kernel's bytes, within the tolerance"))
def test_plain_bytes(mod):
    _judge(mod, "plain_bytes", "plain")


@titled(N_("fused kernel's bytes, within the tolerance"))
def test_fused_bytes(mod):
    _judge(mod, "fused_bytes", "fused")
