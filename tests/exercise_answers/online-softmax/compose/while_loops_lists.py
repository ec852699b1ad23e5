# Right, another style: while loops and lists indexed by row within the tile (no dicts); the
# running max, sum and output of each row of the query tile updated one key tile at a time.
import math


def flash_forward(Q, K, V, block_rows, block_cols, causal=False):
    n, n_keys = len(Q), len(K)
    d = len(Q[0]) if Q else 0
    width = len(V[0]) if V else d
    scale = 1.0 / math.sqrt(d)
    O, L = [], []
    r0 = 0
    while r0 < n:
        r1 = min(n, r0 + block_rows)
        m = [-math.inf] * (r1 - r0)
        l = [0.0] * (r1 - r0)
        acc = [[0.0] * width for _ in range(r1 - r0)]
        c0 = 0
        while c0 < n_keys and not (causal and c0 > r1 - 1):
            c1 = min(n_keys, c0 + block_cols)
            k_tile, v_tile = K[c0:c1], V[c0:c1]
            for r in range(r1 - r0):
                i = r0 + r
                q = Q[i]
                s = [sum(a * b for a, b in zip(q, k, strict=True)) * scale for k in k_tile]
                if causal:
                    s = [x if c0 + j <= i else -math.inf for j, x in enumerate(s)]
                top = max(m[r], *s)
                if top == -math.inf:
                    continue
                shrink = math.exp(m[r] - top)
                p = [math.exp(x - top) for x in s]
                l[r] = l[r] * shrink + sum(p)
                acc[r] = [a * shrink + sum(pj * v[c] for pj, v in zip(p, v_tile, strict=True))
                          for c, a in enumerate(acc[r])]
                m[r] = top
            c0 = c1
        for r in range(r1 - r0):
            O.append([a / l[r] for a in acc[r]] if l[r] else [0.0] * width)
            L.append(m[r] + math.log(l[r]) if l[r] else -math.inf)
        r0 = r1
    return O, L
