# Wrong: block_cols ignored: the query tiles are right, but each row takes its whole row of
# scores at once and a plain softmax over it, so K and V are read once per query row.
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
        for i in range(r0, min(n, r0 + block_rows)):
            keys = range(n_keys) if not causal else range(min(i + 1, n_keys))
            s = [math.fsum(a * b for a, b in zip(Q[i], K[j], strict=True)) * scale for j in keys]
            if not s:
                O.append([0.0] * width)
                L.append(-math.inf)
                continue
            m = max(s)
            p = [math.exp(x - m) for x in s]
            l = math.fsum(p)
            O.append([math.fsum(pj * V[j][c] for pj, j in zip(p, keys, strict=True)) / l for c in range(width)])
            L.append(m + math.log(l))
    return O, L
