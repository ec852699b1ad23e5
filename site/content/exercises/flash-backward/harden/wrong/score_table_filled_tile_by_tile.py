# Wrong: the key tiles walked in order, once, to fill the whole N x N table of scores (masked ones
# -inf), a row of V kept beside each key; then a plain softmax per row of the table. Right numbers,
# K and V read once, and the table a fused pass never holds.
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
    """Tiled exact attention with masks. Q: N rows of d floats; K, V: N_k rows.

    key_mask: None, or N_k booleans (False = a padding key nobody may see).
    fp16: round each P entry to half precision at THE FP16 POINT below.
    Returns (O, L): O is N rows, L the logsumexp of each row (-inf if it saw no key).
    """
    n, n_keys = len(Q), len(K)
    d = len(Q[0])
    width = len(V[0]) if V else d
    scale = 1.0 / math.sqrt(d)
    S = [[-math.inf] * n_keys for _ in range(n)]
    values = [None] * n_keys
    for c0 in range(0, n_keys, block_cols):                     # key tiles outer, as Algorithm 1
        cols = range(c0, min(n_keys, c0 + block_cols))
        for r0 in range(0, n, block_rows):
            rows = range(r0, min(n, r0 + block_rows))
            if causal and rows[-1] < c0:
                continue
            for j in cols:
                k = K[j]
                values[j] = V[j]
                for i in rows:
                    if not ((causal and j > i) or (key_mask is not None and not key_mask[j])):
                        S[i][j] = math.fsum(a * b for a, b in zip(Q[i], k, strict=True)) * scale
    O, L = [], []
    for i in range(n):                                          # then softmax, row by row
        m = max(S[i])
        if m == -math.inf:
            O.append([0.0] * width)
            L.append(-math.inf)
            continue
        p = [math.exp(x - m) for x in S[i]]
        if fp16:
            p = [to_fp16(x) for x in p]      # THE FP16 POINT: P held in half precision
        l = math.fsum(p)
        O.append([math.fsum(pj * values[j][c] for j, pj in enumerate(p) if pj) / l for c in range(width)])
        L.append(m + math.log(l))
    return O, L
