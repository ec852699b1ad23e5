"""What a step's tests.py uses to say what went wrong, in a learner's terms.

A test is a function ``test_*(mod)`` taking the learner's module. It tries
inputs smallest first inside ``with given("scores [1, 2, 3, 0], block 2"):``
and raises :class:`Failure` for the first one that is wrong, so the report
shows the smallest failing input, the expected value and the value got. An
exception raised by the learner's code inside ``given`` is reported with the
same input and a traceback trimmed to the learner's own lines.
"""
from __future__ import annotations

import math
from contextlib import contextmanager


class Failure(AssertionError):
    """A wrong answer: ``message`` plus the input, expected and got (strings)."""

    def __init__(self, message: str, *, input: str = "", expected: str = "", got: str = ""):
        super().__init__(message)
        self.message = message
        self.input = input
        self.expected = expected
        self.got = got


class LearnerError(Exception):
    """The learner's code raised ``error`` while given ``input`` (a description)."""

    def __init__(self, input: str, error: BaseException):
        super().__init__(f"{input}: {type(error).__name__}: {error}")
        self.input = input
        self.error = error


class TimeLimit(Exception):
    """The learner's code ran past the time limit (CPython path only; the page
    stops its worker instead)."""


_current: list[str] = []


@contextmanager
def given(description: str):
    """Mark the input being tried; a learner exception inside is tagged with it."""
    _current.append(description)
    try:
        yield
    except (Failure, LearnerError, TimeLimit):
        raise
    except Exception as exc:  # the learner's code failed on this input
        raise LearnerError(description, exc) from exc
    finally:
        _current.pop()


def current() -> str:
    """Description of the input being tried ('' outside ``given``)."""
    return _current[-1] if _current else ""


def need(mod, name: str):
    """The learner's ``name`` (a function or value), or a Failure saying it is missing."""
    if not hasattr(mod, name):
        raise Failure(f"Your code does not define `{name}`. Keep the name and signature from the prompt.")
    return getattr(mod, name)


def fmt(x) -> str:
    """A value as a learner reads it: floats to 4 decimals (or 4 s.f. in
    scientific notation when very large or small), ints with separators,
    lists and tuples element by element (long lists cut after 8)."""
    if isinstance(x, bool) or x is None:
        return repr(x)
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        if x == 0:
            return "0.0"
        if 1e-3 <= abs(x) < 1e6:
            return f"{x:.4f}"
        return f"{x:.4e}"
    if isinstance(x, (list, tuple)):
        items = [fmt(v) for v in x[:8]]
        if len(x) > 8:
            items.append(f"… ({len(x)} in all)")
        body = ", ".join(items)
        return f"({body})" if isinstance(x, tuple) else f"[{body}]"
    return repr(x)


def close(got, expected: float, rel: float = 1e-12, abs_: float = 0.0) -> bool:
    """True when ``got`` is a real number equal to ``expected`` within the
    tolerance; infinities must match exactly, NaN never matches."""
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return False
    got = float(got)
    if math.isnan(got) or math.isnan(expected):
        return False
    if math.isinf(expected) or math.isinf(got):
        return got == expected
    return math.isclose(got, expected, rel_tol=rel, abs_tol=abs_)


def expect_close(name: str, got, expected: float, *, rel: float = 1e-12, abs_: float = 0.0) -> None:
    """Raise Failure "expected NAME = X, got Y" unless close()."""
    if not close(got, expected, rel, abs_):
        raise Failure(f"{current()}: expected {name} = {fmt(expected)}, got {fmt(got)}",
                      input=current(), expected=f"{name} = {fmt(expected)}", got=fmt(got))


def expect_pair(got, what: str = "(m, l)") -> tuple:
    """``got`` as a 2-tuple, or a Failure saying what shape was expected."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise Failure(f"{current()}: expected a pair {what}, got {fmt(got)}",
                      input=current(), expected=f"a pair {what}", got=fmt(got))
    return tuple(got)
