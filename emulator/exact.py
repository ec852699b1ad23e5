"""Exact weighted sums Σ_j w_j·A[j][c] for every column c at once, in one integer sum.

The checker forms, for every row it checks, three weighted sums of V's rows
(the float64 reference's P·V, the plain mirror's and the fused mirror's), each
summed exactly and rounded once to float64 (emulator.attention, ``_pv``). With
float32 V and float32 or float64 weights, every term is a whole number times a
power of two, so the sum can be done in Python's integers with no error:

* each row of V is packed once (:func:`pack`) into one integer, its d entries
  scaled by 2^SV to whole numbers and laid side by side in fields of F bits
  (the checker packs K's columns the same way, so that a row's N dot products
  q·k_j are one such sum with the d entries of q as the weights);
* a row's weights are scaled by 2^S to whole numbers (exact: S covers their
  last significant bit), and Σ_j w_j·packed_j is one loop of integer
  multiply-adds in C (``reduce(add, map(mul, …))``) that forms all d column sums at
  once; each field stays below 2^(F−1) in size, so the fields never mix;
* each field is read back, rounded once to a float (int to float rounds to
  nearest, ties to even) and scaled by 2^−(S+SV), which is exact in the normal
  range (where 2^−(S+SV) is not a normal float, int / int, as correctly rounded).

So each column gets the correctly rounded float64 of the exact sum: what
``math.fsum`` of the products gives, to the last bit. Where that cannot be
promised (V not float32, a weight not finite, a field too narrow for the range
of the weights, a sum that is zero or below the normal range), :func:`sums`
returns None and the caller sums as before. In WebAssembly (Pyodide) this is
about twice as fast as ``math.sumprod`` over the d columns.
"""
from __future__ import annotations

import math
from array import array
from functools import reduce
from itertools import chain, repeat
from operator import add, mul, sub, truediv

FIELD_BITS = 160  # F by default (a multiple of 8): room for 2^(S + SV) · n · max|w| · max|A|
_NORMAL_MIN = 2.0 ** -1021


class Packed:
    """A matrix A packed for :func:`sums`: ``rows[j]`` = Σ_c A[j][c]·2^SV · 2^(F·c)."""

    __slots__ = ("rows", "sv", "fields", "amax_exp", "bits", "offset", "half", "slices")

    def __init__(self, rows: list, sv: int, fields: int, amax_exp: int, bits: int):
        self.rows = rows
        self.sv = sv
        self.fields = fields
        self.amax_exp = amax_exp
        self.bits = bits
        self.half = 1 << (bits - 1)
        # Adding half to every field makes each one a whole number in [0, 2^F).
        self.offset = reduce(add, (self.half << (bits * c) for c in range(fields)), 0)
        # Where each field lies in the bytes of a sum (F/8 bytes each, little-endian).
        step = bits // 8
        self.slices = list(map(slice, range(0, step * fields, step), range(step, step * fields + step, step)))


def is_float32(a: list) -> bool:
    """Whether every entry of the rows ``a`` is a finite float32 value."""
    flat = list(chain.from_iterable(a))
    return all(map(math.isfinite, flat)) and array("f", flat).tolist() == flat


def pack(a: list, weights: list | None = None, room: int | None = None) -> Packed | None:
    """Pack A, rows of equal length of float32 values (V's rows, or K's columns),
    for :func:`sums`; None when some entry is not a finite float32 or all are
    zero (then the caller keeps its own sum). ``weights``, when given, are
    rows of every float32 weight vector that will meet A (Q's rows, for K);
    ``room``, the bits the weights' whole numbers may take (S plus the
    exponent of the largest): the fields are then made just wide enough,
    which is faster (:func:`sums` refuses weights that need more); otherwise
    they are FIELD_BITS wide."""
    if not a or not a[0] or not is_float32(a):
        return None
    nonzero = list(filter(None, map(abs, chain.from_iterable(a))))
    if not nonzero:
        return None
    sv = 24 - math.frexp(min(nonzero))[1]  # 2^sv · x is a whole number for every float32 x
    amax_exp = math.frexp(max(nonzero))[1]
    scale = 2.0 ** sv
    fields = len(a[0])
    bits = FIELD_BITS
    if weights:
        mags = list(filter(None, map(abs, chain.from_iterable(weights))))
        if mags:
            room = (24 - math.frexp(min(mags))[1]) + math.frexp(max(mags))[1]
    if room is not None:
        width = room + sv + amax_exp + len(a).bit_length() + 1
        bits = max(8, min(FIELD_BITS, -(-(width + 2) // 8) * 8))
    packed = Packed([], sv, fields, amax_exp, bits)
    step, half, offset = bits // 8, packed.half, packed.offset
    for row in a:
        # Each field holds its whole number plus half (so no field borrows from the next),
        # written as F-bit little-endian bytes; the offset of all the halves comes off after.
        ints = map(add, map(int, map(mul, row, repeat(scale))), repeat(half))
        raw = b"".join(map(int.to_bytes, ints, repeat(step), repeat("little")))
        packed.rows.append(int.from_bytes(raw, "little") - offset)
    return packed


def sums(weights: list, packed: Packed, bits: int) -> list | None:
    """Σ_j weights[j]·A[j][c] for each of A's columns c, each the correctly
    rounded float64 of the exact sum (as ``math.fsum`` of the products gives),
    or None when this path cannot promise that (module docstring).

    weights: n ≤ len(A) floats with at most ``bits`` significant bits each (24
    for float32 values, 53 for any float64); they meet A's first n rows.
    """
    n = len(weights)
    if n == 0 or n > len(packed.rows):
        return None
    # One pass finds a NaN or an infinity: fsum then gives NaN or ±inf, or raises
    # (inf − inf, or partial sums past the largest float); otherwise all are finite.
    try:
        if not math.isfinite(math.fsum(weights)):
            return None
    except (OverflowError, ValueError):  # ValueError: inf − inf
        return None
    low, hi = min(weights), max(weights)
    try:
        if low >= 0.0:  # P and the exponentials: no sign to strip
            lo = min(filter(None, weights))
        else:
            hi = max(hi, -low)
            lo = min(filter(None, map(abs, weights)))
    except ValueError:  # every weight is zero
        return None
    s = bits - math.frexp(lo)[1]  # 2^s · w is a whole number for every weight
    width = s + math.frexp(hi)[1] + packed.sv + packed.amax_exp + n.bit_length() + 1
    if width >= packed.bits - 1 or s > 1000:
        return None
    ints = list(map(int, map(mul, weights, repeat(2.0 ** s))))
    # Integers only (reduce, not sum(): emulator/ never calls the built-in sum).
    total = reduce(add, map(mul, ints, packed.rows), packed.offset)
    raw = total.to_bytes(packed.bits // 8 * packed.fields, "little")
    fields = map(sub, map(int.from_bytes, map(raw.__getitem__, packed.slices), repeat("little")), repeat(packed.half))
    k = s + packed.sv
    if k <= 1022:
        # float(int) rounds once, to the nearest float (ties to even), and 2^−k is a
        # normal float, so the product is exact wherever it is normal: the same
        # number as int / int (checked below, where it is not normal).
        out = list(map(mul, map(float, fields), repeat(2.0 ** -k)))
    else:
        # int / int is correctly rounded in Python (one rounding, to the nearest float, ties to even).
        out = list(map(truediv, fields, repeat(1 << k)))
    if not min(map(abs, out)) >= _NORMAL_MIN:  # a zero (its sign is fsum's to give) or below normal
        return None
    return out
