"""The backward pass of attention: exact float64 gradients, float32 mirrors of
two backward kernels (and one broken on purpose), their check, and the bytes
each moves to and from global memory.

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

Kernels ("direction": "backward" in kernels_wgsl/manifest.json)
-------------------------------------------------------------------
Tiling rule (ours, from the workgroup memory M as the forward's): the forward's
B_r = (M/2)/(4d) and B_c = B_r/2 (emulator.tiling.lesson_blocks). Every
backward pass keeps one tile on the bench (workgroup memory) and streams
another past it, each within half of M:

* a query-tile pass holds B_r rows of Q on the bench (dO's row and the dQ
  accumulator sit in each thread's registers, as O's accumulator does in the
  forward) and streams K and V in tiles of B_c rows;
* a key-tile pass holds B_c rows of K and of V (2·B_c·4d = M/2 bytes) and
  streams the query tiles that reach it, B_c rows of Q and of dO at a time
  (the other M/2), with their L and D.

Causal skips every tile above the diagonal, in every pass, and both walks
visit the same (query tile, key tile) pairs: a query tile ending at row r_end
streams keys [0, ⌈r_end/B_c⌉·B_c) (as the forward); a key tile starting at key
k_0 streams the rows of every query tile whose last row reaches it, rows
[⌊k_0/B_r⌋·B_r, N) (emulator.tiling.Tiling.queries_visiting).

fused-backward (no atomics: WGSL has no float atomics; FA2 Algorithm 2 split
into two kernels so that each workgroup writes only its own rows)
  preprocess (once):      read O N·d, dO N·d;                   write D N
  dkv (per key tile of c rows, qv query rows streamed past it):
                          read K c·d, V c·d, Q qv·d, dO qv·d, L qv, D qv;
                          write dK c·d, dV c·d
      P is recomputed from the saved L: P_ij = exp(S_ij − L_i) (no max, no
      sum: L already holds both); dV += Pᵀ·dO, dK += dSᵀ·Q, then dK ×= τ.
  dq (per query tile of r rows, kv keys streamed past it):
                          read Q r·d, dO r·d, L r, D r, K kv·d, V kv·d;
                          write dQ r·d
      S, P, dP and dS are recomputed a second time; dQ += dS·K, then ×= τ.

fused-backward-no-D (broken on purpose): as fused-backward but dS = P ∘ dP,
  with D left out (and no preprocess pass). dV does not use D and stays right;
  dQ and dK are wrong, and the check says so.

plain-backward (every N×N table goes through global memory)
  preprocess (once):      read O N·d, dO N·d;                   write D N
  scores (query tiles):   read Q r·d, K kv·d;                   write S r·kv
  softmax (query tiles):  read S r·kv, L r;                     write P r·kv
  dp (query tiles):       read dO r·d, V kv·d;                  write dP r·kv
  ds (query tiles):       read P r·kv, dP r·kv, D r;            write dS r·kv
  dq (query tiles):       read dS r·kv, K kv·d;                 write dQ r·d
  dkv (key tiles):        read dS c·qv, P c·qv, Q qv·d, dO qv·d; write dK c·d, dV c·d

Every element is a float32, 4 bytes. :func:`closed_form` sums these over
all tiles; the mirrors tally the same loads and stores as they run, and a
test holds the two equal, and equal to the generic walk of emulator.traffic
over the passes kernels_wgsl/manifest.json declares (the counts the lab shows).

Float32 rounding points (as emulator.attention; "f32" = round to float32)
-------------------------------------------------------------------------
    S_ij  = f32(f32(q_i·k_j) · f32(τ))
    P_ij  = f32(exp(f32(S_ij − L_i)))         0 where masked or L_i = −∞
    dP_ij = f32(dO_i·v_j)
    D_i   = f32(dO_i·O_i)
    dS_ij = f32(P_ij · f32(dP_ij − D_i))
    fused: each streamed tile's contribution to an accumulator entry is one
           dot product, rounded once, then added to the accumulator (rounded);
           at the end dK and dQ are f32(acc · f32(τ)).
    plain: each entry of dV, dK·τ⁻¹ and dQ·τ⁻¹ is one dot product over all its
           rows or keys, rounded once; then scaled as above.
A dot product is formed exactly (math.fsum of exact products) and rounded
once, where a GPU rounds after every addition: the same simplification as
emulator.attention, and inside the bound of :func:`bounds`, which allows for
a GPU's roundings.

No built-in ``sum()`` of floats: sums use ``math.fsum``.
"""
from __future__ import annotations

import math
import random
from array import array
from operator import mul

from . import attention as att
from .attention import NEG_INF, U, f32, f32s
from .i18n import _, group
from .inputs import random_qkv
from .tiling import BYTES, M_DEFAULT, MANIFEST, TENSOR_ORDER, InputError, lesson_blocks, make_tiling

#: The lab's kernel names (with "direction": "backward") → manifest entries.
KERNELS = {
    "plain": "plain-backward",
    "fused": "fused-backward",
    "fused-no-D": "fused-backward-no-D",
}
#: The forward kernel whose output each backward kernel differentiates (for backward ÷ forward).
FORWARD_OF = {"plain-backward": "plain", "fused-backward": "fused", "fused-backward-no-D": "fused",
              "plain-backward-fast": "plain", "fused-backward-fast": "fused"}
#: Tensors a backward kernel may move, in the manifest's display order.
TENSORS = TENSOR_ORDER
#: Check forms N×N tables in Python: it stops at this N (counts go to 65,536).
CHECK_MAX_N = 256


def too_large_message(n: int) -> str:
    """Why the backward check refuses N > CHECK_MAX_N, in the active language."""
    return _("The backward check forms N×N tables in Python, so it stops at N = {limit}; N = {n} would take "
             "too long. Count works at any N.").format(limit=group(CHECK_MAX_N), n=group(n))


def kernel_name(kernel: str) -> str:
    """Manifest name of a backward kernel given its lab name or manifest name.

    Any manifest kernel with "direction": "backward" is one (the tuned ones have no lab name).
    Raises InputError (field "kernel") for any other name.
    """
    if kernel in KERNELS:
        return KERNELS[kernel]
    if kernel in KERNELS.values() or MANIFEST["kernels"].get(kernel, {}).get("direction") == "backward":
        return kernel  # the tuned ones (issue 22) by their manifest names
    raise InputError("kernel", _("Unknown backward kernel {kernel}; choose one of {names}.").format(
        kernel=repr(kernel), names=", ".join(KERNELS)))


# ---------------------------------------------------------------------------
# Which keys each row sees.

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


def _columns(rows: list, d: int) -> list:
    return [[row[c] for row in rows] for c in range(d)]


def _dot(a, b) -> float:
    return math.fsum(map(mul, a, b))


def _row_products(rows: list, cols: list, keys: list, scale: float) -> list:
    """scale·(rows · colsᵀ) for (N, N) ``rows`` zero outside each row's keys and
    (d, N) ``cols``: each row's sum stops after its last key (float64, fsum)."""
    out = []
    for row, ks in zip(rows, keys, strict=True):
        head = row[:ks[-1] + 1] if ks else []
        out.append([scale * _dot(head, col) for col in cols])
    return out


def _column_products(columns: list, cols: list, keys: list, scale: float) -> list:
    """scale·(columns · colsᵀ) for (N, N) ``columns`` (column j of a table, zero
    for rows that do not see key j) and (d, N) ``cols``: each sum starts at the
    first row that sees key j (float64, fsum)."""
    n = len(columns)
    first = [n] * n
    for i, ks in enumerate(keys):
        for j in ks:
            if first[j] > i:
                first[j] = i
    out = []
    for column, f in zip(columns, first, strict=True):
        tail = column[f:]
        out.append([scale * _dot(tail, col[f:]) for col in cols])
    return out


# ---------------------------------------------------------------------------
# Float64: the forward and its exact gradients.

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
        oi, li, _p = att.reference([_dot(q[i], k[j]) for j in ks], vt, d)
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
    vt = _columns(v, d)
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
            s = [_dot(q[i], k[j]) * tau for j in ks]
            for j, sj in zip(ks, s, strict=True):
                si[j] = sj
            m = max(s)
            e = [math.exp(x - m) for x in s]
            total = math.fsum(e)
            for j, ej in zip(ks, e, strict=True):
                pi[j] = ej / total
            oi = [_dot(pi, col) for col in vt]
            o.append(oi)
            lse.append(m + math.log(total))
            for j in ks:
                dpi[j] = _dot(do[i], v[j])
            di = _dot(pi, dpi)
            for j in ks:
                dsi[j] = pi[j] * (dpi[j] - di)
            dvec.append(_dot(do[i], oi))
            dsm.append(di)
        s_rows.append(si)
        p_rows.append(pi)
        dp_rows.append(dpi)
        ds_rows.append(dsi)
    kt, qt, dot_ = _columns(k, d), _columns(q, d), _columns(do, d)
    pt, dst = _columns(p_rows, n), _columns(ds_rows, n)
    dq = _row_products(ds_rows, kt, keys, tau)
    dk = _column_products(dst, qt, keys, tau)
    dv = _column_products(pt, dot_, keys, 1.0)
    residual = max((abs(a - b) for a, b in zip(dvec, dsm, strict=True)), default=0.0)
    return {"dQ": dq, "dK": dk, "dV": dv, "O": o, "L": lse, "S": s_rows, "P": p_rows, "dP": dp_rows,
            "dS": ds_rows, "D": dvec, "D_softmax": dsm, "identity_residual": residual}


# ---------------------------------------------------------------------------
# Float32 mirrors.

class _Tally:
    """Elements loaded and stored, per pass and tensor, as a mirror runs."""

    def __init__(self):
        self.passes: dict = {}

    def _slot(self, name: str, kind: str) -> dict:
        return self.passes.setdefault(name, {"reads": {}, "writes": {}})[kind]

    def read(self, name: str, tensor: str, elements: int) -> None:
        slot = self._slot(name, "reads")
        slot[tensor] = slot.get(tensor, 0) + elements

    def write(self, name: str, tensor: str, elements: int) -> None:
        slot = self._slot(name, "writes")
        slot[tensor] = slot.get(tensor, 0) + elements

    def as_bytes(self) -> dict:
        """{"passes": [{"name", "reads", "writes"}], "reads", "writes", "total_bytes"} in bytes."""
        return _totals([{"name": name, "reads": {t: e * BYTES for t, e in io["reads"].items()},
                         "writes": {t: e * BYTES for t, e in io["writes"].items()}}
                        for name, io in self.passes.items()])


def _totals(passes: list) -> dict:
    reads = dict.fromkeys(TENSORS, 0)
    writes = dict.fromkeys(TENSORS, 0)
    for p in passes:
        for t, b in p["reads"].items():
            reads[t] += b
        for t, b in p["writes"].items():
            writes[t] += b
    total = 0
    for t in TENSORS:
        total += reads[t] + writes[t]
    return {"passes": passes, "reads": reads, "writes": writes, "total_bytes": total}


def _exp(x: float) -> float:
    """exp that overflows to inf, as float32 hardware does, instead of raising."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _may_attend(n: int, causal: bool, mask: list | None) -> list:
    keys = allowed_keys(n, causal, mask)
    ok = []
    for ks in keys:
        row = bytearray(n)
        for j in ks:
            row[j] = 1
        ok.append(row)
    return ok


def _preprocess(o: list, do: list, tally: _Tally) -> list:
    """D_i = f32(dO_i·O_i) for every row (one pass over two (N, d) tensors)."""
    n, d = len(o), len(o[0])
    tally.read("preprocess", "O", n * d)
    tally.read("preprocess", "dO", n * d)
    tally.write("preprocess", "D", n)
    return [f32(_dot(do[i], o[i])) for i in range(n)]


def _element(qi, kj, scale, lse_i, doi, vj, di):
    """(P_ij, dS_ij) in float32 at the kernels' rounding points (module docstring).

    di = None leaves D out (the broken kernel): dS = P ∘ dP.
    """
    s = f32(f32(_dot(qi, kj)) * scale)
    p = f32(_exp(f32(s - lse_i)))
    dp = f32(_dot(doi, vj))
    ds = f32(p * (dp if di is None else f32(dp - di)))
    return p, ds


def _blocks(d: int, workgroup_bytes: int, block_rows, block_cols):
    if block_rows is None or block_cols is None:
        return lesson_blocks(d, workgroup_bytes)
    if block_rows % block_cols:
        raise ValueError(f"B_r = {block_rows} must be a multiple of B_c = {block_cols}")
    return block_rows, block_cols


def fused(q: list, k: list, v: list, o: list, lse: list, do: list, causal: bool = False,
          mask: list | None = None, workgroup_bytes: int = M_DEFAULT,
          block_rows: int | None = None, block_cols: int | None = None, use_d: bool = True):
    """Float32 mirror of the fused backward (``fused-backward``; ``use_d=False``: ``fused-backward-no-D``).

    q, k, v, do: (N, d) float32 rows; o (N, d) and lse (N) are the forward's
    saved O and L (float32; L = −∞ for a row with no key). Tiles from
    ``workgroup_bytes`` (module docstring) unless block_rows/block_cols are given.

    Three passes (FlashAttention-2, arXiv:2307.08691, Algorithm 2, with dQ
    moved to its own pass so no float atomics are needed): preprocess D; dkv,
    one workgroup per key tile, streaming the query tiles that see it; dq, one
    workgroup per query tile, streaming the key tiles it sees. P is always
    exp(S − L) with the saved L: no running max or sum in the backward.

    Returns (dQ, dK, dV, traffic): three (N, d) lists of float32 values and
    the loads and stores it made (:meth:`_Tally.as_bytes`, bytes).
    The emulation computes each (P_ij, dS_ij) once and reuses it in the dq
    pass, where the kernel recomputes it: the same function of the same
    float32 inputs, so the same float32 values.
    """
    n, d = len(q), len(q[0])
    br, bc = _blocks(d, workgroup_bytes, block_rows, block_cols)
    scale = f32(1.0 / math.sqrt(d))
    ok = _may_attend(n, causal, mask)
    tally = _Tally()
    dvec = _preprocess(o, do, tally) if use_d else [None] * n
    qt, kt, dot_ = _columns(q, d), _columns(k, d), _columns(do, d)
    p_tab = [[0.0] * n for _ in range(n)]
    ds_tab = [[0.0] * n for _ in range(n)]
    dk = [None] * n
    dv = [None] * n

    # dkv: one workgroup per key tile [k0, k1); K and V tiles stay on the bench.
    for k0 in range(0, n, bc):
        k1 = min(n, k0 + bc)
        c = k1 - k0
        tally.read("dkv", "K", c * d)
        tally.read("dkv", "V", c * d)
        acc_v = [[0.0] * d for _ in range(c)]
        acc_k = [[0.0] * d for _ in range(c)]
        # causal: the query tiles whose last row reaches k0, B_c rows at a time
        for q0 in range((k0 // br) * br if causal else 0, n, bc):
            q1 = min(n, q0 + bc)
            rows = q1 - q0
            tally.read("dkv", "Q", rows * d)
            tally.read("dkv", "dO", rows * d)
            tally.read("dkv", "L", rows)
            if use_d:
                tally.read("dkv", "D", rows)
            q_sl = [col[q0:q1] for col in qt]
            do_sl = [col[q0:q1] for col in dot_]
            for jj in range(c):
                j = k0 + jj
                pcol = [0.0] * rows
                dscol = [0.0] * rows
                seen = False
                for ii in range(rows):
                    i = q0 + ii
                    if ok[i][j] and lse[i] != NEG_INF:
                        p, ds = _element(q[i], k[j], scale, lse[i], do[i], v[j], dvec[i])
                        pcol[ii] = p_tab[i][j] = p
                        dscol[ii] = ds_tab[i][j] = ds
                        seen = True
                if not seen:
                    continue
                av, ak = acc_v[jj], acc_k[jj]
                for ci in range(d):
                    av[ci] = f32(av[ci] + f32(_dot(pcol, do_sl[ci])))
                    ak[ci] = f32(ak[ci] + f32(_dot(dscol, q_sl[ci])))
        for jj in range(c):
            dv[k0 + jj] = acc_v[jj]
            dk[k0 + jj] = f32s(x * scale for x in acc_k[jj])
        tally.write("dkv", "dK", c * d)
        tally.write("dkv", "dV", c * d)

    # dq: one workgroup per query tile [r0, r1); Q stays on the bench.
    dq = []
    for r0 in range(0, n, br):
        r1 = min(n, r0 + br)
        r = r1 - r0
        for name, elements in (("Q", r * d), ("dO", r * d), ("L", r), ("D", r)):
            if name != "D" or use_d:
                tally.read("dq", name, elements)
        kv = min(n, -(-r1 // bc) * bc) if causal else n
        acc = [[0.0] * d for _ in range(r)]
        for k0 in range(0, kv, bc):
            k1 = min(n, k0 + bc)
            tally.read("dq", "K", (k1 - k0) * d)
            tally.read("dq", "V", (k1 - k0) * d)
            k_sl = [col[k0:k1] for col in kt]
            for ii in range(r):
                dsrow = ds_tab[r0 + ii][k0:k1]
                if not any(dsrow):
                    continue
                a = acc[ii]
                for ci in range(d):
                    a[ci] = f32(a[ci] + f32(_dot(dsrow, k_sl[ci])))
        dq.extend(f32s(x * scale for x in row) for row in acc)
        tally.write("dq", "dQ", r * d)
    return dq, dk, dv, tally.as_bytes()


def fused_no_d(q, k, v, o, lse, do, causal=False, mask=None, workgroup_bytes=M_DEFAULT,
               block_rows=None, block_cols=None):
    """The broken control: :func:`fused` with D left out (dS = P ∘ dP)."""
    return fused(q, k, v, o, lse, do, causal, mask, workgroup_bytes, block_rows, block_cols,
                 use_d=False)


def plain(q: list, k: list, v: list, o: list, lse: list, do: list, causal: bool = False,
          mask: list | None = None, workgroup_bytes: int = M_DEFAULT,
          block_rows: int | None = None, block_cols: int | None = None):
    """Float32 mirror of the plain backward (``plain-backward``).

    Same inputs as :func:`fused`. Seven passes, each a dispatch of its own,
    that write S, P, dP and dS to global memory and read them back (module
    docstring; the standard backward of FlashAttention, arXiv:2205.14135,
    Appendix B, Algorithm 3, with S and P recomputed from the saved L and D
    from dO∘O, as the fused kernel does, so only the memory trips differ).
    Entries outside a row's keys are stored as S = −∞, P = dP = dS = 0.

    Returns (dQ, dK, dV, traffic) as :func:`fused`.
    """
    n, d = len(q), len(q[0])
    br, bc = _blocks(d, workgroup_bytes, block_rows, block_cols)
    scale = f32(1.0 / math.sqrt(d))
    ok = _may_attend(n, causal, mask)
    tally = _Tally()
    dvec = _preprocess(o, do, tally)
    s_tab = [[NEG_INF] * n for _ in range(n)]
    p_tab = [[0.0] * n for _ in range(n)]
    dp_tab = [[0.0] * n for _ in range(n)]
    ds_tab = [[0.0] * n for _ in range(n)]
    tiles = []
    for r0 in range(0, n, br):
        r1 = min(n, r0 + br)
        tiles.append((r0, r1, min(n, -(-r1 // bc) * bc) if causal else n))

    def each_pass(name, reads, writes):
        """Tally one query-tile pass: (tensor, shape) pairs, shape "r*d", "kv*d", "r*kv" or "r"."""
        for r0, r1, kv in tiles:
            r = r1 - r0
            size = {"r*d": r * d, "kv*d": kv * d, "r*kv": r * kv, "r": r}
            for tensor, shape in reads:
                tally.read(name, tensor, size[shape])
            for tensor, shape in writes:
                tally.write(name, tensor, size[shape])

    allowed = [(i, j) for i in range(n) for j in range(n) if ok[i][j] and lse[i] != NEG_INF]

    each_pass("scores", (("Q", "r*d"), ("K", "kv*d")), (("S", "r*kv"),))
    for i, j in allowed:
        s_tab[i][j] = f32(f32(_dot(q[i], k[j])) * scale)
    each_pass("softmax", (("S", "r*kv"), ("L", "r")), (("P", "r*kv"),))
    for i, j in allowed:
        p_tab[i][j] = f32(_exp(f32(s_tab[i][j] - lse[i])))
    each_pass("dp", (("dO", "r*d"), ("V", "kv*d")), (("dP", "r*kv"),))
    for i, j in allowed:
        dp_tab[i][j] = f32(_dot(do[i], v[j]))
    each_pass("ds", (("P", "r*kv"), ("dP", "r*kv"), ("D", "r")), (("dS", "r*kv"),))
    for i, j in allowed:
        ds_tab[i][j] = f32(p_tab[i][j] * f32(dp_tab[i][j] - dvec[i]))
    each_pass("dq", (("dS", "r*kv"), ("K", "kv*d")), (("dQ", "r*d"),))
    kt = _columns(k, d)
    dq = []
    for r0, r1, kv in tiles:
        for i in range(r0, r1):
            row = ds_tab[i][:kv]
            dq.append(f32s(f32(_dot(row, col)) * scale for col in kt))
    # dkv: one workgroup per key tile, reading the columns of dS and P below the diagonal.
    qt, dot_ = _columns(q, d), _columns(do, d)
    dk, dv = [], []
    for k0 in range(0, n, bc):
        k1 = min(n, k0 + bc)
        c = k1 - k0
        first = (k0 // br) * br if causal else 0  # the query tiles that reach this key tile
        qv = n - first
        for tensor, elements in (("dS", c * qv), ("P", c * qv), ("Q", qv * d), ("dO", qv * d)):
            tally.read("dkv", tensor, elements)
        tally.write("dkv", "dK", c * d)
        tally.write("dkv", "dV", c * d)
        q_sl = [col[first:] for col in qt]
        do_sl = [col[first:] for col in dot_]
        for j in range(k0, k1):
            ds_col = [ds_tab[i][j] for i in range(first, n)]
            p_col = [p_tab[i][j] for i in range(first, n)]
            dk.append(f32s(f32(_dot(ds_col, col)) * scale for col in q_sl))
            dv.append(f32s(_dot(p_col, col) for col in do_sl))
    return dq, dk, dv, tally.as_bytes()


MIRRORS = {"plain-backward": plain, "fused-backward": fused, "fused-backward-no-D": fused_no_d}


def mirror_of(kernel: str):
    """The float32 mirror of a backward kernel: MIRRORS, or the function the manifest's
    "mirror" names in this module ("backward.fused" for fused-backward-fast)."""
    name = kernel_name(kernel)
    if name in MIRRORS:
        return MIRRORS[name]
    module, _dot, func = MANIFEST["kernels"][name]["mirror"].partition(".")
    if module != "backward" or func not in ("plain", "fused", "fused_no_d"):
        raise InputError("kernel", f"{name}: no backward mirror {MANIFEST['kernels'][name]['mirror']!r}")
    return {"plain": plain, "fused": fused, "fused_no_d": fused_no_d}[func]


# ---------------------------------------------------------------------------
# The error bound.

def _norm(row) -> float:
    return math.sqrt(_dot(row, row))


def bounds(q: list, k: list, v: list, do: list, ref: dict, causal: bool = False,
           mask: list | None = None, block_cols: int = 1) -> dict:
    """First-order float32 error bound for every entry of dQ, dK and dV.

    Derived by us for the lesson, in the spirit of emulator.attention.row_bound
    (no paper states it); terms in u² are dropped. u = 2⁻²⁴; one ulp of a
    float32 result is at most 2u of it. For row i with n_i keys in T_i key
    tiles of the forward, exact scores s_ij, exact P, dP, dS, D (``ref``,
    from :func:`reference`), m_i = max_j s_ij, x_ij = m_i − s_ij, X_i = max_j x_ij,
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
    qa = _columns([[abs(x) for x in r] for r in q], d)
    ka = _columns([[abs(x) for x in r] for r in k], d)
    da = _columns([[abs(x) for x in r] for r in do], d)
    at, bkt = _columns(a_tab, n), _columns(bk_tab, n)
    return {
        "dQ": _row_products(bq_tab, ka, keys, tau),
        "dK": _column_products(bkt, qa, keys, tau),
        "dV": _column_products(at, da, keys, 1.0),
    }


# ---------------------------------------------------------------------------
# Bytes, in closed form.

def closed_form(kernel: str, n: int, d: int, causal: bool = False,
                workgroup_bytes: int = M_DEFAULT, block_rows: int | None = None,
                block_cols: int | None = None) -> dict:
    """Bytes each pass of a backward kernel reads and writes, per tensor, from formulas.

    kernel: "plain", "fused", "fused-no-D" or their manifest names.
    With R = B_r, B = B_c, k = R/B, T = ⌈N/R⌉ query tiles, T_c = ⌈N/B⌉ key
    tiles; causal key tile t is streamed qv_t = N − ⌊t/k⌋·R query rows; with
    G = ⌊T_c/k⌋ and g = T_c mod k, Σ_t ⌊t/k⌋ = k·G(G−1)/2 + g·G:
      keys visited over query tiles  ΣKV = T·N, causal R·T(T−1)/2 + N;
      table entries over query tiles ΣS = N², causal R²·T(T−1)/2 + (N − (T−1)R)·N;
      query rows over key tiles      ΣQV = T_c·N, causal T_c·N − R·(k·G(G−1)/2 + g·G);
      table entries over key tiles   ΣC = N², causal B·(ΣQV − qv_last) + c_last·qv_last,
        c_last = N − (T_c−1)B the last key tile's rows, qv_last = N − ⌊(T_c−1)/k⌋·R.
    Each pass's elements (module docstring) summed with these, times 4 bytes.
    Returns {"kernel", "block_rows", "block_cols", "passes": [{"name", "reads",
    "writes"}], "reads", "writes", "total_bytes"} (bytes, per tensor in TENSORS).
    Raises InputError for an unknown kernel or a tile that does not fit.
    """
    name = kernel_name(kernel)
    r, b = _blocks(d, workgroup_bytes, block_rows, block_cols)
    t, tc = -(-n // r), -(-n // b)
    if causal:
        skv = r * t * (t - 1) // 2 + n
        ss = r * r * t * (t - 1) // 2 + (n - (t - 1) * r) * n
        per = r // b
        groups, extra = divmod(tc, per)
        sqv = tc * n - r * (per * groups * (groups - 1) // 2 + extra * groups)
        qv_last = n - ((tc - 1) // per) * r
        sc = b * (sqv - qv_last) + (n - (tc - 1) * b) * qv_last
    else:
        skv, ss, sqv, sc = t * n, n * n, tc * n, n * n
    nd = n * d
    pre = ("preprocess", {"O": nd, "dO": nd}, {"D": n})
    if name == "plain-backward":
        passes = [
            pre,
            ("scores", {"Q": nd, "K": skv * d}, {"S": ss}),
            ("softmax", {"S": ss, "L": n}, {"P": ss}),
            ("dp", {"dO": nd, "V": skv * d}, {"dP": ss}),
            ("ds", {"P": ss, "dP": ss, "D": n}, {"dS": ss}),
            ("dq", {"dS": ss, "K": skv * d}, {"dQ": nd}),
            ("dkv", {"dS": sc, "P": sc, "Q": sqv * d, "dO": sqv * d}, {"dK": nd, "dV": nd}),
        ]
    else:
        dkv = {"K": nd, "V": nd, "Q": sqv * d, "dO": sqv * d, "L": sqv, "D": sqv}
        dq = {"Q": nd, "dO": nd, "L": n, "D": n, "K": skv * d, "V": skv * d}
        passes = [pre, ("dkv", dkv, {"dK": nd, "dV": nd}), ("dq", dq, {"dQ": nd})]
        if name == "fused-backward-no-D":
            del dkv["D"], dq["D"]
            passes = passes[1:]
    out = _totals([{"name": p, "reads": {k_: e * BYTES for k_, e in rd.items()},
                    "writes": {k_: e * BYTES for k_, e in wr.items()}} for p, rd, wr in passes])
    out.update(kernel=name, n=n, d=d, causal=bool(causal), block_rows=r, block_cols=b,
               query_tiles=t, key_tiles=tc)
    return out


# ---------------------------------------------------------------------------
# The check.

def random_do(n: int, d: int, seed: int = 0) -> list:
    """A seeded upstream gradient dO: (N, d) rows, entries uniform on [−1, 1), float32.

    Drawn from its own generator (``random.Random(f"dO:{seed}")``), so Q, K
    and V stay those of emulator.inputs.random_qkv for the same seed.
    """
    rng = random.Random(f"dO:{seed}")
    u = rng.random
    return [array("f", [2.0 * u() - 1.0 for _ in range(d)]).tolist() for _ in range(n)]


def forward32(q: list, k: list, v: list, causal: bool = False, mask: list | None = None,
              block_cols: int = 1):
    """The fused forward's float32 O (N, d) and saved L (N, float32), from emulator.attention.fused.

    A row's keys are passed to the forward in order; with a mask they are
    gathered first, so its key tiles then hold a row's allowed keys only.
    """
    n, d = len(q), len(q[0])
    o, lse = [], []
    for i, ks in enumerate(allowed_keys(n, causal, mask)):
        vt = [[v[j][c] for j in ks] for c in range(d)]
        oi, li = att.fused([_dot(q[i], k[j]) for j in ks], vt, d, block_cols)
        o.append(oi)
        lse.append(f32(li))
    return o, lse


def _compare(got: list, want: list, bound: list) -> dict:
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


def check_arrays(kernel: str, q: list, k: list, v: list, do: list, causal: bool = False,
                 mask: list | None = None, workgroup_bytes: int = M_DEFAULT,
                 block_rows: int | None = None, block_cols: int | None = None) -> dict:
    """Run a backward mirror and hold dQ, dK, dV to float64 within :func:`bounds`.

    q, k, v, do: (N, d) float32 rows. The mirror gets O and L from the float32
    fused forward (:func:`forward32`), as a real backward gets them from its
    forward; the reference differentiates the exact float64 forward.
    Every entry must satisfy |mirror − float64| ≤ its bound (NaN or inf fails).

    Returns {"kernel", "direction": "backward", "n", "d", "causal",
    "workgroup_bytes", "block_rows", "block_cols", "passed",
    "tensors": {"dQ"|"dK"|"dV": {"passed", "max_abs_error", "max_bound",
    "worst_ratio", "worst_error", "worst_bound", "worst_row", "worst_col",
    "nan_entries"}}, "identity_residual" (float64, see :func:`reference`),
    "bound_rule"}. Raises InputError for an unknown kernel or a tile that
    does not fit.
    """
    name = kernel_name(kernel)
    n, d = len(q), len(q[0])
    if block_rows is None and MANIFEST["kernels"][name]["tiling"] != "lesson":
        t = make_tiling(name, n, d, causal, workgroup_bytes)  # the kernel's own tiles
        block_rows, block_cols = t.block_rows, t.block_cols
    br, bc = _blocks(d, workgroup_bytes, block_rows, block_cols)
    o32, l32 = forward32(q, k, v, causal, mask, bc)
    ref = reference(q, k, v, do, causal, mask)
    bnd = bounds(q, k, v, do, ref, causal, mask, bc)
    dq, dk, dv, _traffic = mirror_of(name)(q, k, v, o32, l32, do, causal, mask, workgroup_bytes, br, bc)
    tensors = {t: _compare(got, ref[t], bnd[t]) for t, got in (("dQ", dq), ("dK", dk), ("dV", dv))}
    return {
        "kernel": name, "direction": "backward", "n": n, "d": d, "causal": bool(causal),
        "workgroup_bytes": workgroup_bytes, "block_rows": br, "block_cols": bc,
        "passed": all(t["passed"] for t in tensors.values()),
        "tensors": tensors,
        "identity_residual": ref["identity_residual"],
        "bound_rule": "first-order float32 bound per entry (emulator.backward.bounds)",
    }


def check(kernel: str, n: int, d: int, causal: bool = False, seed: int = 0,
          workgroup_bytes: int = M_DEFAULT) -> dict:
    """Check a backward kernel on seeded inputs: Q, K, V from emulator.inputs, dO from :func:`random_do`.

    Raises InputError (field "n") for N > CHECK_MAX_N: the check holds N×N tables in Python.
    """
    if n > CHECK_MAX_N:
        raise InputError("n", too_large_message(n))
    q, k, v = random_qkv(n, d, seed)
    report = check_arrays(kernel, q, k, v, random_do(n, d, seed), causal,
                          workgroup_bytes=workgroup_bytes)
    report["seed"] = seed
    return report
