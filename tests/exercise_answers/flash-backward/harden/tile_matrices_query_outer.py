# Right, with whole tiles: for each query tile, m, l and the output accumulator of its rows; for
# each key tile, the score tile S (block_rows x block_cols, -inf where masked) and its P as small
# matrices, the running max and the rescale done per tile with a guard for "no key yet". A tile
# wholly past the diagonal is skipped, the last tile may be short.
import math
import struct


def to_fp16(x):
    """x rounded to the nearest IEEE half-precision number (binary16), as a float."""
    try:
        return struct.unpack("<e", struct.pack("<e", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


FP16_EXP_LIMIT = math.log(65520)


def flash_forward(Q, K, V, block_rows, block_cols, causal=False, key_mask=None, fp16=False):
    n, n_keys = len(Q), len(K)
    d = len(Q[0])
    width = len(V[0]) if V else d
    scale = 1.0 / math.sqrt(d)
    O, L = [], []
    r0 = 0
    while r0 < n:
        q_tile = Q[r0:r0 + block_rows]
        rows = len(q_tile)
        m = [-math.inf] * rows
        l = [0.0] * rows
        acc = [[0.0] * width for _ in range(rows)]
        c0 = 0
        while c0 < n_keys and not (causal and c0 > r0 + rows - 1):
            k_tile, v_tile = K[c0:c0 + block_cols], V[c0:c0 + block_cols]
            S = [[-math.inf if (causal and c0 + jj > r0 + ii) or (key_mask is not None and not key_mask[c0 + jj])
                  else math.fsum(a * b for a, b in zip(q, k, strict=True)) * scale
                  for jj, k in enumerate(k_tile)] for ii, q in enumerate(q_tile)]
            for ii in range(rows):
                m_new = max(m[ii], *S[ii])
                if m_new == -math.inf:
                    continue                                    # no visible key yet in this row
                p = [math.exp(s - m_new) for s in S[ii]]
                if fp16:
                    p = [to_fp16(x) for x in p]      # THE FP16 POINT
                alpha = math.exp(m[ii] - m_new)
                l[ii] = l[ii] * alpha + math.fsum(p)
                acc[ii] = [a * alpha + math.fsum(pj * v[c] for pj, v in zip(p, v_tile, strict=True))
                           for c, a in enumerate(acc[ii])]
                m[ii] = m_new
            c0 += block_cols
        for ii in range(rows):
            O.append([a / l[ii] for a in acc[ii]] if l[ii] > 0.0 else [0.0] * width)
            L.append(m[ii] + math.log(l[ii]) if l[ii] > 0.0 else -math.inf)
        r0 += block_rows
    return O, L
