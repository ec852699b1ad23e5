# Right, written tile by tile as matrices: for each query tile and key tile, the B_r x B_c
# block of scores first, then its exponentials, then the values. The value tile is taken
# before the key tile, which changes nothing.
import math


def flash_forward(Q, K, V, block_rows, block_cols, causal=False):
    n, n_keys = len(Q), len(K)
    d = len(Q[0]) if Q else 0
    width = len(V[0]) if V else d
    scale = 1.0 / math.sqrt(d)
    O, L = [None] * n, [None] * n
    for r0 in reversed(range(0, n, block_rows)):        # the query tiles in any order
        q_tile = Q[r0:r0 + block_rows]
        rows = range(r0, r0 + len(q_tile))
        m = [-math.inf] * len(q_tile)
        l = [0.0] * len(q_tile)
        acc = [[0.0] * width for _ in q_tile]
        for c0 in range(0, n_keys, block_cols):
            if causal and c0 > rows[-1]:
                break
            v_tile = V[c0:c0 + block_cols]
            k_tile = K[c0:c0 + block_cols]
            S = [[math.fsum(a * b for a, b in zip(q, k, strict=True)) * scale
                  if not (causal and c0 + jj > i) else -math.inf for jj, k in enumerate(k_tile)]
                 for i, q in zip(rows, q_tile, strict=True)]
            for a, s in enumerate(S):
                m_new = max(m[a], max(s))
                if m_new == -math.inf:
                    continue
                alpha = math.exp(m[a] - m_new)
                p = [math.exp(x - m_new) for x in s]
                l[a] = l[a] * alpha + math.fsum(p)
                acc[a] = [x * alpha + math.fsum(pj * v[c] for pj, v in zip(p, v_tile, strict=True))
                          for c, x in enumerate(acc[a])]
                m[a] = m_new
        for a, i in enumerate(rows):
            O[i] = [x / l[a] for x in acc[a]] if l[a] > 0.0 else [0.0] * width
            L[i] = m[a] + math.log(l[a]) if l[a] > 0.0 else -math.inf
    return O, L
