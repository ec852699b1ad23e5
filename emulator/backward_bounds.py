"""The float32 error bound of the backward pass, per entry of dQ, dK and dV, and
the comparison that holds a float32 answer (a mirror's or a GPU's) to float64 within it.

Inputs as emulator.backward_reference; the exact tables come from its
:func:`~emulator.backward_reference.reference`. The bound is first order in
u = 2⁻²⁴ and ours (no paper states it): :func:`bounds` derives it term by term.
"""
from __future__ import annotations

import math

from . import attention as att
from .attention import U
from .backward_reference import allowed_keys, column_products, columns, dot, row_products


def _norm(row) -> float:
    return math.sqrt(dot(row, row))


def bounds(q: list, k: list, v: list, do: list, ref: dict, causal: bool = False,
           mask: list | None = None, block_cols: int = 1) -> dict:
    """First-order float32 error bound for every entry of dQ, dK and dV.

    Derived by us for the lesson, in the spirit of emulator.attention.row_bound
    (no paper states it); terms in u² are dropped. u = 2⁻²⁴; one ulp of a
    float32 result is at most 2u of it. For row i with n_i keys in T_i key
    tiles of the forward, exact scores s_ij, exact P, dP, dS, D (``ref``,
    from emulator.backward_reference.reference), m_i = max_j s_ij, x_ij = m_i − s_ij, X_i = max_j x_ij,
    y_ij = L_i − s_ij, τ = 1/√d:

    * score S_ij (d products and additions, the scaling, f32(τ)):
      σ_ij = (d+2)·u·τ·‖q_i‖·‖k_j‖ (Cauchy–Schwarz); Δs_i = max_j σ_ij.
    * saved L_i from the fused forward: the logsumexp moves by at most Δs_i
      under score errors; each exp carries (3 + 2|x|) ulp (WGSL §17.7's
      accuracy of exp) plus u|x| from rounding its argument; l adds n_i terms,
      and each of T_i tiles rescales it (2u) by an α with its own exp error;
      log has 2⁻²¹ = 8u absolute error on [0.5, 2] and 3 ulp elsewhere; then
      two roundings:
      λ_i = Δs_i + u·[Σ_j P_ij(6 + 5x_ij) + n_i + 8T_i + 5X_i + 8 + 7(L_i − m_i) + |L_i|].
    * P_ij = exp(S_ij − L_i), relative error ρ_ij = σ_ij + λ_i + (6 + 5y_ij)·u.
    * dP_ij = dO_i·v_j: π_ij = d·u·‖dO_i‖·‖v_j‖.
    * D_i = dO_i·O_i with the forward's O (each entry within ω_i, its
      row_bound): δD_i = ω_i·Σ_c|dO_ic| + d·u·Σ_c|dO_ic·O_ic|.
    * dS_ij = P_ij·(dP_ij − D_i) with two roundings:
      η_ij = P_ij·[(ρ_ij + 2u)·|dP_ij − D_i| + π_ij + δD_i].
    * sums: with q_j rows seeing key j, an entry of dV adds q_j products
      (rounded: (q_j + 1)u), and dK and dQ two more roundings for the scaling:
        |δdV_jc| ≤ Σ_i P_ij·|dO_ic|·(ρ_ij + (q_j + 1)u)
        |δdK_jc| ≤ τ·Σ_i (η_ij + (q_j + 3)u·|dS_ij|)·|q_ic|
        |δdQ_ic| ≤ τ·Σ_j (η_ij + (n_i + 3)u·|dS_ij|)·|k_jc|

    A row with no key, or a key no row sees, has bound 0 and must come out exactly 0.
    Returns {"dQ", "dK", "dV"}: (N, d) lists of bounds (float64).
    """
    n, d = len(q), len(q[0])
    tau = 1.0 / math.sqrt(d)
    keys = allowed_keys(n, causal, mask)
    seen_by = [0] * n
    for ks in keys:
        for j in ks:
            seen_by[j] += 1
    qn = [_norm(r) for r in q]
    kn = [_norm(r) for r in k]
    vn = [_norm(r) for r in v]
    don = [_norm(r) for r in do]
    vabs = [max(abs(x) for x in r) for r in v]
    s_tab, p_tab, dp_tab, ds_tab = ref["S"], ref["P"], ref["dP"], ref["dS"]
    a_tab = [[0.0] * n for _ in range(n)]
    bk_tab = [[0.0] * n for _ in range(n)]
    bq_tab = [[0.0] * n for _ in range(n)]
    for i in range(n):
        ks = keys[i]
        if not ks:
            continue
        si = [s_tab[i][j] for j in ks]
        pi = [p_tab[i][j] for j in ks]
        m, lse = max(si), ref["L"][i]
        ni, ti = len(ks), -(-len(ks) // block_cols)
        kmax = max(kn[j] for j in ks)
        ds_i = (d + 2) * U * tau * qn[i] * kmax
        spread = math.fsum(pj * (6.0 + 5.0 * (m - sj)) for pj, sj in zip(pi, si, strict=True))
        lam = ds_i + U * (spread + ni + 8 * ti + 5 * (m - min(si)) + 8 + 7 * (lse - m) + abs(lse))
        omega = att.row_bound(pi, si, max(vabs[j] for j in ks), qn[i], kmax, d, ti)
        dabs = [abs(x) for x in do[i]]
        dd = omega * math.fsum(dabs) + d * U * math.fsum(abs(a * b) for a, b in zip(do[i], ref["O"][i], strict=True))
        dsm = ref["D_softmax"][i]
        for j in ks:
            p = p_tab[i][j]
            rho = (d + 2) * U * tau * qn[i] * kn[j] + lam + (6.0 + 5.0 * (lse - s_tab[i][j])) * U
            eta = p * ((rho + 2 * U) * abs(dp_tab[i][j] - dsm) + d * U * don[i] * vn[j] + dd)
            ads = abs(ds_tab[i][j])
            a_tab[i][j] = p * (rho + (seen_by[j] + 1) * U)
            bk_tab[i][j] = eta + (seen_by[j] + 3) * U * ads
            bq_tab[i][j] = eta + (ni + 3) * U * ads
    qa = columns([[abs(x) for x in r] for r in q], d)
    ka = columns([[abs(x) for x in r] for r in k], d)
    da = columns([[abs(x) for x in r] for r in do], d)
    at, bkt = columns(a_tab, n), columns(bk_tab, n)
    return {
        "dQ": row_products(bq_tab, ka, keys, tau),
        "dK": column_products(bkt, qa, keys, tau),
        "dV": column_products(at, da, keys, 1.0),
    }


def compare(got: list, want: list, bound: list) -> dict:
    """Hold ``got`` to ``want`` entry by entry within ``bound`` (three (N, d) lists).

    An entry passes when |got − want| ≤ its bound; NaN or ±inf fails (error inf),
    and a zero bound admits only an exact answer. Returns {"passed",
    "max_abs_error", "max_bound", "worst_ratio" (largest error ÷ bound),
    "worst_error", "worst_bound", "worst_row", "worst_col", "nan_entries"}.
    """
    worst = None  # (ratio, err, bound, row, col)
    max_err = max_bound = 0.0
    bad = 0
    for i, (g_row, w_row, b_row) in enumerate(zip(got, want, bound, strict=True)):
        for c, (g, w, b) in enumerate(zip(g_row, w_row, b_row, strict=True)):
            if g != g or g in (math.inf, -math.inf):
                bad += 1
                err = math.inf
            else:
                err = abs(g - w)
            ratio = err / b if b > 0 else (0.0 if err == 0 else math.inf)
            max_err = max(max_err, err)
            max_bound = max(max_bound, b)
            if worst is None or ratio > worst[0]:
                worst = (ratio, err, b, i, c)
    ratio, err, b, i, c = worst
    return {"passed": ratio <= 1.0, "max_abs_error": max_err, "max_bound": max_bound,
            "worst_ratio": ratio, "worst_error": err, "worst_bound": b, "worst_row": i,
            "worst_col": c, "nan_entries": bad}
