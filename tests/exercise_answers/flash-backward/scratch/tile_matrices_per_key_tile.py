# Right, in FlashAttention-2's backward style with whole tiles: for each key tile, its rows of K
# and V and its dK and dV accumulators are held; for each query tile that reaches it, the tiles
# S, P, dP and dS (block_rows x block_cols each) are formed as small matrices, then dV, dK and dQ
# take their products. dK and dV are written out once the key tile is done.
import math


def flash_backward(Q, K, V, O, dO, L, block_rows, block_cols, causal=False, key_mask=None):
    n, n_keys = len(Q), len(K)
    d = len(Q[0])
    width = len(V[0])
    scale = 1.0 / math.sqrt(d)
    dot = lambda a, b: math.fsum(x * y for x, y in zip(a, b, strict=True))  # noqa: E731
    D = [dot(dO[i], O[i]) for i in range(n)]
    dQ = [[0.0] * d for _ in range(n)]
    dK, dV = [], []
    for c0 in range(0, n_keys, block_cols):
        c1 = min(n_keys, c0 + block_cols)
        k_tile, v_tile = K[c0:c1], V[c0:c1]
        dk_tile = [[0.0] * d for _ in k_tile]
        dv_tile = [[0.0] * width for _ in v_tile]
        for r0 in range(0, n, block_rows):
            r1 = min(n, r0 + block_rows)
            if causal and r1 - 1 < c0:
                continue
            q_tile, do_tile = Q[r0:r1], dO[r0:r1]
            # P (tile): exp(S - L), zero where masked or for a row that saw no key.
            P = [[math.exp(dot(q, k) * scale - L[i])
                  if L[i] > -math.inf and not (causal and j > i) and (key_mask is None or key_mask[j]) else 0.0
                  for j, k in zip(range(c0, c1), k_tile, strict=True)]
                 for i, q in zip(range(r0, r1), q_tile, strict=True)]
            dP = [[dot(do, v) for v in v_tile] for do in do_tile]
            dS = [[p * (dp - D[i]) for p, dp in zip(prow, dprow, strict=True)]
                  for i, prow, dprow in zip(range(r0, r1), P, dP, strict=True)]
            for jj in range(c1 - c0):
                for c in range(width):
                    dv_tile[jj][c] += math.fsum(P[ii][jj] * do_tile[ii][c] for ii in range(r1 - r0))
                for c in range(d):
                    dk_tile[jj][c] += math.fsum(dS[ii][jj] * q_tile[ii][c] for ii in range(r1 - r0)) * scale
            for ii in range(r1 - r0):
                for c in range(d):
                    dQ[r0 + ii][c] += math.fsum(dS[ii][jj] * k_tile[jj][c] for jj in range(c1 - c0)) * scale
        dK += dk_tile
        dV += dv_tile
    return dQ, dK, dV
