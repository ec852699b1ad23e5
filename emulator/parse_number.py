"""Numbers as people type them: the one parser behind every numeric field.

``parse_number`` reads "4096", "4,096", "4 096", "16.5", "16,5", "16." and
"−5" (a typographic minus), and refuses anything it would have to guess at:
"1,650" in a field that takes decimals could be 1.65 or 1,650, so it answers
with a question instead of a silent reading.

``site/static/js/parse-number.js`` is the same parser in JavaScript, so the
page can answer a plainly bad value at once, before Python has loaded; both
run the case table ``tests/number_cases.json`` and must give the same value,
reason and message for every row.

Rules (both languages):

* control and format marks (Unicode categories Cc and Cf: a right-to-left
  override, a zero-width space, a byte-order mark) are dropped first, from the
  value as from the text a message quotes, so "\u202e4096" is 4096;
* surrounding white space is ignored; a sign ``+``, ``-`` or ``−`` may lead;
* digits are ASCII 0–9 only (another script's digits get reason "digits");
* ``_`` may stand between two digits and is dropped (Python's own rule);
* ``.``, ``,`` and spaces group thousands when every group after the first
  has exactly three digits; the last ``.`` or ``,`` that is not a group
  separator is the decimal mark, and a trailing ``.`` is allowed ("16.");
* one ``.`` or ``,`` followed by exactly three digits ("1,650", "1.650") is
  read as a group separator in a whole-number field (the only reading that is
  whole) and is "ambiguous" in a field that takes decimals;
* at most :data:`MAX_DIGITS` (15) digits before the decimal mark, leading
  zeros aside (reason "too-long"): every such whole number is exact in
  JavaScript's float64 as well as in Python, so both read the same value, and
  no text reaches CPython's limit on converting long digit strings to int
  (4,300 digits, which would raise ValueError instead of answering).

The page's language settles what the last rule leaves open, as its readers
write numbers (``emulator.i18n.decimal_mark``; parse-number.js reads i18n.js's
``decimalMark``). Where the decimal mark is ``.`` (English) the rules above
hold as they are. Where it is ``,`` (pt-BR: 285.736.960 and 16,5):

* a lone ``.`` before three digits groups thousands in every field: "4.096"
  is 4096 and "12.000" is 12000 (not "ambiguous"), and "1.650" in a decimal
  field is 1650, as a Brazilian reads it;
* a lone ``,`` before three digits is the decimal mark in a decimal field
  ("1,650" is 1.65); in a whole-number field it still groups ("4,096" is 4096,
  the only whole reading), except before "000", where "12,000" stays
  "ambiguous" (twelve, or twelve thousand written the English way);
* "16,5" is 16.5 and "16.5" is 16.5 in both languages (a mark before one,
  two or four digits is never a group separator).

A field that takes a fraction (``fraction=True``, decimal fields only: the
film's answer box, where a learner may type the division they did) also reads
one ``/`` or ``÷`` between two numbers, each read by the rules above:
"272.5/16.5" is 16.515…; "1/0" is refused (reason "zero-division"), and a side
that cannot be read refuses the whole as that side would be refused.

Messages are written in the active language (``emulator.i18n``), and the
value in them with its marks.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from . import i18n as _i18n
from .i18n import _

_SPACES = " \u00a0\u2009\u202f"
MAX_DIGITS = 15  # digits before the decimal mark: below 2**53, so exact in JavaScript too
_BODY = re.compile(r"[0-9.,_" + _SPACES + r"]+", re.ASCII)


@dataclass(frozen=True)
class Parsed:
    """The outcome of :func:`parse_number`.

    ok: whether ``value`` holds the number; value: int (whole-number fields)
    or float; reason: "" or one of "empty", "digits", "not-a-number",
    "ambiguous", "not-integer", "too-long", "zero-division"; message: a
    sentence for the learner.
    """

    ok: bool
    value: int | float | None = None
    reason: str = ""
    message: str = ""


def _visible(text: str) -> str:
    """``text`` without control and format marks (categories Cc and Cf: bidi overrides, zero-width spaces)."""
    return "".join(ch for ch in text if unicodedata.category(ch) not in ("Cc", "Cf"))


def _shown(text: str) -> str:
    """The learner's text for a message: control and format marks removed, at most 20 characters."""
    kept = _visible(text).strip()
    return kept if len(kept) <= 20 else kept[:19] + "…"


def _messages(label: str, shown: str, reason: str, hint: tuple[str, str] = ("", "")) -> str:
    """The learner's message for ``reason``, in the active language (the same
    msgids as parse-number.js, so both read alike in every language)."""
    if reason == "empty":
        return _("{label} is empty: type a number.").format(label=label) if label else _("Type a number.")
    who = label or _("This field")
    if reason == "digits":
        return _("{label} takes the digits 0–9 only; “{text}” uses other digits.").format(label=who, text=shown)
    if reason == "not-a-number":
        return _("{label} must be a number written with the digits 0–9; “{text}” is not.").format(
            label=who, text=shown)
    if reason == "ambiguous":
        return _("“{text}” could be {one} or {other}. Type the one you mean.").format(
            text=shown, one=hint[0], other=hint[1])
    if reason == "too-long":
        return _("{label} takes at most {limit} digits; “{text}” has more.").format(
            label=who, limit=MAX_DIGITS, text=shown)
    if reason == "zero-division":
        return _("“{text}” divides by zero: type a number, or a division by a number other than zero.").format(
            text=shown)
    return _("{label} must be a whole number, not {text}.").format(label=who, text=shown)


def _groups_ok(head: str, groups: list[str]) -> bool:
    if not (1 <= len(head) <= 3) or not head.isdigit():
        return False
    return all(len(g) == 3 and g.isdigit() for g in groups)


def _split(body: str, integer: bool):
    """(integer digits, fraction digits) or a reason string, or ("ambiguous", hint)."""
    for sep in _SPACES[1:]:
        body = body.replace(sep, " ")
    # underscores only between two digits
    if re.search(r"(^|[^0-9])_|_($|[^0-9])", body):
        return "not-a-number"
    body = body.replace("_", "")
    marks = [ch for ch in body if ch in ".,"]
    kinds = set(marks)
    decimal_mark = None
    group_mark = " " if " " in body else None
    if len(kinds) == 2:
        decimal_mark = body[max(body.rfind("."), body.rfind(","))]
        other = "," if decimal_mark == "." else "."
        if body.count(decimal_mark) != 1 or group_mark:
            return "not-a-number"
        group_mark = other
    elif len(kinds) == 1:
        mark = marks[0]
        if len(marks) > 1:
            if group_mark:
                return "not-a-number"
            group_mark = mark
        else:
            head, _, tail = body.partition(mark)
            looks_grouped = (len(tail) == 3 and tail.isdigit() and head.isdigit()
                             and 1 <= len(head) <= 3 and head != "0" and not group_mark)
            comma_decimal = _i18n.decimal_mark() == ","  # pt-BR: "." groups, "," is the decimal mark
            if looks_grouped and comma_decimal and mark == ".":
                group_mark = mark  # "4.096", "12.000": thousands, as Brazilians write them
            elif looks_grouped and comma_decimal and not integer:
                decimal_mark = mark  # "1,650" is 1.65 where "," is the decimal mark
            elif looks_grouped:
                if not integer or tail == "000":  # "12.000": 12 or 12000, both whole
                    t = tail.rstrip("0")
                    small = head + (_i18n.decimal_mark() + t if t else "")
                    return ("ambiguous", (small, head + tail))
                group_mark = mark
            else:
                decimal_mark = mark
    whole, frac = (body.split(decimal_mark) if decimal_mark else (body, ""))
    if decimal_mark == "," and frac == "":
        return "not-a-number"  # "12," is unfinished, not twelve
    if not frac.isdigit() and frac != "":
        return "not-a-number"
    if group_mark:
        parts = whole.split(group_mark)
        if not _groups_ok(parts[0], parts[1:]):
            return "not-a-number"
        whole = "".join(parts)
    if whole == "" and frac == "":
        return "not-a-number"
    if whole and not whole.isdigit():
        return "not-a-number"
    return whole or "0", frac


_FRACTION = re.compile(r"[/÷]")


def _fraction(text: str, label: str) -> Parsed:
    """``a/b`` or ``a ÷ b`` (one mark), each side a decimal number; see the module docstring."""
    shown = _shown(text)
    top, bottom = (side.strip() for side in _FRACTION.split(text))
    if not top or not bottom:
        return Parsed(False, reason="not-a-number", message=_messages(label, shown, "not-a-number"))
    a, b = parse_number(top, False, label), parse_number(bottom, False, label)
    for side in (a, b):
        if not side.ok:
            return side
    if b.value == 0:
        return Parsed(False, reason="zero-division", message=_messages(label, shown, "zero-division"))
    return Parsed(True, a.value / b.value)


def parse_number(raw, integer: bool = False, label: str = "", fraction: bool = False) -> Parsed:
    """Read a number as a person typed it (see the module docstring).

    raw: the field's text (str); ints and floats pass through (a float must
    be whole in a whole-number field). integer: True for whole-number fields
    (N, d, M, seed, head). label: the field's visible name, used in messages.
    fraction: also read one division "a/b" (decimal fields only).
    Returns a Parsed; never raises.
    """
    if isinstance(raw, bool):
        return Parsed(False, reason="not-a-number", message=_messages(label, str(raw), "not-a-number"))
    if isinstance(raw, int):
        if abs(raw) >= 10 ** MAX_DIGITS:
            text = str(raw) if raw.bit_length() < 10_000 else "…"  # str() itself refuses 4,300 digits
            return Parsed(False, reason="too-long", message=_messages(label, _shown(text), "too-long"))
        return Parsed(True, raw)
    if isinstance(raw, float):
        if raw != raw or raw in (float("inf"), float("-inf")):
            return Parsed(False, reason="not-a-number", message=_messages(label, str(raw), "not-a-number"))
        if abs(raw) >= 10 ** MAX_DIGITS:
            return Parsed(False, reason="too-long", message=_messages(label, _shown(repr(raw)), "too-long"))
        if integer:
            if raw != int(raw):
                return Parsed(False, reason="not-integer", message=_messages(label, repr(raw), "not-integer"))
            return Parsed(True, int(raw))
        return Parsed(True, raw)
    text = _visible("" if raw is None else str(raw))
    if fraction and not integer and len(_FRACTION.findall(text)) == 1:
        return _fraction(text, label)
    shown = _shown(text)
    body = text.strip().replace("\u2212", "-")
    if body == "":
        return Parsed(False, reason="empty", message=_messages(label, shown, "empty"))
    if any(unicodedata.category(ch) == "Nd" and not ("0" <= ch <= "9") for ch in body):
        return Parsed(False, reason="digits", message=_messages(label, shown, "digits"))
    sign = 1
    if body[0] in "+-":
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if not _BODY.fullmatch(body) or body[0] in _SPACES or body[-1] in _SPACES:
        return Parsed(False, reason="not-a-number", message=_messages(label, shown, "not-a-number"))
    split = _split(body, integer)
    if isinstance(split, str):
        return Parsed(False, reason=split, message=_messages(label, shown, split))
    if split[0] == "ambiguous":
        return Parsed(False, reason="ambiguous", message=_messages(label, shown, "ambiguous", split[1]))
    whole, frac = split
    if len(whole.lstrip("0")) > MAX_DIGITS:
        return Parsed(False, reason="too-long", message=_messages(label, shown, "too-long"))
    if integer:
        if frac.strip("0"):
            return Parsed(False, reason="not-integer", message=_messages(label, shown, "not-integer"))
        return Parsed(True, sign * int(whole))
    return Parsed(True, sign * float(f"{whole}.{frac or '0'}"))
