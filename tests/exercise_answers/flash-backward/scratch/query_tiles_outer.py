# Right, in the other loop order: query tiles outer, key tiles inner (FlashAttention-2's dQ
# pass order, dK and dV summed across query tiles). D is formed per query tile, once per row.
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
    for r0 in range(0, n, block_rows):
        rows = range(r0, min(n, r0 + block_rows))
        D = {i: math.fsum(a * b for a, b in zip(dO[i], O[i], strict=True)) for i in rows}
        for c0 in range(0, n_keys, block_cols):
            if causal and c0 > rows[-1]:
                break
            k_tile, v_tile = K[c0:c0 + block_cols], V[c0:c0 + block_cols]
            for i in rows:
                if L[i] == -math.inf:
                    continue
                q = Q[i]
                for jj, (k, v) in enumerate(zip(k_tile, v_tile, strict=True)):
                    j = c0 + jj
                    if (causal and j > i) or (key_mask is not None and not key_mask[j]):
                        continue
                    p = math.exp(math.fsum(a * b for a, b in zip(q, k, strict=True)) * scale - L[i])
                    ds = p * (math.fsum(a * b for a, b in zip(dO[i], v, strict=True)) - D[i])
                    for c in range(width):
                        dV[j][c] += p * dO[i][c]
                    for c in range(d):
                        dQ[i][c] += ds * k[c] * scale
                        dK[j][c] += ds * q[c] * scale
    return dQ, dK, dV
