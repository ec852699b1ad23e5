"""The backward pass of attention in float64: exact gradients, the reference the
float32 mirrors (emulator.backward_mirrors) and the WGSL backward kernels are held to.

Shapes: Q, K, V, O, dO are (N, d) lists of rows of float32 values held as
Python floats; L (the forward's logsumexp) and D are N floats. One head.
Scores are scaled by τ = 1/√d; causal lets row i see keys j ≤ i; an optional
``mask`` (N lists of N bools, True = may attend) is combined with it, so a
row may see no key at all (its gradients are then zero, never NaN).

The gradients (FlashAttention, arXiv:2205.14135, Appendix B.2; FlashAttention-2,
arXiv:2307.08691, Algorithm 2), for the loss's gradient dO:

    P  = softmax(S),  S = τ·Q·Kᵀ (masked entries: P = 0)
    dV = Pᵀ·dO                      (N, d)
    dP = dO·Vᵀ                      (N, N)
    D_i = rowsum(dO_i ∘ O_i) = rowsum(dP_i ∘ P_i)
    dS = P ∘ (dP − D)               (N, N)
    dQ = τ·dS·K,  dK = τ·dSᵀ·Q      (N, d)

The identity D_i = Σ_j P_ij·dP_ij = Σ_c dO_ic·O_ic holds because O_i = Σ_j P_ij·V_j;
it lets a kernel form D from two (N, d) tensors instead of a row of the table.

Every sum is a ``math.fsum`` of exact float64 products (:func:`dot`); no
built-in ``sum()`` of floats. The helpers here (which keys a row sees, the
columns of a table, products that stop at a row's last key) are shared with
the mirrors and the bound (emulator.backward_bounds).
"""
from __future__ import annotations

import math
from operator import mul

from . import attention as att
from .attention import NEG_INF


def allowed_keys(n: int, causal: bool = False, mask: list | None = None) -> list:
    """For each row i, the sorted list of keys j it may attend to.

    Causal: j ≤ i. mask: optional N lists of N bools (True = may attend),
    combined with causal. Raises ValueError for a mask of the wrong shape.
    """
    if mask is not None and (len(mask) != n or any(len(row) != n for row in mask)):
        raise ValueError(f"mask must be {n} rows of {n} bools")
    rows = []
    for i in range(n):
        stop = i + 1 if causal else n
        if mask is None:
            rows.append(list(range(stop)))
        else:
            mi = mask[i]
            rows.append([j for j in range(stop) if mi[j]])
    return rows


def columns(rows: list, d: int) -> list:
    """The d columns of (N, d) ``rows``: column c is [row[c] for each row]."""
    return [[row[c] for row in rows] for c in range(d)]


def dot(a, b) -> float:
    """Σ a_i·b_i in float64: the exact products, summed by math.fsum (correctly rounded)."""
    return math.fsum(map(mul, a, b))


def row_products(rows: list, cols: list, keys: list, scale: float) -> list:
    """scale·(rows · colsᵀ) for (N, N) ``rows`` zero outside each row's keys and
    (d, N) ``cols``: each row's sum stops after its last key (float64, fsum)."""
    out = []
    for row, ks in zip(rows, keys, strict=True):
        head = row[:ks[-1] + 1] if ks else []
        out.append([scale * dot(head, col) for col in cols])
    return out


def column_products(table_columns: list, cols: list, keys: list, scale: float) -> list:
    """scale·(table_columns · colsᵀ) for (N, N) ``table_columns`` (column j of a
    table, zero for rows that do not see key j) and (d, N) ``cols``: each sum
    starts at the first row that sees key j (float64, fsum)."""
    n = len(table_columns)
    first = [n] * n
    for i, ks in enumerate(keys):
        for j in ks:
            if first[j] > i:
                first[j] = i
    out = []
    for column, f in zip(table_columns, first, strict=True):
        tail = column[f:]
        out.append([scale * dot(tail, col[f:]) for col in cols])
    return out


def forward64(q: list, k: list, v: list, causal: bool = False, mask: list | None = None):
    """Float64 attention: (O, L), O (N, d) rows, L the N logsumexps (−∞ for a row with no key).

    Source: FlashAttention (arXiv:2205.14135) §2.2, standard attention.
    """
    n, d = len(q), len(q[0])
    keys = allowed_keys(n, causal, mask)
    o, lse = [], []
    for i in range(n):
        ks = keys[i]
        vt = [[v[j][c] for j in ks] for c in range(d)]
        oi, li, _p = att.reference([dot(q[i], k[j]) for j in ks], vt, d)
        o.append(oi)
        lse.append(li)
    return o, lse


def reference(q: list, k: list, v: list, do: list, causal: bool = False,
              mask: list | None = None) -> dict:
    """Exact float64 gradients dQ, dK, dV of the float64 forward, for upstream dO.

    q, k, v, do: (N, d) rows. Returns a dict of lists:
      dQ, dK, dV (N, d); O (N, d); L (N); S (N, N, −∞ where masked);
      P, dP, dS (N, N, zero where masked);
      D (N) = rowsum(dO∘O); D_softmax (N) = rowsum(dP∘P) (what dS uses: the
      softmax Jacobian itself); identity_residual = max_i |D_i − D_softmax_i|.
    A row with no key has O = 0, L = −∞ and zero gradients.
    Source: FlashAttention (arXiv:2205.14135) Appendix B.2, eq. for dS.
    """
    n, d = len(q), len(q[0])
    tau = 1.0 / math.sqrt(d)
    keys = allowed_keys(n, causal, mask)
    vt = columns(v, d)
    zero = [0.0] * n
    o, lse, s_rows, p_rows, dp_rows, ds_rows, dvec, dsm = [], [], [], [], [], [], [], []
    for i in range(n):
        ks = keys[i]
        si = [NEG_INF] * n
        pi, dpi, dsi = zero[:], zero[:], zero[:]
        if not ks:
            o.append([0.0] * d)
            lse.append(NEG_INF)
            dvec.append(0.0)
            dsm.append(0.0)
        else:
            s = [dot(q[i], k[j]) * tau for j in ks]
            for j, sj in zip(ks, s, strict=True):
                si[j] = sj
            m = max(s)
            e = [math.exp(x - m) for x in s]
            total = math.fsum(e)
            for j, ej in zip(ks, e, strict=True):
                pi[j] = ej / total
            oi = [dot(pi, col) for col in vt]
            o.append(oi)
            lse.append(m + math.log(total))
            for j in ks:
                dpi[j] = dot(do[i], v[j])
            di = dot(pi, dpi)
            for j in ks:
                dsi[j] = pi[j] * (dpi[j] - di)
            dvec.append(dot(do[i], oi))
            dsm.append(di)
        s_rows.append(si)
        p_rows.append(pi)
        dp_rows.append(dpi)
        ds_rows.append(dsi)
    kt, qt, dot_ = columns(k, d), columns(q, d), columns(do, d)
    pt, dst = columns(p_rows, n), columns(ds_rows, n)
    dq = row_products(ds_rows, kt, keys, tau)
    dk = column_products(dst, qt, keys, tau)
    dv = column_products(pt, dot_, keys, 1.0)
    residual = max((abs(a - b) for a, b in zip(dvec, dsm, strict=True)), default=0.0)
    return {"dQ": dq, "dK": dk, "dV": dv, "O": o, "L": lse, "S": s_rows, "P": p_rows, "dP": dp_rows,
            "dS": ds_rows, "D": dvec, "D_softmax": dsm, "identity_residual": residual}
