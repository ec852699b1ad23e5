# Wrong: Q, K and V copied first, then a softmax over each row's visible keys, read from the copies.
# The masks, the empty rows and fp16 are right, but nothing is tiled: the copies hold all of K
# and V at once, and block_rows and block_cols are never used.
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
    Q, K, V = ([list(row) for row in rows] for rows in (Q, K, V))   # my own copies
    n, n_keys = len(Q), len(K)
    d = len(Q[0])
    width = len(V[0]) if V else d
    scale = 1.0 / math.sqrt(d)
    O, L = [], []
    for i in range(n):
        keys = [j for j in range(n_keys) if not (causal and j > i) and (key_mask is None or key_mask[j])]
        if not keys:
            O.append([0.0] * width)
            L.append(-math.inf)
            continue
        s = [math.fsum(a * b for a, b in zip(Q[i], K[j], strict=True)) * scale for j in keys]
        m = max(s)
        p = [math.exp(x - m) for x in s]
        if fp16:
            p = [to_fp16(x) for x in p]      # THE FP16 POINT: P held in half precision
        l = math.fsum(p)
        O.append([math.fsum(pj * V[j][c] for pj, j in zip(p, keys, strict=True)) / l for c in range(width)])
        L.append(m + math.log(l))
    return O, L
