# Wrong: a whole-row softmax that ignores block_rows and block_cols: right numbers, no tiles.
# Each query row reads every key and value row (the example: N = 65, 4,225 reads).
import math


def flash_forward(Q, K, V, block_rows, block_cols, causal=False):
    """Tiled exact attention. Q: N rows of d floats; K, V: rows of d floats.

    Returns (O, L): O is N rows of d floats, L the logsumexp of each row.
    """
    d = len(Q[0]) if Q else 0
    width = len(V[0]) if V else d
    O, L = [], []
    for i, q in enumerate(Q):
        keys = range(len(K)) if not causal else range(min(i + 1, len(K)))
        s = [math.fsum(a * b for a, b in zip(q, K[j], strict=True)) / math.sqrt(d) for j in keys]
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
