# Wrong: P stored: the whole N x N table P = exp(S - L) is formed first, from the saved L, and the
# gradients are then read off it. Right numbers, but the table the fused forward never wrote.
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
    def seen(i, j):
        return not ((causal and j > i) or (key_mask is not None and not key_mask[j])) and L[i] > -math.inf

    P = [[math.exp(math.fsum(a * b for a, b in zip(Q[i], K[j], strict=True)) * scale - L[i]) if seen(i, j)
          else 0.0 for j in range(n_keys)] for i in range(n)]
    D = [math.fsum(a * b for a, b in zip(dO[i], O[i], strict=True)) for i in range(n)]
    for i in range(n):
        for j in range(n_keys):
            p = P[i][j]
            if p == 0.0:
                continue
            dp = math.fsum(a * b for a, b in zip(dO[i], V[j], strict=True))
            ds = p * (dp - D[i])
            for c in range(width):
                dV[j][c] += p * dO[i][c]
            for c in range(d):
                dQ[i][c] += ds * K[j][c] * scale
                dK[j][c] += ds * Q[i][c] * scale
    return dQ, dK, dV
