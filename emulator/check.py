"""Check a kernel's float32 answer against the exact float64 one.

Two rules, both must hold (FlashAttention, arXiv:2205.14135, and its test
suite's convention):

1. every checked row's max abs error is within the first-order float32 bound
   of :func:`emulator.attention.row_bound`;
2. for the fused kernels, the max abs error is at most twice the plain
   kernel's, plus a tiny margin of 8u·max|V| (u = 2⁻²⁴).

Rows checked: every row for N ≤ 1,024. Above that, a documented subset:
every row of the first and the last query tile, plus 64 rows spaced evenly
between them (:func:`rows_to_check`).
"""
from __future__ import annotations

import math
from operator import mul

from . import attention as att
from .inputs import random_qkv
from .tiling import CHECK_ALL_ROWS_MAX_N, M_DEFAULT, Tiling, make_tiling

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


def _ulp32(x: float) -> float:
    """Spacing of float32 numbers at magnitude x (its unit in the last place):
    2^(e-24) for x = m·2^e with 0.5 ≤ m < 1; the smallest subnormal step below
    the normal range (IEEE 754 binary32, 24-bit significand)."""
    if x == 0.0 or not math.isfinite(x):
        return 2.0 ** -149
    _m, e = math.frexp(x)
    return 2.0 ** max(e - 24, -149)


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
    plain_max_abs_error, fa_rule_limit = fa_rule_twice_plain + fa_rule_margin
    (2 × the plain mirror's error + 8u·max|V|; None for plain), output_range
    (max − min of the exact O over the checked rows) and output_ulp (float32's
    spacing at the largest |O| there), rows_checked, rows_description, first_failing_row,
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
    o_lo, o_hi = math.inf, -math.inf   # the exact output's range over the checked rows
    worst_bound = 0.0
    first_fail = None
    nan_rows = []
    for i in rows:
        nk = _keys_for_row(i, n, causal)
        qi = q[i]
        dots = [math.fsum(map(mul, qi, k[j])) for j in range(nk)]
        ref_o, _lse, p = att.reference(dots, vt, d)
        o_lo, o_hi = min(o_lo, *ref_o), max(o_hi, *ref_o)
        s64 = att.scores64(dots, d)
        bound = att.row_bound(p, s64, vmax_prefix[nk - 1], _norm(qi), kmax_prefix[nk - 1],
                              d, -(-nk // bc))
        if outputs is not None:
            o = outputs[i]
        elif kernel == "plain":
            o, _ = att.plain(dots, vt, d)
        else:
            o, _ = att.fused(dots, vt, d, bc, rescale=(kernel == "fused"))
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
            po, _ = att.plain(dots, vt, d)
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
    margin = 8 * att.U * (max(vmax_prefix) if vmax_prefix else 0.0)
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
        "fa_rule_twice_plain": 2.0 * plain_err if fused_kind else None,
        "fa_rule_margin": margin if fused_kind else None,
        "output_range": (o_hi - o_lo) if rows else 0.0,
        "output_ulp": _ulp32(max(abs(o_lo), abs(o_hi))) if rows else 0.0,
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
