# Wrong: block_cols ignored in a subtler way: each query tile takes every key once, in order,
# scoring all its rows against it, and only then a softmax over the strip of B_r x N scores.
# K and V are read once per query tile, as they should be, but a whole strip of the score
# table is held at once instead of one B_r x B_c tile.
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
        s = {i: [] for i in rows}
        for j in range(n_keys):                              # every key, all the tile's rows
            if causal and j > rows[-1]:
                break
            k = K[j]
            for i in rows:
                s[i].append(math.fsum(a * b for a, b in zip(Q[i], k, strict=True)) * scale
                            if not (causal and j > i) else -math.inf)
        m = {i: max(s[i], default=-math.inf) for i in rows}
        p = {i: [math.exp(x - m[i]) for x in s[i]] if m[i] > -math.inf else [] for i in rows}
        acc = {i: [0.0] * width for i in rows}
        for j in range(len(s[rows[0]])):                     # then every value, once
            v = V[j]
            for i in rows:
                if p[i]:
                    acc[i] = [a + p[i][j] * v[c] for c, a in enumerate(acc[i])]
        for i in rows:
            l = math.fsum(p[i])
            if l == 0.0:
                O.append([0.0] * width)
                L.append(-math.inf)
            else:
                O.append([a / l for a in acc[i]])
                L.append(m[i] + math.log(l))
    return O, L
