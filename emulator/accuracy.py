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

A check can run in chunks of rows (:func:`check_rows`, on the inputs made
once by :func:`prepare`) whose partial reports :func:`merge` joins, in any
order, into the report of the whole; the page uses this to show progress,
keep the rows done when cancelled, and share rows among workers.
"""
from __future__ import annotations

import math
from operator import mul

from . import attention as att
from . import exact, mirrors
from .i18n import _, group
from .inputs import random_qkv
from .tiling import CHECK_ALL_ROWS_MAX_N, M_DEFAULT, MANIFEST, Tiling, make_tiling


def stores_scores(kernel: str) -> bool:
    """Whether ``kernel`` writes S to global memory (the plain schedule): it is
    then its own reference for FlashAttention's 2× rule, which fused kernels
    are held to (manifest passes)."""
    return any("S" in spec["writes"] for spec in MANIFEST["kernels"][kernel]["passes"])


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
    last_start, _stop = tiling.query_tile_rows(tiling.query_tiles - 1)
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
        return _("all {n} rows").format(n=group(n))
    last_start, _stop = tiling.query_tile_rows(tiling.query_tiles - 1)
    mid = len(rows) - min(n, tiling.block_rows) - (n - last_start)
    return _("{count} of {n} rows: rows 0–{first_end} (first query tile), rows {last_start}–{last_end} "
             "(last query tile) and {mid} rows evenly spaced between").format(
        count=group(len(rows)), n=group(n), first_end=group(tiling.block_rows - 1),
        last_start=group(last_start), last_end=group(n - 1), mid=group(mid))


def _columns(a: list, d: int) -> list:
    return [[row[c] for row in a] for c in range(d)]


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


def prepare(q: list, k: list, v: list) -> dict:
    """Everything a check needs from Q, K, V that does not depend on the row.

    q, k, v: (N, d) lists of rows of float32 values. Returns a dict with the
    inputs, V's columns ("vt", d lists of N, packed for exact sums:
    attention.columns), K's columns packed for the dot products ("kp",
    emulator.exact, or None), and prefix maxima of max|V_j|
    and ‖k_j‖ (so a causal row sees only its own keys). Formed once per
    input and shared by every chunk of rows (:func:`check_rows`).
    """
    n, d = len(q), len(q[0])
    vabs = [max(map(abs, row)) for row in v]
    knorm = [_norm(row) for row in k]
    vmax_prefix, kmax_prefix = [], []
    vm = km = 0.0
    for j in range(n):
        vm = max(vm, vabs[j])
        km = max(km, knorm[j])
        vmax_prefix.append(vm)
        kmax_prefix.append(km)
    # K's columns packed, so that a row's N dot products are one exact integer sum
    # with q's d entries as weights (emulator.exact); only for float32 Q.
    kp = exact.pack(_columns(k, d), q) if exact.is_float32(q) else None
    return {"q": q, "k": k, "n": n, "d": d, "vt": att.columns(v), "kp": kp,
            "vmax_prefix": vmax_prefix, "kmax_prefix": kmax_prefix}


def check_rows(kernel: str, q: list, k: list, v: list, causal: bool = False,
               workgroup_bytes: int = M_DEFAULT, rows: list | None = None,
               outputs: list | None = None, prepared: dict | None = None) -> dict:
    """Check some rows and return a partial report for :func:`merge`.

    Arguments as :func:`check_arrays`; ``rows`` (default: all of
    :func:`rows_to_check`) may be any chunk of them, and ``prepared`` the
    result of :func:`prepare` for these inputs (formed here when absent).
    The partial report holds, for its rows only: rows_done, max_abs_error
    and the worst row (worst_row, bound), max_bound, plain_max_abs_error,
    first_fail ([row, error, bound] of its first row over the bound, or
    None), nan_rows (all of them), and v_max (max |V| over every row, for
    the 2× rule's margin). Raises tiling.InputError for a tile that does not fit.
    """
    n, d = len(q), len(q[0])
    tiling = make_tiling(kernel, n, d, causal, workgroup_bytes)
    if rows is None:
        rows = rows_to_check(tiling)
    prep = prepared if prepared is not None else prepare(q, k, v)
    vt_all = prep["vt"]
    vmax_prefix, kmax_prefix = prep["vmax_prefix"], prep["kmax_prefix"]
    kp = prep.get("kp")

    bc = tiling.block_cols
    fused_kind = not stores_scores(kernel)
    run_mirror = mirrors.mirror_of(kernel) if outputs is None else None
    br = tiling.block_rows
    max_err = plain_err = max_bound = 0.0
    worst_bound = 0.0
    worst_row = None
    first_fail = None
    nan_rows = []
    o_lo, o_hi = math.inf, -math.inf  # the exact output's range over these rows
    inf, ninf = math.inf, -math.inf
    for i in rows:
        nk = _keys_for_row(i, n, causal)
        qi = q[i]
        # A causal row's weights meet only its first nk rows of V: the columns may
        # stay whole (attention._pv reads as many entries as there are weights).
        keys, vt = (k, vt_all) if nk == n else (k[:nk], vt_all)
        dots = exact.sums(qi, kp, 24) if kp is not None else None
        if dots is None:
            dots = att.dots_for_row(qi, keys)
        elif nk != n:
            del dots[nk:]
        s64 = att.scores64(dots, d)
        ref_o, _lse, p, shifted = att._reference(dots, vt, d, s64)
        o_lo, o_hi = min(o_lo, *ref_o), max(o_hi, *ref_o)
        bound = att.row_bound(p, s64, vmax_prefix[nk - 1], _norm(qi), kmax_prefix[nk - 1],
                              d, -(-nk // bc), shifted)
        s32 = att.scores32(dots, d) if (outputs is None or fused_kind) else None
        plain_e = None
        if fused_kind:
            po, _, plain_e = att._plain(dots, vt, d, s32)
        if outputs is not None:
            o = outputs[i]
        else:
            o = run_mirror({"dots": dots, "vt": vt, "d": d, "s32": s32, "plain_e": plain_e}, br, bc)["O"]
        err = 0.0
        bad = False
        for a, b in zip(o, ref_o, strict=True):
            if a != a or a == inf or a == ninf:
                bad = True
                continue
            e = abs(a - b)
            if e > err:
                err = e
        if bad:
            nan_rows.append(i)
            err = inf
        if fused_kind:
            pe = 0.0
            for a, b in zip(po, ref_o, strict=True):
                pe = max(pe, abs(a - b))
            plain_err = max(plain_err, pe)
        if err > max_err:
            max_err = err
            worst_bound = bound
            worst_row = i
        max_bound = max(max_bound, bound)
        if err > bound and first_fail is None:
            first_fail = [i, err, bound]
    return {
        "part": True, "kernel": kernel, "n": n, "d": d, "causal": bool(causal),
        "workgroup_bytes": tiling.workgroup_bytes,
        "rows_done": len(rows), "first_row": min(rows) if rows else None,
        "max_abs_error": max_err, "worst_row": worst_row, "bound": worst_bound,
        "max_bound": max_bound, "plain_max_abs_error": plain_err,
        "first_fail": first_fail, "nan_rows": nan_rows,
        "o_lo": o_lo, "o_hi": o_hi,
        "v_max": vmax_prefix[-1] if vmax_prefix else 0.0,
    }


def merge(parts: list, rows_planned: int | None = None) -> dict:
    """Merge partial reports of :func:`check_rows` into one check report.

    parts: partial reports of disjoint chunks of rows for one kernel and
    one input, in any order (JSON round trips are fine: "inf" and "nan"
    strings are read back as floats). rows_planned: how many rows the full
    check visits (default: the sum of the parts, i.e. complete). The report
    is the one :func:`check_arrays` gives, plus complete (bool),
    rows_planned and rows_done; when incomplete its verdict covers only the
    rows done and rows_description says so. Raises ValueError for no parts
    or parts of different checks.
    """
    if not parts:
        raise ValueError("merge needs at least one partial report")
    head = parts[0]
    key = ("kernel", "n", "d", "causal", "workgroup_bytes")
    for part in parts:
        if any(part[x] != head[x] for x in key):
            raise ValueError("partial reports of different checks cannot be merged")
    kernel, n, d, causal = head["kernel"], int(head["n"]), int(head["d"]), bool(head["causal"])
    tiling = make_tiling(kernel, n, d, causal, int(head["workgroup_bytes"]))
    fused_kind = not stores_scores(kernel)
    done = 0
    max_err = plain_err = max_bound = worst_bound = 0.0
    worst_row = None
    first_fail = None
    nan_rows = []
    o_lo, o_hi = math.inf, -math.inf
    for part in parts:
        done += int(part["rows_done"])
        o_lo, o_hi = min(o_lo, float(part["o_lo"])), max(o_hi, float(part["o_hi"]))
        err = float(part["max_abs_error"])
        row = part["worst_row"]
        if err > max_err or (err == max_err and err > 0.0 and row is not None
                             and (worst_row is None or row < worst_row)):
            max_err, worst_row, worst_bound = err, row, float(part["bound"])
        plain_err = max(plain_err, float(part["plain_max_abs_error"]))
        max_bound = max(max_bound, float(part["max_bound"]))
        ff = part["first_fail"]
        if ff is not None and (first_fail is None or ff[0] < first_fail[0]):
            first_fail = [int(ff[0]), float(ff[1]), float(ff[2])]
        nan_rows.extend(part["nan_rows"])
    if max_err == 0.0:
        worst_bound = max_bound
    margin = 8 * att.U * float(head["v_max"])
    fa_ok = (not fused_kind) or (max_err <= 2.0 * plain_err + margin)
    bound_ok = first_fail is None
    planned = done if rows_planned is None else int(rows_planned)
    complete = done >= planned
    if complete:
        description = describe_rows(rows_to_check(tiling) if planned != n else range(n), tiling)
    else:
        description = _("{done} of the {planned} rows planned (stopped early: the verdict covers only "
                        "these rows)").format(done=group(done), planned=group(planned))
    report = {
        "kernel": kernel, "n": n, "d": d, "causal": causal,
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
        "output_range": (o_hi - o_lo) if done else 0.0,
        "output_ulp": _ulp32(max(abs(o_lo), abs(o_hi))) if done else 0.0,
        "rows_checked": done,
        "rows_description": description,
        "nan_rows": sorted(nan_rows)[:10],
        "first_failing_row": None, "first_failing_tile": None,
        "first_failing_error": None, "first_failing_bound": None,
    }
    if rows_planned is not None:
        report.update(complete=complete, rows_planned=planned)
    if first_fail is not None:
        i, err, bound = first_fail
        report.update(first_failing_row=i, first_failing_tile=i // tiling.block_rows,
                      first_failing_error=err, first_failing_bound=bound)
    return report


def check_arrays(kernel: str, q: list, k: list, v: list, causal: bool = False,
                 workgroup_bytes: int = M_DEFAULT, rows: list | None = None,
                 outputs: list | None = None) -> dict:
    """Run ``kernel``'s float32 mirror (or take ``outputs``) and check it.

    q, k, v: (N, d) lists of rows of float32 values.
    kernel: a forward kernel of the manifest; its "mirror" key names the float32
      mirror to run (emulator.mirrors).
    outputs: optional (N, d) rows already computed elsewhere (a GPU's O read
      back); then these are checked instead of the mirror's.
    rows: row indices to check (default :func:`rows_to_check`).

    Returns a dict: passed (bool), bound_passed, fa_rule_passed,
    max_abs_error, bound (the bound of the worst row), max_bound,
    plain_max_abs_error, fa_rule_limit = fa_rule_twice_plain + fa_rule_margin
    (2 × the plain mirror's error + 8u·max|V|; None for plain), output_range
    (max − min of the exact O over the checked rows) and output_ulp (float32's
    spacing at the largest |O| there), rows_checked, rows_description,
    first_failing_row, first_failing_tile, first_failing_error,
    first_failing_bound, nan_rows (rows with NaN or inf), block_rows, block_cols.
    Raises tiling.InputError for a tile that does not fit.
    """
    n, d = len(q), len(q[0])
    if rows is None:
        rows = rows_to_check(make_tiling(kernel, n, d, causal, workgroup_bytes))
    part = check_rows(kernel, q, k, v, causal, workgroup_bytes, rows, outputs)
    report = merge([part])
    report["rows_description"] = describe_rows(rows, make_tiling(kernel, n, d, causal, workgroup_bytes))
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
