# Wrong: no pre-pass for D: D_i = dO_i . O_i is formed again for every key it meets, inside the
# tiles. Right numbers, but O is read once per key tile instead of once.
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
    dQ = [[0.0] * d for _ in range(n)]
    dK = [[0.0] * d for _ in range(n_keys)]
    dV = [[0.0] * width for _ in range(n_keys)]
    for c0 in range(0, n_keys, block_cols):                   # one key/value tile at a time
        cols = range(c0, min(n_keys, c0 + block_cols))
        for r0 in range(0, n, block_rows):                    # the query tiles that reach it
            rows = range(r0, min(n, r0 + block_rows))
            if causal and c0 > rows[-1]:
                continue                                      # wholly past the diagonal
            for i in rows:
                if L[i] == -math.inf:
                    continue
                for j in cols:
                    if (causal and j > i) or (key_mask is not None and not key_mask[j]):
                        continue
                    d_i = math.fsum(a * b for a, b in zip(dO[i], O[i], strict=True))   # D, again
                    s = math.fsum(a * b for a, b in zip(Q[i], K[j], strict=True)) * scale
                    p = math.exp(s - L[i])
                    dp = math.fsum(a * b for a, b in zip(dO[i], V[j], strict=True))
                    ds = p * (dp - d_i)
                    for c in range(width):
                        dV[j][c] += p * dO[i][c]
                    for c in range(d):
                        dQ[i][c] += ds * K[j][c] * scale
                        dK[j][c] += ds * Q[i][c] * scale
    return dQ, dK, dV
