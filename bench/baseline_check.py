"""Frozen copy of the Check as it stood before it ran in chunks of rows (commit 33ddf9c):
emulator/attention.py followed by emulator/check.py (since renamed
emulator/accuracy.py), unchanged except for
imports. Used only by bench/bench_lab.py as the baseline its speed-up is
measured against; nothing in the site or the tests imports it.
"""
from __future__ import annotations

# ---- emulator/attention.py at 33ddf9c ----

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


# ---- emulator/check.py at 33ddf9c ----

import math
from operator import mul

from emulator.inputs import random_qkv
from emulator.tiling import CHECK_ALL_ROWS_MAX_N, M_DEFAULT, Tiling, make_tiling

MIDDLE_ROWS = 64


def rows_to_check(tiling: Tiling) -> list:
    """Row indices the checker visits (sorted, unique).

    All rows when N ≤ 1,024; otherwise the first and last query tiles and
    64 evenly spaced rows between them.
    """
    n = tiling.n
    if n <= CHECK_ALL_ROWS_MAX_N:
        return list(range(n))
    first = range(0, min(n, tiling.block_rows))
    last_start, _ = tiling.query_tile_rows(tiling.query_tiles - 1)
    last = range(last_start, n)
    lo, hi = first.stop, last_start
    middle = []
    if hi > lo:
        step = max(1, (hi - lo) // MIDDLE_ROWS)
        middle = list(range(lo, hi, step))[:MIDDLE_ROWS]
    return sorted(set(first) | set(middle) | set(last))


def describe_rows(rows: list, tiling: Tiling) -> str:
    """A short sentence naming the rows checked, for the page."""
    n = tiling.n
    if len(rows) == n:
        return f"all {n:,} rows"
    last_start, _ = tiling.query_tile_rows(tiling.query_tiles - 1)
    mid = len(rows) - min(n, tiling.block_rows) - (n - last_start)
    return (f"{len(rows):,} of {n:,} rows: rows 0–{tiling.block_rows - 1:,} (first query tile), "
            f"rows {last_start:,}–{n - 1:,} (last query tile) and {mid} rows evenly spaced between")


def _columns(v: list, d: int) -> list:
    return [[row[c] for row in v] for c in range(d)]


def _norm(row: list) -> float:
    return math.sqrt(math.fsum(map(mul, row, row)))


def _keys_for_row(i: int, n: int, causal: bool) -> int:
    return i + 1 if causal else n


def check_arrays(kernel: str, q: list, k: list, v: list, causal: bool = False,
                 workgroup_bytes: int = M_DEFAULT, rows: list | None = None,
                 outputs: list | None = None) -> dict:
    """Run ``kernel``'s float32 mirror (or take ``outputs``) and check it.

    q, k, v: (N, d) lists of rows of float32 values.
    kernel: "plain", "fused" or "fused-no-rescale" (the mirror to run).
    outputs: optional (N, d) rows already computed elsewhere (a GPU's O read
      back); then these are checked instead of the mirror's.
    rows: row indices to check (default :func:`rows_to_check`).

    Returns a dict: passed (bool), bound_passed, fa_rule_passed,
    max_abs_error, bound (the bound of the worst row), max_bound,
    plain_max_abs_error, rows_checked, rows_description, first_failing_row,
    first_failing_tile, first_failing_error, first_failing_bound,
    nan_rows (rows with NaN or inf), block_rows, block_cols.
    Raises tiling.InputError for a tile that does not fit.
    """
    n, d = len(q), len(q[0])
    tiling = make_tiling(kernel, n, d, causal, workgroup_bytes)
    if rows is None:
        rows = rows_to_check(tiling)
    vt = _columns(v, d)
    vabs = [max(abs(x) for x in row) for row in v]
    knorm = [_norm(row) for row in k]
    # Prefix maxima so a causal row only sees its own keys.
    vmax_prefix, kmax_prefix = [], []
    vm = km = 0.0
    for j in range(n):
        vm = max(vm, vabs[j])
        km = max(km, knorm[j])
        vmax_prefix.append(vm)
        kmax_prefix.append(km)

    bc = tiling.block_cols
    fused_kind = kernel != "plain"
    max_err = plain_err = max_bound = 0.0
    worst_bound = 0.0
    first_fail = None
    nan_rows = []
    for i in rows:
        nk = _keys_for_row(i, n, causal)
        qi = q[i]
        dots = [math.fsum(map(mul, qi, k[j])) for j in range(nk)]
        ref_o, _lse, p = reference(dots, vt, d)
        s64 = scores64(dots, d)
        bound = row_bound(p, s64, vmax_prefix[nk - 1], _norm(qi), kmax_prefix[nk - 1],
                              d, -(-nk // bc))
        if outputs is not None:
            o = outputs[i]
        elif kernel == "plain":
            o, _ = plain(dots, vt, d)
        else:
            o, _ = fused(dots, vt, d, bc, rescale=(kernel == "fused"))
        err = 0.0
        bad = False
        for a, b in zip(o, ref_o):
            if a != a or a in (math.inf, -math.inf):
                bad = True
                continue
            e = abs(a - b)
            if e > err:
                err = e
        if bad:
            nan_rows.append(i)
            err = math.inf
        if fused_kind:
            po, _ = plain(dots, vt, d)
            pe = 0.0
            for a, b in zip(po, ref_o):
                pe = max(pe, abs(a - b))
            plain_err = max(plain_err, pe)
        if err > max_err:
            max_err = err
            worst_bound = bound
        max_bound = max(max_bound, bound)
        if err > bound and first_fail is None:
            first_fail = (i, err, bound)
    if max_err == 0.0:
        worst_bound = max_bound
    margin = 8 * U * (max(vmax_prefix) if vmax_prefix else 0.0)
    fa_ok = (not fused_kind) or (max_err <= 2.0 * plain_err + margin)
    bound_ok = first_fail is None
    report = {
        "kernel": kernel, "n": n, "d": d, "causal": bool(causal),
        "workgroup_bytes": tiling.workgroup_bytes,
        "block_rows": tiling.block_rows, "block_cols": tiling.block_cols,
        "passed": bool(bound_ok and fa_ok),
        "bound_passed": bound_ok,
        "fa_rule_passed": fa_ok,
        "max_abs_error": max_err,
        "bound": worst_bound,
        "max_bound": max_bound,
        "plain_max_abs_error": plain_err if fused_kind else max_err,
        "fa_rule_limit": (2.0 * plain_err + margin) if fused_kind else None,
        "rows_checked": len(rows),
        "rows_description": describe_rows(rows, tiling),
        "nan_rows": nan_rows[:10],
        "first_failing_row": None, "first_failing_tile": None,
        "first_failing_error": None, "first_failing_bound": None,
    }
    if first_fail is not None:
        i, err, bound = first_fail
        report.update(first_failing_row=i, first_failing_tile=i // tiling.block_rows,
                      first_failing_error=err, first_failing_bound=bound)
    return report


def check_output(outputs: list, q: list, k: list, v: list, causal: bool = False,
                 kernel: str = "fused", workgroup_bytes: int = M_DEFAULT,
                 rows: list | None = None) -> dict:
    """Check O read back from a GPU (rows of d floats) against float64.

    Same report as :func:`check_arrays`; the FlashAttention 2× rule compares
    with this module's float32 mirror of the plain kernel.
    """
    return check_arrays(kernel, q, k, v, causal, workgroup_bytes, rows, outputs=outputs)


def check(kernel: str, n: int, d: int, causal: bool = False, seed: int = 0,
          workgroup_bytes: int = M_DEFAULT) -> dict:
    """Check ``kernel`` on seeded random inputs (see emulator.inputs)."""
    q, k, v = random_qkv(n, d, seed)
    report = check_arrays(kernel, q, k, v, causal, workgroup_bytes)
    report["seed"] = seed
    return report
