# Right, written as a NumPy user might: each query tile's rows of Q, and each key tile's rows of
# K and V, copied into small matrices first; the score tile formed whole, then masked into a
# second matrix; the tile's maxima, rescale factors and P as lists beside it. It holds several
# tile-sized lists at once, and copies of the tiles, never more than a few tiles' worth: it must
# pass the memory test (a measure that counted every short list it ever made would fail it).
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
    n, n_keys, d = len(Q), len(K), len(Q[0])
    width = len(V[0]) if V else d
    scale = 1.0 / math.sqrt(d)
    O, L = [], []
    for r0 in range(0, n, block_rows):
        R = list(range(r0, min(n, r0 + block_rows)))
        Qt = [list(Q[i]) for i in R]
        m = [-math.inf] * len(R)
        l = [0.0] * len(R)
        acc = [[0.0] * width for _ in R]
        for c0 in range(0, n_keys, block_cols):
            if causal and c0 > R[-1]:
                break
            C = list(range(c0, min(n_keys, c0 + block_cols)))
            Kt = [list(K[j]) for j in C]
            Vt = [list(V[j]) for j in C]
            S = [[math.fsum(a * b for a, b in zip(q, k, strict=True)) * scale for k in Kt] for q in Qt]
            S = [[-math.inf if (causal and C[b] > R[a]) or (key_mask is not None and not key_mask[C[b]])
                  else S[a][b] for b in range(len(C))] for a in range(len(R))]
            m_new = [max(x, max(row)) for x, row in zip(m, S, strict=True)]
            alpha = [math.exp(x - y) if y != -math.inf else 1.0 for x, y in zip(m, m_new, strict=True)]
            P = [[math.exp(s - y) if y != -math.inf else 0.0 for s in row] for row, y in zip(S, m_new, strict=True)]
            if fp16:
                P = [[to_fp16(p) for p in row] for row in P]
            l = [a * x + math.fsum(row) for a, x, row in zip(alpha, l, P, strict=True)]
            acc = [[a * o + math.fsum(row[b] * Vt[b][c] for b in range(len(C))) for c, o in enumerate(orow)]
                   for a, orow, row in zip(alpha, acc, P, strict=True)]
            m = m_new
        for a in range(len(R)):
            if l[a] == 0.0:
                O.append([0.0] * width)
                L.append(-math.inf)
            else:
                O.append([x / l[a] for x in acc[a]])
                L.append(m[a] + math.log(l[a]))
    return O, L
