# Wrong: every input copied first, then the plain double loop over each row and each key, P
# recomputed from L. Right numbers, no table of P, but no tiles either: the copies are all of
# Q, K, V, O and dO held at once, and block_rows and block_cols are never used.
import math


def flash_backward(Q, K, V, O, dO, L, block_rows, block_cols, causal=False, key_mask=None):
    """Gradients of tiled attention, recomputing P from the saved logsumexp L.

    Q, O, dO: N rows of d floats; K, V: N_k rows; L: N floats (-inf for a row
    that saw no key). Returns (dQ, dK, dV), shaped like Q, K and V.
    """
    Q, K, V, O, dO = ([list(row) for row in rows] for rows in (Q, K, V, O, dO))   # my own copies
    n, n_keys = len(Q), len(K)
    d = len(Q[0])
    width = len(V[0])
    scale = 1.0 / math.sqrt(d)
    dQ = [[0.0] * d for _ in range(n)]
    dK = [[0.0] * d for _ in range(n_keys)]
    dV = [[0.0] * width for _ in range(n_keys)]
    for i in range(n):
        if L[i] == -math.inf:
            continue
        D = math.fsum(a * b for a, b in zip(dO[i], O[i], strict=True))
        for j in range(n_keys):
            if (causal and j > i) or (key_mask is not None and not key_mask[j]):
                continue
            p = math.exp(math.fsum(a * b for a, b in zip(Q[i], K[j], strict=True)) * scale - L[i])
            ds = p * (math.fsum(a * b for a, b in zip(dO[i], V[j], strict=True)) - D)
            for c in range(width):
                dV[j][c] += p * dO[i][c]
            for c in range(d):
                dQ[i][c] += ds * K[j][c] * scale
                dK[j][c] += ds * Q[i][c] * scale
    return dQ, dK, dV
