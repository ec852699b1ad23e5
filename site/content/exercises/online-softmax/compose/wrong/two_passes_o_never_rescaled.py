# Wrong: two passes over the key tiles of each query tile: the first finds m and l, the second
# sums O against the final m, so O never needs a rescale. Right numbers, but K is read twice.
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
        tiles = [range(c0, min(n_keys, c0 + block_cols)) for c0 in range(0, n_keys, block_cols)
                 if not (causal and c0 > rows[-1])]

        def scores(i, cols):
            return [math.fsum(a * b for a, b in zip(Q[i], K[j], strict=True)) * scale
                    if not (causal and j > i) else -math.inf for j in cols]

        m = {i: -math.inf for i in rows}
        l = {i: 0.0 for i in rows}
        for cols in tiles:                                  # pass 1: m and l only
            for i in rows:
                s = scores(i, cols)
                m_new = max(m[i], max(s))
                if m_new == -math.inf:
                    continue
                l[i] = l[i] * math.exp(m[i] - m_new) + math.fsum(math.exp(x - m_new) for x in s)
                m[i] = m_new
        acc = {i: [0.0] * width for i in rows}
        for cols in tiles:                                  # pass 2: O against the final m
            for i in rows:
                if l[i] == 0.0:
                    continue
                p = [math.exp(x - m[i]) for x in scores(i, cols)]
                acc[i] = [a + math.fsum(pj * V[j][c] for pj, j in zip(p, cols, strict=True))
                          for c, a in enumerate(acc[i])]
        for i in rows:
            if l[i] == 0.0:
                O.append([0.0] * width)
                L.append(-math.inf)
            else:
                O.append([a / l[i] for a in acc[i]])
                L.append(m[i] + math.log(l[i]))
    return O, L
