# Right, in the other loop order: key tiles outer, query tiles inner (FlashAttention's
# Algorithm 1). Each key and value tile is read once; each query tile once per key tile
# that reaches it; every row keeps its m, l and O between visits.
import math


def flash_forward(Q, K, V, block_rows, block_cols, causal=False):
    n, n_keys = len(Q), len(K)
    d = len(Q[0]) if Q else 0
    width = len(V[0]) if V else d
    scale = 1.0 / math.sqrt(d)
    m = [-math.inf] * n
    l = [0.0] * n
    acc = [[0.0] * width for _ in range(n)]
    for c0 in range(0, n_keys, block_cols):
        cols = range(c0, min(n_keys, c0 + block_cols))
        k_tile = K[c0:c0 + block_cols]                 # the key and value tiles, once
        v_tile = V[c0:c0 + block_cols]
        for r0 in range(0, n, block_rows):
            rows = range(r0, min(n, r0 + block_rows))
            if causal and rows[-1] < c0:
                continue                               # this query tile sees none of these keys
            for i in rows:
                q = Q[i]
                s = [math.fsum(a * b for a, b in zip(q, k, strict=True)) * scale if not (causal and j > i)
                     else -math.inf for j, k in zip(cols, k_tile, strict=True)]
                m_new = max(m[i], max(s))
                if m_new == -math.inf:
                    continue
                alpha = math.exp(m[i] - m_new)
                p = [math.exp(x - m_new) for x in s]
                l[i] = l[i] * alpha + math.fsum(p)
                acc[i] = [a * alpha + math.fsum(pj * v[c] for pj, v in zip(p, v_tile, strict=True))
                          for c, a in enumerate(acc[i])]
                m[i] = m_new
    O = [[a / l[i] for a in acc[i]] if l[i] > 0.0 else [0.0] * width for i in range(n)]
    L = [m[i] + math.log(l[i]) if l[i] > 0.0 else -math.inf for i in range(n)]
    return O, L
