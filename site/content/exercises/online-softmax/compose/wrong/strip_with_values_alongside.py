# Wrong: each query tile takes every key once, reads its row of V right beside it (so K and V
# are read once per query tile, interleaved), keeps the whole B_r x N strip of scores, and only
# then a plain softmax per row. The reads look tiled; the strip of scores is N wide.
import math


def flash_forward(Q, K, V, block_rows, block_cols, causal=False):
    """Tiled exact attention. Q: N rows of d floats; K, V: rows of d floats.

    Returns (O, L): O is N rows of d floats, L the logsumexp of each row.
    """
    n, n_keys = len(Q), len(K)
    d = len(Q[0]) if Q else 0
    width = len(V[0]) if V else d
    scale = 1.0 / math.sqrt(d)
    O, L = [], []
    for r0 in range(0, n, block_rows):
        rows = range(r0, min(n, r0 + block_rows))
        strip = {i: [] for i in rows}                        # B_r x N scores
        values = []                                          # the rows of V, beside their keys
        for j in range(n_keys):
            if causal and j > rows[-1]:
                break
            k, v = K[j], V[j]
            values.append(v)
            for i in rows:
                strip[i].append(math.fsum(a * b for a, b in zip(Q[i], k, strict=True)) * scale
                                if not (causal and j > i) else -math.inf)
        for i in rows:                                       # a plain softmax per row
            m = max(strip[i], default=-math.inf)
            if m == -math.inf:
                O.append([0.0] * width)
                L.append(-math.inf)
                continue
            p = [math.exp(s - m) for s in strip[i]]
            l = math.fsum(p)
            O.append([math.fsum(pj * v[c] for pj, v in zip(p, values, strict=False)) / l for c in range(width)])
            L.append(m + math.log(l))
    return O, L
