# Wrong: the tiles walked in the fused backward's order, but only to fill whole N x N tables of P
# and dS (P recomputed from L, correctly); the gradients are then read off the tables. Every
# number right, every row read as a tiled pass reads it, and the table the fused forward never wrote.
import math


def flash_backward(Q, K, V, O, dO, L, block_rows, block_cols, causal=False, key_mask=None):
    """Gradients of tiled attention, recomputing P from the saved logsumexp L.

    Q, O, dO: N rows of d floats; K, V: N_k rows; L: N floats (-inf for a row
    that saw no key). Returns (dQ, dK, dV), shaped like Q, K and V.
    """
    n, n_keys = len(Q), len(K)
    d = len(Q[0])
    width = len(V[0])
    scale = 1.0 / math.sqrt(d)
    D = [math.fsum(a * b for a, b in zip(dO[i], O[i], strict=True)) for i in range(n)]
    P = [[0.0] * n_keys for _ in range(n)]
    dS = [[0.0] * n_keys for _ in range(n)]
    q_rows, k_rows = [None] * n, [None] * n_keys
    for c0 in range(0, n_keys, block_cols):                   # the fused backward's walk...
        cols = range(c0, min(n_keys, c0 + block_cols))
        for r0 in range(0, n, block_rows):
            rows = range(r0, min(n, r0 + block_rows))
            if causal and c0 > rows[-1]:
                continue
            for i in rows:
                if L[i] == -math.inf:
                    continue
                q = q_rows[i] = Q[i]
                for j in cols:
                    if (causal and j > i) or (key_mask is not None and not key_mask[j]):
                        continue
                    k = k_rows[j] = K[j]
                    p = math.exp(math.fsum(a * b for a, b in zip(q, k, strict=True)) * scale - L[i])
                    P[i][j] = p                                # ...only to fill the tables
                    dS[i][j] = p * (math.fsum(a * b for a, b in zip(dO[i], V[j], strict=True)) - D[i])
    # The gradients, from the tables: dV = P^T dO, dQ = dS K / sqrt(d), dK = dS^T Q / sqrt(d).
    dQ = [[math.fsum(dS[i][j] * k_rows[j][c] for j in range(n_keys) if dS[i][j]) * scale for c in range(d)]
          for i in range(n)]
    dK = [[math.fsum(dS[i][j] * q_rows[i][c] for i in range(n) if dS[i][j]) * scale for c in range(d)]
          for j in range(n_keys)]
    dV = [[math.fsum(P[i][j] * dO[i][c] for i in range(n) if P[i][j]) for c in range(width)]
          for j in range(n_keys)]
    return dQ, dK, dV
