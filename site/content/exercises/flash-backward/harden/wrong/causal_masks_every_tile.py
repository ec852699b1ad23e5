# Wrong: the causal skip taken out: every query tile visits every key tile, those wholly past its
# last row too, and the mask hides them. Right numbers, but the key tiles a causal pass skips are read.
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
    O, L = [], []
    for r0 in range(0, n, block_rows):
        rows = range(r0, min(n, r0 + block_rows))
        m = {i: -math.inf for i in rows}
        l = {i: 0.0 for i in rows}
        acc = {i: [0.0] * width for i in rows}
        for c0 in range(0, n_keys, block_cols):                 # the last tile may be short
            cols = range(c0, min(n_keys, c0 + block_cols))
            for i in rows:
                s = [-math.inf if (causal and j > i) or (key_mask is not None and not key_mask[j])
                     else math.fsum(a * b for a, b in zip(Q[i], K[j], strict=True)) * scale
                     for j in cols]
                m_new = max(m[i], max(s))
                if m_new == -math.inf:
                    continue                                    # every key so far masked: nothing to add
                alpha = math.exp(m[i] - m_new)                  # exp(-inf) = 0 on the first visible tile
                p = [math.exp(x - m_new) for x in s]
                if fp16:
                    p = [to_fp16(x) for x in p]      # THE FP16 POINT: P held in half precision
                l[i] = l[i] * alpha + math.fsum(p)
                acc[i] = [a * alpha + math.fsum(pj * V[j][c] for pj, j in zip(p, cols, strict=True))
                          for c, a in enumerate(acc[i])]
                m[i] = m_new
        for i in rows:
            if l[i] == 0.0:                                     # no key at all: O = 0, L = -inf
                O.append([0.0] * width)
                L.append(-math.inf)
            else:
                O.append([a / l[i] for a in acc[i]])
                L.append(m[i] + math.log(l[i]))
    return O, L
