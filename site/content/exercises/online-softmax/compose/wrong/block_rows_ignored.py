# Wrong: block_rows ignored: one query row at a time streams every key tile past it
# (online softmax per row), so K and V are read once per query row, not once per query tile.
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
    for i in range(n):
        m, l, acc = -math.inf, 0.0, [0.0] * width
        for c0 in range(0, n_keys, block_cols):
            if causal and c0 > i:
                break
            cols = range(c0, min(n_keys, c0 + block_cols))
            s = [math.fsum(a * b for a, b in zip(Q[i], K[j], strict=True)) * scale
                 if not (causal and j > i) else -math.inf for j in cols]
            m_new = max(m, max(s))
            if m_new == -math.inf:
                continue
            alpha = math.exp(m - m_new)
            p = [math.exp(x - m_new) for x in s]
            l = l * alpha + math.fsum(p)
            acc = [a * alpha + math.fsum(pj * V[j][c] for pj, j in zip(p, cols, strict=True))
                   for c, a in enumerate(acc)]
            m = m_new
        if l == 0.0:
            O.append([0.0] * width)
            L.append(-math.inf)
        else:
            O.append([a / l for a in acc])
            L.append(m + math.log(l))
    return O, L
