"""Closed forms of the bytes the kernels move: test oracles for the generic walk.

emulator.traffic counts every kernel by walking the passes its manifest entry
declares; the mirrors tally their loads and stores as they run. The formulas
here are written out by hand, per kernel, from the schedules the shaders'
opening comments and emulator/backward_mirrors.py describe, and the tests hold
the walk and the tallies to them. Nothing outside tests/ reads this module.
"""
from __future__ import annotations

from emulator.backward import kernel_name
from emulator.backward_mirrors import _totals
from emulator.tiling import BYTES, M_DEFAULT, MANIFEST, Tiling, lesson_blocks


def forward(tiling: Tiling) -> int:
    """Total bytes of a forward kernel from a formula (the oracle of emulator.traffic.walk).

    With T = T_r, R = B_r and B_c dividing R, the keys visited summed over
    query tiles are  ΣKV = T·N (full) or R·T(T−1)/2 + N (causal), and the
    score elements are  ΣS = N² (full) or R²·T(T−1)/2 + (N − (T−1)R)·N (causal).
      fused = 4·(2·N·d + 2·d·ΣKV)
      plain = 4·(2·N·d + 2·d·ΣKV + 4·ΣS)
    """
    n, d, t, r = tiling.n, tiling.d, tiling.query_tiles, tiling.block_rows
    if tiling.causal:
        sum_kv = r * t * (t - 1) // 2 + n
        sum_s = r * r * t * (t - 1) // 2 + (n - (t - 1) * r) * n
    else:
        sum_kv = t * n
        sum_s = n * n
    elements = 2 * n * d + 2 * d * sum_kv
    if any("S" in spec["writes"] for spec in MANIFEST["kernels"][tiling.kernel]["passes"]):  # plain: S, P out and back
        elements += 4 * sum_s
    return BYTES * elements


def _blocks(d, workgroup_bytes, block_rows, block_cols):
    if block_rows is None or block_cols is None:
        return lesson_blocks(d, workgroup_bytes)
    return block_rows, block_cols


#: The backward kernels these formulas are written for (manifest names; a new kernel needs its own).
BACKWARD_KERNELS = ("plain-backward", "fused-backward", "fused-backward-no-D")


def backward(kernel: str, n: int, d: int, causal: bool = False,
             workgroup_bytes: int = M_DEFAULT, block_rows: int | None = None,
             block_cols: int | None = None) -> dict:
    """Bytes each pass of a backward kernel reads and writes, per tensor, from formulas.

    kernel: one of BACKWARD_KERNELS, or the name the lab gives it ("plain", "fused", "fused-no-D").
    With R = B_r, B = B_c, k = R/B, T = ⌈N/R⌉ query tiles, T_c = ⌈N/B⌉ key
    tiles; causal key tile t is streamed qv_t = N − ⌊t/k⌋·R query rows; with
    G = ⌊T_c/k⌋ and g = T_c mod k, Σ_t ⌊t/k⌋ = k·G(G−1)/2 + g·G:
      keys visited over query tiles  ΣKV = T·N, causal R·T(T−1)/2 + N;
      table entries over query tiles ΣS = N², causal R²·T(T−1)/2 + (N − (T−1)R)·N;
      query rows over key tiles      ΣQV = T_c·N, causal T_c·N − R·(k·G(G−1)/2 + g·G);
      table entries over key tiles   ΣC = N², causal B·(ΣQV − qv_last) + c_last·qv_last,
        c_last = N − (T_c−1)B the last key tile's rows, qv_last = N − ⌊(T_c−1)/k⌋·R.
    Each pass's elements (emulator/backward_mirrors.py's docstring) summed with these, times 4 bytes.
    Returns {"kernel", "block_rows", "block_cols", "passes": [{"name", "reads",
    "writes"}], "reads", "writes", "total_bytes"} (bytes, per tensor in TENSORS).
    Raises InputError for an unknown kernel or a tile that does not fit, and
    KeyError for a backward kernel no formula here is written for.
    """
    name = kernel_name(kernel)
    if name not in BACKWARD_KERNELS:
        raise KeyError(f"no closed form for the backward kernel {name!r}")
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
    else:  # fused-backward, and fused-backward-no-D below
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
