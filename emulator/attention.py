"""Attention, one query row at a time: the float64 reference and the float32
mirrors of the three forward kernels (``plain``, ``fused``, ``fused_no_rescale``,
which the manifest's "mirror" keys name and emulator.mirrors calls).

Every function here takes the row's float64 dot products ``dots[j] = q·k_j``
(exact products of float32 inputs, summed to float64 accuracy by :func:`dot`)
for the keys the row may attend to, and the columns ``vt`` of V
(vt[c][j] = V[j][c], d lists of N float32 values). Computing the dots once
lets the reference and every mirror share the most expensive step; the
checker also shares the scores and the plain mirror's exponentials between
the mirrors (the ``s``, ``s32`` and ``plain_e`` arguments), which changes no
number, only how often it is formed. The three mirrors take these in one
dict, as emulator.mirrors calls every mirror, forward and backward:
``mirror({"dots", "vt", "d", "s32", "plain_e"}, block_rows, block_cols)``
returns ``{"O": the row's d outputs, "L": its logsumexp}``.

Float32 is emulated by rounding through ``array('f')`` after each step the
kernel stores in float32. Two simplifications, both inside the error bound
of :func:`row_bound`: a dot product, a sum of exponentials and a column of
P·V are each formed exactly and rounded once, where a GPU rounds after every
addition.

No built-in ``sum()`` of floats is used anywhere (Python 3.12 changed it to
compensated summation). Plain sums use ``math.fsum``, correctly rounded in
every Python. Sums of products (:func:`dot`) use ``math.sumprod`` where the
Python has it (Pyodide's 3.14) and ``fsum`` of the float64 products where it
does not (CPython 3.11): verdicts, rows and float32 figures agree; a float64
reference figure may differ in its last bits (tests/test_emulator.py and
tests/test_browser_lab.py hold the two to that).
"""
from __future__ import annotations

import math
from array import array
from itertools import repeat
from operator import add, mul, sub, truediv

from . import exact

U = 2.0 ** -24  # unit roundoff of float32 (round to nearest)
NEG_INF = -math.inf

# math.sumprod (Python ≥ 3.12, so Pyodide's 3.14) forms Σ a_j·b_j in C with
# a triple-length accumulator and exact products: a few times faster than
# fsum(map(mul, …)) in WebAssembly. Where it is missing (CPython 3.11) the
# fallback is fsum of the float64 products, exactly what this module did
# before, so CPython's figures (and facts/facts.json) do not move. The two
# differ only in the last bits of a float64 (a product of float32 inputs is
# exact in float64, so for them both are the correctly rounded sum nearly
# always); tests/test_emulator.py checks both paths against each other.
_SUMPROD = getattr(math, "sumprod", None)


def _dot_fsum(a, b) -> float:
    return math.fsum(map(mul, a, b))


def dot(a, b) -> float:
    """Σ a_j·b_j over equal-length sequences of floats, to float64 accuracy."""
    return _DOT(a, b)


def use_sumprod(on: bool) -> None:
    """Choose math.sumprod (on, where present) or the fsum fallback (off).

    The default is on; the tests switch it to compare the two paths.
    Raises RuntimeError when asked for sumprod on a Python without it.
    """
    global _DOT
    if on and _SUMPROD is None:
        raise RuntimeError("math.sumprod needs Python 3.12 or later")
    _DOT = _SUMPROD if on else _dot_fsum


_DOT = _SUMPROD if _SUMPROD is not None else _dot_fsum


_ONE = array("f", (0.0,))


def f32(x: float) -> float:
    """Round one float64 to the nearest float32 (overflow gives ±inf)."""
    _ONE[0] = x  # storing into an array('f') rounds, as array("f", (x,)) does
    return _ONE[0]


def f32s(xs) -> list:
    """Round an iterable of floats to float32, returning a list."""
    return array("f", xs).tolist()


def dots_for_row(q_row: list, keys: list) -> list:
    """Float64 dot products q·k_j for each key row in ``keys`` (float32 inputs,
    so every product is exact and each sum is correctly rounded to float64)."""
    return list(map(_DOT, repeat(q_row, len(keys)), keys))


def scores64(dots: list, d: int) -> list:
    """Float64 scaled scores s_j = (q·k_j)/√d."""
    return list(map(mul, dots, repeat(1.0 / math.sqrt(d))))


def scores32(dots: list, d: int) -> list:
    """Float32 scores as a kernel forms them: f32(f32(q·k_j) · f32(1/√d))."""
    scale = f32(1.0 / math.sqrt(d))
    return f32s(map(mul, f32s(dots), repeat(scale)))


class Columns(list):
    """V's d columns (a list of lists, as everywhere here) that also carry V packed
    for exact integer sums (emulator.exact): :func:`columns` forms them once per check.
    ``packed`` takes any weights; ``packed32``, narrower and faster, float32 weights
    from 2^−F32_LOW up to 2 (the probabilities and exponentials of a row, nearly always)."""

    __slots__ = ("packed", "packed32")


F32_LOW = 40


def columns(v: list) -> list:
    """V's columns, (N, d) rows to d lists of N, packed for :func:`_pv`'s exact path."""
    cols = Columns([row[c] for row in v] for c in range(len(v[0]) if v else 0))
    cols.packed = exact.pack(v)
    cols.packed32 = exact.pack(v, room=24 + F32_LOW + 1) if cols.packed is not None else None
    return cols


def _pv(weights: list, vt: list, bits: int = 53) -> list:
    """Σ_j weights[j]·V[j][c] for each column c (float64, one rounding).

    ``vt`` columns may be longer than ``weights`` (a causal row sees only the
    first keys); the extra entries are ignored. ``bits``: the weights'
    significant bits at most (24: float32 values). When ``vt`` comes from
    :func:`columns`, the sums are formed exactly in integers (emulator.exact),
    the same correctly rounded numbers, faster: always for float32 weights,
    whose products with float32 V are exact in float64 so either dot path
    gives that very sum, and for float64 weights only on the math.sumprod path
    (the fsum fallback sums products rounded to float64, and keeps doing so).
    """
    n = len(weights)
    packed = getattr(vt, "packed", None)
    if packed is not None and (bits <= 24 or _DOT is _SUMPROD):
        out = exact.sums(weights, vt.packed32, bits) if bits <= 24 else None
        if out is None:
            out = exact.sums(weights, packed, bits)
        if out is not None:
            return out
    if vt and len(vt[0]) != n:
        vt = [col[:n] for col in vt]
    return list(map(_DOT, repeat(weights, len(vt)), vt))


def reference(dots: list, vt: list, d: int, s: list | None = None):
    """Exact float64 attention for one row.

    ``s`` may pass :func:`scores64` of ``dots`` already formed. Returns
    (o, logsumexp, p): o is a list of d floats; p the row of probabilities
    P (float64). A row with no keys gives o = 0 and logsumexp = −inf
    (nothing to attend to).
    """
    if not dots:
        return [0.0] * len(vt), NEG_INF, []
    o, lse, p, _x = _reference(dots, vt, d, s)
    return o, lse, p


def _reference(dots: list, vt: list, d: int, s: list | None):
    """:func:`reference` plus the shifted scores x_j = s_j − m it formed."""
    if s is None:
        s = scores64(dots, d)
    m = max(s)
    x = list(map(sub, s, repeat(m)))
    e = list(map(math.exp, x))
    l = math.fsum(e)
    p = list(map(truediv, e, repeat(l)))
    return _pv(p, vt), m + math.log(l), p, x


def plain(x: dict, block_rows: int, block_cols: int) -> dict:
    """Float32 mirror of the three-pass kernel (manifest "mirror": "attention.plain"), one row.

    Pass 1 writes the row of S; pass 2 reads it back, finds the largest
    score m, sums l = Σ exp(s_j − m) and writes P = exp(s − m)/l; pass 3
    reads P and forms O = P·V. Called as every mirror is (emulator.mirrors):
    x = {"dots", "vt", "d", "s32"} (module docstring; "s32" may be None or
    :func:`scores32` of the dots already formed); the tiles do not change a
    row's numbers. Returns {"O": d floats, "L": the row's logsumexp}.
    """
    o, lse, _e = _plain(x["dots"], x["vt"], x["d"], x.get("s32"))
    return {"O": o, "L": lse}


def _plain(dots: list, vt: list, d: int, s32: list | None):
    """:func:`plain` plus its float32 exponentials e_j = exp(s_j − max s)."""
    d_out = len(vt)
    if not dots:
        return [0.0] * d_out, NEG_INF, []
    s = scores32(dots, d) if s32 is None else s32
    m = max(s)
    e = f32s(map(math.exp, f32s(map(sub, s, repeat(m)))))
    l = f32(math.fsum(e))
    p = f32s(map(truediv, e, repeat(l)))
    return f32s(_pv(p, vt, 24)), m + math.log(l), e


def fused_row(dots: list, vt: list, d: int, block_cols: int, rescale: bool = True,
              s32: list | None = None, plain_e: list | None = None):
    """Float32 arithmetic of the fused online-softmax kernel for one row.

    Walks the key tiles in order (FlashAttention Algorithm 1, lines 9–12;
    Milakov & Gimelshein 2018, Algorithm 3). For tile t with scores s_t:
        m_new = max(m, max s_t)
        α     = exp(m − m_new)            (the rescale factor, ≤ 1)
        p_t   = exp(s_t − m_new)
        l     = α·l + Σ p_t
        acc   = α·acc + p_t·V_t
    and at the end o = acc / l.

    With ``rescale=False`` (the broken control) α is never applied: the
    running total l and the accumulator keep terms measured against an old,
    smaller maximum, so the row is wrong whenever its largest score arrives
    after its first key tile.

    A tile with no valid key (all masked or past N) is skipped: m and l are
    untouched, so −∞ − (−∞) never occurs. A row with no keys at all returns
    o = 0 and logsumexp = −∞.

    The accumulator recurrence is evaluated in its unrolled form
    acc = Σ_t (Π_{u>t} α_u)·p_t·V_t, with each weight rounded to float32 and
    each column summed exactly; the factors α are exactly the tile walk's.
    Each step rounds to float32 where the kernel does; the steps are done
    for all tiles of the row at once (one list per step) rather than tile
    by tile, which gives the same numbers with fewer Python calls.
    ``s32`` may pass :func:`scores32` of ``dots`` already formed, and
    ``plain_e`` the plain mirror's exp(s_j − max s) for them: from the tile
    where the running maximum reaches the row's maximum on, p_j is that very
    number, so it is taken instead of formed again.
    Returns (o, logsumexp).
    """
    d_out = len(vt)
    if not dots:
        return [0.0] * d_out, NEG_INF
    s = scores32(dots, d) if s32 is None else s32
    n = len(s)
    starts = range(0, n, block_cols)
    # Running maximum after each tile, and each tile's rescale factor α.
    m = NEG_INF
    top = max(s)
    shift = []    # m_new of the tile each key belongs to, until m_new = top
    alphas = []
    for start in starts:
        stop = min(start + block_cols, n)
        m_new = max(m, max(s[start:stop]))
        alphas.append(1.0 if not rescale else 0.0 if m == NEG_INF else f32(math.exp(f32(m - m_new))))
        if m_new != top or plain_e is None:
            shift.extend(repeat(m_new, stop - start))
        m = m_new
    p = f32s(map(math.exp, f32s(map(sub, s, shift))))  # map stops at the shorter list
    if len(p) < n:
        p.extend(plain_e[len(p):])
    l = 0.0
    for t, start in enumerate(starts):
        tile_sum = f32(math.fsum(p[start:start + block_cols]))
        l = f32(f32(l * alphas[t]) + tile_sum) if rescale else f32(l + tile_sum)
    # Weight of each key in the final accumulator: p_j · Π_{later tiles} α.
    # The product is 1 for the last tiles (a factor 1 changes nothing); it is
    # formed only for the keys before the last tile whose product is not 1.
    later = 1.0
    factors = []
    for t in range(len(alphas) - 1, -1, -1):
        factors.append(later)
        later = f32(later * alphas[t])
    factors.reverse()
    cut = 0
    for t, factor in enumerate(factors):
        if factor != 1.0:
            cut = min(starts[t] + block_cols, n)
    if cut:
        scale = []
        for t in range(-(-cut // block_cols)):
            scale.extend(repeat(factors[t], min(block_cols, cut - starts[t])))
        w = f32s(map(mul, p[:cut], scale))
        w.extend(p[cut:])
    else:
        w = p
    if l == 0.0:  # cannot happen with ≥ 1 key (exp(0) = 1), but never divide 0 by 0
        return [0.0] * d_out, NEG_INF
    acc = f32s(_pv(w, vt, 24))
    return f32s(map(truediv, acc, repeat(l))), m + math.log(l)


def fused(x: dict, block_rows: int, block_cols: int) -> dict:
    """Float32 mirror of the fused kernel (manifest "mirror": "attention.fused"), one row.

    :func:`fused_row` with the rescale, called as every mirror is
    (emulator.mirrors): x = {"dots", "vt", "d", "s32", "plain_e"} ("s32" and
    "plain_e" may be None), key tiles of ``block_cols`` keys. Returns
    {"O": d floats, "L": the row's logsumexp}.
    """
    o, lse = fused_row(x["dots"], x["vt"], x["d"], block_cols, True, x.get("s32"), x.get("plain_e"))
    return {"O": o, "L": lse}


def fused_no_rescale(x: dict, block_rows: int, block_cols: int) -> dict:
    """The broken control (manifest "mirror": "attention.fused_no_rescale"): :func:`fused`
    with the rescale step left out. Arguments and result as :func:`fused`."""
    o, lse = fused_row(x["dots"], x["vt"], x["d"], block_cols, False, x.get("s32"), x.get("plain_e"))
    return {"O": o, "L": lse}


def row_bound(p: list, s64: list, vmax: float, qnorm: float, kmax: float,
              d: int, key_tiles: int, shifted: list | None = None) -> float:
    """First-order float32 error bound for one output row (max over its d entries).

    Let u = 2⁻²⁴, n the keys in the row, T its key tiles, V_max the largest
    |V| entry among them. To first order in u (terms in u² dropped):

    * scores: each s_j = (q·k_j)/√d takes d products, d−1 additions and one
      scaling, so |δs_j| ≤ (d+2)·u·Σ_c|q_c k_jc|/√d ≤ Δs with
      Δs = (d+2)·u·‖q‖·max_j‖k_j‖/√d (Cauchy–Schwarz);
    * softmax: a shift of the scores by δs moves P_j by at most 2·Δs·P_j;
      exp(x) with x = s_j − m ≤ 0 carries (3 + 2|x|) ulp (WGSL §17.7 accuracy
      of exp) plus u|x| from rounding x, and through l each exp error counts
      twice: Σ_j P_j·2·(3 + 3|x_j|)·u;
    * sums: l and each accumulator column add n terms (≤ n·u each, relative),
      each of T tiles rescales l and acc once (2u), and the final division
      and P's division add a few ulp (we allow 10u).

    So every |o_c − o_c*| ≤ V_max·[2Δs + (2n + 2T + 10)·u + 2·u·Σ_j P_j(3 + 3|x_j|)].
    We derived this bound ourselves for the lesson; no paper states it. The
    checker also applies FlashAttention's rule (fused error ≤ 2× plain
    error, plus a tiny margin).
    """
    n = len(p)
    if n == 0:
        return 0.0
    inv = 1.0 / math.sqrt(d)
    ds = (d + 2) * U * qnorm * kmax * inv
    # Σ_j p_j·(3 + 3·(m − s_j)), one float operation at a time as written.
    # ``shifted`` (x_j = s_j − m from the reference) gives 3·(m − s_j) as
    # −3·x_j: IEEE subtraction and multiplication are exact under a change of
    # sign, so the figure is the same to the last bit.
    if shifted is None:
        m = max(s64)
        three_gaps = map(mul, repeat(3.0), map(sub, repeat(m), s64))
    else:
        three_gaps = map(mul, repeat(-3.0), shifted)
    spread = math.fsum(map(mul, p, map(add, repeat(3.0), three_gaps)))
    return vmax * (2.0 * ds + (2 * n + 2 * key_tiles + 10) * U + 2.0 * U * spread)
