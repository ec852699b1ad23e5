"""Attention, one query row at a time: the float64 reference and the float32
mirrors of the three kernels (``plain``, ``fused``, ``fused_no_rescale``).

Every function here takes the row's float64 dot products ``dots[j] = q·k_j``
(exact products of float32 inputs summed by ``math.fsum``, so correctly
rounded) for the keys the row may attend to, and the columns ``vt`` of V
(vt[c][j] = V[j][c], d lists of N float32 values). Computing the dots once
lets the reference and every mirror share the most expensive step.

Float32 is emulated by rounding through ``array('f')`` after each step the
kernel stores in float32. Two simplifications, both inside the error bound
of :func:`row_bound`: a dot product, a sum of exponentials and a column of
P·V are each formed exactly and rounded once, where a GPU rounds after every
addition.

No built-in ``sum()`` of floats is used anywhere (Python 3.12 changed it to
compensated summation); sums use ``math.fsum``, which is correctly rounded
in every Python, so CPython 3.11 and Pyodide's 3.14 print the same figures.
"""
from __future__ import annotations

import math
from array import array
from itertools import repeat
from operator import mul, sub

U = 2.0 ** -24  # unit roundoff of float32 (round to nearest)
NEG_INF = -math.inf


def f32(x: float) -> float:
    """Round one float64 to the nearest float32 (overflow gives ±inf)."""
    return array("f", (x,))[0]


def f32s(xs) -> list:
    """Round an iterable of floats to float32, returning a list."""
    return array("f", xs).tolist()


def scores64(dots: list, d: int) -> list:
    """Float64 scaled scores s_j = (q·k_j)/√d."""
    inv = 1.0 / math.sqrt(d)
    return [x * inv for x in dots]


def scores32(dots: list, d: int) -> list:
    """Float32 scores as a kernel forms them: f32(f32(q·k_j) · f32(1/√d))."""
    scale = f32(1.0 / math.sqrt(d))
    return f32s(map(mul, f32s(dots), repeat(scale)))


def _pv(weights: list, vt: list) -> list:
    """Σ_j weights[j]·V[j][c] for each column c (float64, exact then rounded)."""
    return [math.fsum(map(mul, weights, col)) for col in vt]


def reference(dots: list, vt: list, d: int):
    """Exact float64 attention for one row.

    Returns (o, logsumexp, p): o is a list of d floats; p the row of
    probabilities P (float64). A row with no keys gives o = 0 and
    logsumexp = −inf (nothing to attend to).
    """
    if not dots:
        return [0.0] * len(vt), NEG_INF, []
    s = scores64(dots, d)
    m = max(s)
    e = [math.exp(x - m) for x in s]
    l = math.fsum(e)
    p = [x / l for x in e]
    return _pv(p, vt), m + math.log(l), p


def plain(dots: list, vt: list, d: int):
    """Float32 mirror of the three-pass kernel for one row.

    Pass 1 writes the row of S; pass 2 reads it back, finds the largest
    score m, sums l = Σ exp(s_j − m) and writes P = exp(s − m)/l; pass 3
    reads P and forms O = P·V. Returns (o, logsumexp).
    """
    d_out = len(vt)
    if not dots:
        return [0.0] * d_out, NEG_INF
    s = scores32(dots, d)
    m = max(s)
    e = f32s(map(math.exp, f32s(map(sub, s, repeat(m)))))
    l = f32(math.fsum(e))
    p = f32s(x / l for x in e)
    return f32s(_pv(p, vt)), m + math.log(l)


def fused(dots: list, vt: list, d: int, block_cols: int, rescale: bool = True):
    """Float32 mirror of the fused online-softmax kernel for one row.

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
    Returns (o, logsumexp).
    """
    d_out = len(vt)
    if not dots:
        return [0.0] * d_out, NEG_INF
    s = scores32(dots, d)
    n = len(s)
    m = NEG_INF
    l = 0.0
    tiles = []  # (p_t, alpha_t) in arrival order
    for start in range(0, n, block_cols):
        s_t = s[start:start + block_cols]
        m_new = max(m, max(s_t))
        alpha = 0.0 if m == NEG_INF else f32(math.exp(f32(m - m_new)))
        p_t = f32s(map(math.exp, f32s(map(sub, s_t, repeat(m_new)))))
        tile_sum = f32(math.fsum(p_t))
        if rescale:
            l = f32(f32(l * alpha) + tile_sum)
        else:
            alpha = 1.0
            l = f32(l + tile_sum)
        tiles.append((p_t, alpha))
        m = m_new
    # Weights of each key in the final accumulator: p_j · Π_{later tiles} α.
    weights = []
    later = 1.0
    for p_t, alpha in reversed(tiles):
        weights.append(f32s(map(mul, p_t, repeat(later))) if later != 1.0 else p_t)
        later = f32(later * alpha)
    w = []
    for chunk in reversed(weights):
        w.extend(chunk)
    if l == 0.0:  # cannot happen with ≥ 1 key (exp(0) = 1), but never divide 0 by 0
        return [0.0] * d_out, NEG_INF
    acc = f32s(_pv(w, vt))
    return f32s(a / l for a in acc), m + math.log(l)


def fused_no_rescale(dots: list, vt: list, d: int, block_cols: int):
    """The broken control: :func:`fused` with the rescale step left out."""
    return fused(dots, vt, d, block_cols, rescale=False)


def row_bound(p: list, s64: list, vmax: float, qnorm: float, kmax: float,
              d: int, key_tiles: int) -> float:
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
    m = max(s64)
    spread = math.fsum(pj * (3.0 + 3.0 * (m - sj)) for pj, sj in zip(p, s64))
    return vmax * (2.0 * ds + (2 * n + 2 * key_tiles + 10) * U + 2.0 * U * spread)
