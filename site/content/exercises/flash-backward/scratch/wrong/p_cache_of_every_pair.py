# Wrong: tiled, P recomputed from L, but every P_ij kept in a cache, (i, j) -> P_ij, in case a
# later tile needs it again. Right numbers and the tiled pass's reads; by the last tile the cache
# is the whole table of P, one entry per pair a row sees.
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
    D = [math.fsum(a * b for a, b in zip(dO[i], O[i], strict=True)) for i in range(n)]
    cache = {}                                                # (i, j) -> P_ij, kept for reuse
    for c0 in range(0, n_keys, block_cols):
        cols = range(c0, min(n_keys, c0 + block_cols))
        for r0 in range(0, n, block_rows):
            rows = range(r0, min(n, r0 + block_rows))
            if causal and c0 > rows[-1]:
                continue
            for i in rows:
                if L[i] == -math.inf:
                    continue
                for j in cols:
                    if (causal and j > i) or (key_mask is not None and not key_mask[j]):
                        continue
                    p = cache.get((i, j))
                    if p is None:
                        p = cache[i, j] = math.exp(math.fsum(a * b for a, b in zip(Q[i], K[j], strict=True))
                                                   * scale - L[i])
                    dp = math.fsum(a * b for a, b in zip(dO[i], V[j], strict=True))
                    ds = p * (dp - D[i])
                    for c in range(width):
                        dV[j][c] += p * dO[i][c]
                    for c in range(d):
                        dQ[i][c] += ds * K[j][c] * scale
                        dK[j][c] += ds * Q[i][c] * scale
    return dQ, dK, dV
