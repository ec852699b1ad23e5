# Wrong: causal attention by masking every tile: each query tile scores every key tile, those
# wholly past its last row included, and then sets the hidden scores to -inf. Right numbers, but
# the key tiles a causal pass skips are all read.
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
        m = {i: -math.inf for i in rows}
        l = {i: 0.0 for i in rows}
        acc = {i: [0.0] * width for i in rows}
        for c0 in range(0, n_keys, block_cols):
            cols = range(c0, min(n_keys, c0 + block_cols))
            for i in rows:
                s = [math.fsum(a * b for a, b in zip(Q[i], K[j], strict=True)) * scale for j in cols]
                if causal:
                    s = [x if j <= i else -math.inf for x, j in zip(s, cols, strict=True)]
                m_new = max(m[i], max(s))
                if m_new == -math.inf:
                    continue
                alpha = math.exp(m[i] - m_new)
                p = [math.exp(x - m_new) for x in s]
                l[i] = l[i] * alpha + math.fsum(p)
                acc[i] = [a * alpha + math.fsum(pj * V[j][c] for pj, j in zip(p, cols, strict=True))
                          for c, a in enumerate(acc[i])]
                m[i] = m_new
        for i in rows:
            if l[i] == 0.0:
                O.append([0.0] * width)
                L.append(-math.inf)
            else:
                O.append([a / l[i] for a in acc[i]])
                L.append(m[i] + math.log(l[i]))
    return O, L
