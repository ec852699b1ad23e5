# Wrong: the loops walk query tiles and key tiles, as the fused kernel does, but only to fill
# the whole N x N table of scores S; then P = softmax(S) row by row, then O = P V. K and V are
# read tile by tile, once per query tile; the table is N x N, as in the plain kernel.
import math


def flash_forward(Q, K, V, block_rows, block_cols, causal=False):
    """Tiled exact attention. Q: N rows of d floats; K, V: rows of d floats.

    Returns (O, L): O is N rows of d floats, L the logsumexp of each row.
    """
    n, n_keys = len(Q), len(K)
    d = len(Q[0]) if Q else 0
    width = len(V[0]) if V else d
    scale = 1.0 / math.sqrt(d)
    S = [[-math.inf] * n_keys for _ in range(n)]             # the whole table
    values = [None] * n_keys
    for r0 in range(0, n, block_rows):
        rows = range(r0, min(n, r0 + block_rows))
        for c0 in range(0, n_keys, block_cols):
            if causal and c0 > rows[-1]:
                break
            cols = range(c0, min(n_keys, c0 + block_cols))
            keys = [K[j] for j in cols]                      # the key tile
            for j in cols:                                   # and its value tile
                values[j] = V[j]
            for i in rows:
                for j, k in zip(cols, keys, strict=True):
                    if not (causal and j > i):
                        S[i][j] = math.fsum(a * b for a, b in zip(Q[i], k, strict=True)) * scale
    O, L = [], []
    P = []
    for i in range(n):                                       # P = softmax(S), whole rows
        m = max(S[i], default=-math.inf)
        P.append([math.exp(s - m) for s in S[i]] if m > -math.inf else [0.0] * n_keys)
        L.append(m + math.log(math.fsum(P[i])) if m > -math.inf else -math.inf)
    for i in range(n):                                       # O = P V
        l = math.fsum(P[i])
        O.append([math.fsum(p * v[c] for p, v in zip(P[i], values, strict=True) if v is not None) / l
                  if l > 0 else 0.0 for c in range(width)])
    return O, L
