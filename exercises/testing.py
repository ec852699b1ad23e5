"""What a step's tests.py uses to say what went wrong, in a learner's terms.

A test is a function ``test_*(mod)`` taking the learner's module, titled with
``@titled(N_("..."))``. It tries inputs smallest first inside
``with given(_("scores {scores}, block {block}").format(...)):`` and raises
:class:`Failure` for the first one that is wrong, so the report shows the
smallest failing input, the expected value and the value got. An exception
raised by the learner's code inside ``given`` is reported with the same input
and a traceback trimmed to the learner's own lines.

Languages: every message is written in the page's language at run time
(``emulator.i18n``: ``_()`` around an English msgid with ``{name}``
placeholders, filled with ``.format``). Numbers follow one rule, so that a
learner can paste what they read back into Python:

- a number on its own in a sentence is written the language's way
  (:func:`fmt`: ``1.5530`` in English, ``1,5530`` in pt-BR);
- a Python value, such as a list or tuple (``[1, 2, 3, 0]``, ``(3, 1.553)``)
  in an input's description or a value got, is written as Python writes it,
  with a decimal point in every language.

Titles are marked with ``N_`` (Babel extracts them) and translated by the
runner when it reports. The offline CLI (``python -m exercises``) runs in
English, as ``emulator.i18n`` does unless the page switches it.
"""
from __future__ import annotations

import builtins
import math

from emulator.i18n import _, group, short

from . import guard

__builtins__ = dict(builtins.__dict__)  # the module's own, see given


def N_(message: str) -> str:
    """Mark ``message`` for extraction without translating it now (gettext's
    convention): the runner translates a test's title when it reports."""
    return message


def titled(title: str, **values):
    """Decorator: the title a test's result shows, an English msgid marked with
    N_, with ``{name}`` placeholders filled from ``values`` when it is shown
    (integers with the language's separators, floats as ``:g`` writes them
    with its decimal mark, strings as they are)."""
    def mark(fn):
        fn.title = title
        fn.title_values = values
        return fn
    return mark


def _title_value(v) -> str:
    if isinstance(v, bool) or isinstance(v, str):
        return str(v)
    if isinstance(v, int):
        return group(v)
    return short(v)


def title_of(fn) -> str:
    """``fn``'s title in the active language: its ``@titled`` message, else its
    docstring's first line, else its name."""
    title = getattr(fn, "title", "")
    if title:
        values = getattr(fn, "title_values", {})
        return _(title).format(**{k: _title_value(v) for k, v in values.items()})
    doc = (fn.__doc__ or "").strip()
    return doc.splitlines()[0] if doc else fn.__name__[5:].replace("_", " ")


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
        try:
            text = str(error)
        except Exception:  # noqa: BLE001 - a learner's exception whose __str__ raises
            text = "<str() failed>"
        super().__init__(f"{input}: {type(error).__name__}: {text}")
        self.input = input
        self.error = error


class TimeLimit(Exception):
    """The learner's code ran past the time limit (CPython path only; the page
    stops its worker instead)."""


_current: list[str] = []


class given:
    """``with given(description):`` marks the input being tried; an exception the
    learner's code raises inside (of any kind: SystemExit and KeyboardInterrupt
    too) is raised again as a LearnerError tagged with it.

    A class, not contextlib.contextmanager: its exit runs even when the
    learner's code has deleted builtins (contextlib's needs next() and
    StopIteration); this module's functions use a copy of the builtins."""

    def __init__(self, description: str):
        self.description = description

    def __enter__(self) -> None:
        _current.append(self.description)

    def __exit__(self, typ, exc, tb) -> bool:
        _current.pop()
        if exc is None or isinstance(exc, (Failure, LearnerError, TimeLimit)):
            return False
        module = guard.refusal(exc)
        if module is not None:  # an import of the project's modules: say so, as a failure of this input
            raise Failure(f"{self.description}: {exc}", input=self.description, expected=_("code of your own"),
                          got=module) from exc
        raise LearnerError(self.description, exc) from exc


def describe_case(label: str, br: int, bc: int, causal: bool, key_mask=None, fp16: bool = False) -> str:
    """One attention case as a failure names it, in the active language:
    "N = 5, d = 3, seed 1, block_rows 2, block_cols 3, causal, keys masked: 4, fp16".

    label: the sizes (already worded); br, bc: the tile sizes the learner's
    code was given; key_mask: one bool per key (False = masked), or None.
    """
    if causal:
        text = _("{case}, block_rows {br}, block_cols {bc}, causal")
    else:
        text = _("{case}, block_rows {br}, block_cols {bc}, full")
    text = text.format(case=label, br=br, bc=bc)
    if key_mask is not None:
        masked = ", ".join(str(j) for j, keep in enumerate(key_mask) if not keep) or _("none")
        text = _("{case}, keys masked: {keys}").format(case=text, keys=masked)
    return text + ", fp16" if fp16 else text


def current() -> str:
    """Description of the input being tried ('' outside ``given``)."""
    return _current[-1] if _current else ""


def need(mod, name: str):
    """The learner's ``name`` (a function or value), or a Failure saying it is missing."""
    if not hasattr(mod, name):
        raise Failure(_("Your code does not define `{name}`. Keep the name and signature from the prompt.")
                      .format(name=name))
    return getattr(mod, name)


LONGEST_INT = 50  # digits: a longer int is described by its length (Python refuses str() past 4,300)


def _long_int(x: int) -> str | None:
    """"an integer of 401 digits" for an int longer than LONGEST_INT digits, else None."""
    if abs(x) < 10 ** LONGEST_INT:
        return None
    digits = math.floor(math.log10(abs(x))) + 1
    return _("an integer of {digits} digits").format(digits=group(digits))


def _python(x) -> str:
    """A value inside a Python literal: as Python reads it back (decimal point)."""
    if isinstance(x, bool) or x is None:
        return repr(x)
    if isinstance(x, int):
        return _long_int(x) or repr(x)
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
        items = [_python(v) for v in x[:8]]
        if len(x) > 8:
            items.append(_("… ({count} in all)").format(count=len(x)))
        body = ", ".join(items)
        return f"({body})" if isinstance(x, tuple) else f"[{body}]"
    return repr(x)


def fmt(x) -> str:
    """A value as a learner reads it: floats to 4 decimals (or 4 s.f. in
    scientific notation when very large or small), ints with separators,
    lists and tuples element by element (long lists cut after 8).

    A number on its own takes the active language's marks (1.5530 / 1,5530;
    4,096 / 4.096); the numbers inside a list or tuple are written as Python
    writes them (see the module's docstring)."""
    if isinstance(x, bool) or x is None:
        return repr(x)
    if isinstance(x, int):
        return _long_int(x) or group(x)
    if isinstance(x, float):
        return marked(_python(x))
    if isinstance(x, (list, tuple)):
        return _python(x)
    return repr(x)


def _decimal_mark() -> str:
    """The active language's decimal mark ("." or ",")."""
    return short(0.5)[1]


def marked(text: str) -> str:
    """A number Python wrote (``f"{x:.2e}"``, ``f"{x:.6g}"``) with the active
    language's decimal mark, for prose: '1.5e-07' -> '1,5e-07' in pt-BR."""
    return text.replace(".", _decimal_mark())


def close(got, expected: float, rel: float = 1e-12, abs_: float = 0.0) -> bool:
    """True when ``got`` is a real number equal to ``expected`` within the
    tolerance; infinities must match exactly, NaN never matches."""
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return False
    try:
        got = float(got)
    except OverflowError:  # an int past float's range (10**400): no finite value is close to it
        return False
    if math.isnan(got) or math.isnan(expected):
        return False
    if math.isinf(expected) or math.isinf(got):
        return got == expected
    return math.isclose(got, expected, rel_tol=rel, abs_tol=abs_)


def expect_close(name: str, got, expected: float, *, rel: float = 1e-12, abs_: float = 0.0) -> None:
    """Raise Failure "expected NAME = X, got Y" unless close()."""
    if not close(got, expected, rel, abs_):
        raise Failure(_("{input}: expected {name} = {expected}, got {got}").format(
                          input=current(), name=name, expected=fmt(expected), got=fmt(got)),
                      input=current(), expected=f"{name} = {fmt(expected)}", got=fmt(got))


def expect_pair(got, what: str = "(m, l)") -> tuple:
    """``got`` as a 2-tuple, or a Failure saying what shape was expected."""
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise Failure(_("{input}: expected a pair {what}, got {got}").format(
                          input=current(), what=what, got=fmt(got)),
                      input=current(), expected=_("a pair {what}").format(what=what), got=fmt(got))
    return tuple(got)
