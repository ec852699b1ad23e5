# Wrong: exponentiates the raw scores; exp overflows once a score passes about 709.
import math


def flash_forward(Q, K, V, block_rows, block_cols, causal=False):
    n, n_keys = len(Q), len(K)
    d = len(Q[0]) if Q else 0
    width = len(V[0]) if V else d
    scale = 1.0 / math.sqrt(d)
    O, L = [], []
    for r0 in range(0, n, block_rows):                  # one query tile at a time
        rows = range(r0, min(n, r0 + block_rows))
        m = {i: -math.inf for i in rows}                # running max per row
        l = {i: 0.0 for i in rows}                      # running sum per row
        acc = {i: [0.0] * width for i in rows}          # unnormalised output per row
        for c0 in range(0, n_keys, block_cols):         # stream the key/value tiles
            if causal and c0 > rows[-1]:
                break                                   # wholly past the diagonal
            cols = range(c0, min(n_keys, c0 + block_cols))
            for i in rows:
                s = [math.fsum(a * b for a, b in zip(Q[i], K[j], strict=True)) * scale
                     if not (causal and j > i) else -math.inf for j in cols]
                m_new = max(m[i], max(s))
                if m_new == -math.inf:
                    continue                            # nothing visible yet
                p = [math.exp(x) for x in s]
                l[i] = l[i] + math.fsum(p)
                acc[i] = [a + math.fsum(pj * V[j][c] for pj, j in zip(p, cols, strict=True))
                          for c, a in enumerate(acc[i])]
                m[i] = m_new
        for i in rows:
            if l[i] == 0.0:                             # no keys: o = 0, L = -inf
                O.append([0.0] * width)
                L.append(-math.inf)
            else:
                O.append([a / l[i] for a in acc[i]])
                L.append(math.log(l[i]))
    return O, L
