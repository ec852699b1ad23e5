"""Float32 mirrors of the backward kernels: the arithmetic of each WGSL backward
kernel in its order, with its float32 roundings, and the loads and stores it makes.

Inputs as emulator.backward_reference: Q, K, V, dO (N, d) float32 rows, and
the forward's O (N, d) and L (N), which :func:`forward32` makes as the fused
forward does. One head.

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

Every element is a float32, 4 bytes. The mirrors tally these loads and stores
as they run, and tests hold the tally equal to the generic walk of
emulator.traffic over the passes kernels_wgsl/manifest.json declares (the
counts the lab shows), and to closed forms (tests/closed_forms.py).

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
emulator.attention, and inside the bound of emulator.backward_bounds.bounds, which allows for
a GPU's roundings.

No built-in ``sum()`` of floats: sums use ``math.fsum``.
"""
from __future__ import annotations

import math

from . import attention as att
from .attention import NEG_INF, f32, f32s
from .backward_reference import allowed_keys, columns, dot
from .tiling import BYTES, TENSOR_ORDER

#: Tensors a backward kernel may move, in the manifest's display order.
TENSORS = TENSOR_ORDER


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
    return [f32(dot(do[i], o[i])) for i in range(n)]


def _element(qi, kj, scale, lse_i, doi, vj, di):
    """(P_ij, dS_ij) in float32 at the kernels' rounding points (module docstring).

    di = None leaves D out (the broken kernel): dS = P ∘ dP.
    """
    s = f32(f32(dot(qi, kj)) * scale)
    p = f32(_exp(f32(s - lse_i)))
    dp = f32(dot(doi, vj))
    ds = f32(p * (dp if di is None else f32(dp - di)))
    return p, ds


def _fused(q: list, k: list, v: list, o: list, lse: list, do: list, causal: bool, mask: list | None,
           br: int, bc: int, use_d: bool = True):
    """The fused backward's arithmetic (``fused-backward``; ``use_d=False``: ``fused-backward-no-D``).

    q, k, v, do: (N, d) float32 rows; o (N, d) and lse (N) are the forward's
    saved O and L (float32; L = −∞ for a row with no key); br × bc the tiles.

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
    scale = f32(1.0 / math.sqrt(d))
    ok = _may_attend(n, causal, mask)
    tally = _Tally()
    dvec = _preprocess(o, do, tally) if use_d else [None] * n
    qt, kt, dot_ = columns(q, d), columns(k, d), columns(do, d)
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
                    av[ci] = f32(av[ci] + f32(dot(pcol, do_sl[ci])))
                    ak[ci] = f32(ak[ci] + f32(dot(dscol, q_sl[ci])))
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
                    a[ci] = f32(a[ci] + f32(dot(dsrow, k_sl[ci])))
        dq.extend(f32s(x * scale for x in row) for row in acc)
        tally.write("dq", "dQ", r * d)
    return dq, dk, dv, tally.as_bytes()


def _plain(q: list, k: list, v: list, o: list, lse: list, do: list, causal: bool, mask: list | None,
           br: int, bc: int):
    """The plain backward's arithmetic (``plain-backward``).

    Same inputs as :func:`_fused`. Seven passes, each a dispatch of its own,
    that write S, P, dP and dS to global memory and read them back (module
    docstring; the standard backward of FlashAttention, arXiv:2205.14135,
    Appendix B, Algorithm 3, with S and P recomputed from the saved L and D
    from dO∘O, as the fused kernel does, so only the memory trips differ).
    Entries outside a row's keys are stored as S = −∞, P = dP = dS = 0.

    Returns (dQ, dK, dV, traffic) as :func:`_fused`.
    """
    n, d = len(q), len(q[0])
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
        s_tab[i][j] = f32(f32(dot(q[i], k[j])) * scale)
    each_pass("softmax", (("S", "r*kv"), ("L", "r")), (("P", "r*kv"),))
    for i, j in allowed:
        p_tab[i][j] = f32(_exp(f32(s_tab[i][j] - lse[i])))
    each_pass("dp", (("dO", "r*d"), ("V", "kv*d")), (("dP", "r*kv"),))
    for i, j in allowed:
        dp_tab[i][j] = f32(dot(do[i], v[j]))
    each_pass("ds", (("P", "r*kv"), ("dP", "r*kv"), ("D", "r")), (("dS", "r*kv"),))
    for i, j in allowed:
        ds_tab[i][j] = f32(p_tab[i][j] * f32(dp_tab[i][j] - dvec[i]))
    each_pass("dq", (("dS", "r*kv"), ("K", "kv*d")), (("dQ", "r*d"),))
    kt = columns(k, d)
    dq = []
    for r0, r1, kv in tiles:
        for i in range(r0, r1):
            row = ds_tab[i][:kv]
            dq.append(f32s(f32(dot(row, col)) * scale for col in kt))
    # dkv: one workgroup per key tile, reading the columns of dS and P below the diagonal.
    qt, dot_ = columns(q, d), columns(do, d)
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
            dk.append(f32s(f32(dot(ds_col, col)) * scale for col in q_sl))
            dv.append(f32s(dot(p_col, col) for col in do_sl))
    return dq, dk, dv, tally.as_bytes()


def _inputs(x: dict, block_rows: int, block_cols: int) -> tuple:
    """The mirrors' positional inputs from the named ones (emulator.mirrors); checks the tiles."""
    if block_rows < 1 or block_cols < 1 or block_rows % block_cols:
        raise ValueError(f"B_r = {block_rows} must be a positive multiple of B_c = {block_cols}")
    return (x["Q"], x["K"], x["V"], x["O"], x["L"], x["dO"], bool(x.get("causal", False)), x.get("mask"),
            block_rows, block_cols)


def _named(dq: list, dk: list, dv: list, traffic: dict) -> dict:
    return {"dQ": dq, "dK": dk, "dV": dv, "traffic": traffic}


def fused(x: dict, block_rows: int, block_cols: int) -> dict:
    """Float32 mirror of fused-backward (manifest "mirror": "backward_mirrors.fused").

    Called as every mirror is (emulator.mirrors): x = {"Q", "K", "V", "dO",
    "O", "L", "causal", "mask"}, tiles B_r × B_c (B_c divides B_r). Returns
    {"dQ", "dK", "dV": (N, d) float32 rows, "traffic": {"passes", "reads",
    "writes", "total_bytes"} in bytes}. Raises ValueError for tiles where
    B_c does not divide B_r. The arithmetic: :func:`_fused`.
    """
    return _named(*_fused(*_inputs(x, block_rows, block_cols)))


def fused_no_d(x: dict, block_rows: int, block_cols: int) -> dict:
    """The broken control (manifest "mirror": "backward_mirrors.fused_no_d"): :func:`fused`
    with D left out, dS = P ∘ dP, and no preprocess pass. Arguments and result as :func:`fused`."""
    return _named(*_fused(*_inputs(x, block_rows, block_cols), use_d=False))


def plain(x: dict, block_rows: int, block_cols: int) -> dict:
    """Float32 mirror of plain-backward (manifest "mirror": "backward_mirrors.plain").

    Arguments and result as :func:`fused`; the arithmetic and the seven passes: :func:`_plain`.
    """
    return _named(*_plain(*_inputs(x, block_rows, block_cols)))


def forward32(q: list, k: list, v: list, causal: bool = False, mask: list | None = None,
              block_cols: int = 1):
    """The fused forward's float32 O (N, d) and saved L (N, float32), from emulator.attention.fused_row.

    A row's keys are passed to the forward in order; with a mask they are
    gathered first, so its key tiles then hold a row's allowed keys only.
    """
    n, d = len(q), len(q[0])
    o, lse = [], []
    for i, ks in enumerate(allowed_keys(n, causal, mask)):
        vt = [[v[j][c] for j in ks] for c in range(d)]
        oi, li = att.fused_row([dot(q[i], k[j]) for j in ks], vt, d, block_cols)
        o.append(oi)
        lse.append(f32(li))
    return o, lse
