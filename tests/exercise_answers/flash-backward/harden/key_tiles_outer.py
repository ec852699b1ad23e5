# Right, in the other loop order: key tiles outer (FlashAttention's Algorithm 1), with the
# masks, the empty rows and the fp16 point. Every row keeps its m, l and O between visits.
import math
import struct


def to_fp16(x):
    """x rounded to the nearest IEEE half-precision number (binary16), as a float.

    Values from 65,520 up round to inf (the largest half is 65,504). Uses the
    standard library's struct format "e"; given, do not change.
    """
    try:
        return struct.unpack("<e", struct.pack("<e", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


# exp(x) rounds to inf in half precision once it reaches 65,520, halfway between
# the largest half (65,504) and the next power of two's step (65,536).
FP16_EXP_LIMIT = math.log(65520)   # 11.0901...


def flash_forward(Q, K, V, block_rows, block_cols, causal=False, key_mask=None, fp16=False):
    n, n_keys = len(Q), len(K)
    d = len(Q[0])
    width = len(V[0]) if V else d
    scale = 1.0 / math.sqrt(d)
    m = [-math.inf] * n
    l = [0.0] * n
    acc = [[0.0] * width for _ in range(n)]
    for c0 in range(0, n_keys, block_cols):
        cols = range(c0, min(n_keys, c0 + block_cols))
        for r0 in range(0, n, block_rows):
            rows = range(r0, min(n, r0 + block_rows))
            if causal and rows[-1] < c0:
                continue
            for i in rows:
                s = [-math.inf if (causal and j > i) or (key_mask is not None and not key_mask[j])
                     else math.fsum(a * b for a, b in zip(Q[i], K[j], strict=True)) * scale for j in cols]
                m_new = max(m[i], max(s))
                if m_new == -math.inf:
                    continue
                alpha = math.exp(m[i] - m_new)
                p = [math.exp(x - m_new) for x in s]
                if fp16:
                    p = [to_fp16(x) for x in p]      # THE FP16 POINT
                l[i] = l[i] * alpha + math.fsum(p)
                acc[i] = [a * alpha + math.fsum(pj * V[j][c] for pj, j in zip(p, cols, strict=True) if pj)
                          for c, a in enumerate(acc[i])]
                m[i] = m_new
    O = [[a / l[i] for a in acc[i]] if l[i] > 0.0 else [0.0] * width for i in range(n)]
    L = [m[i] + math.log(l[i]) if l[i] > 0.0 else -math.inf for i in range(n)]
    return O, L
