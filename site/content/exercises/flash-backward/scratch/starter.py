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
    # TODO: D_i for every row.
    for c0 in range(0, n_keys, block_cols):                   # one key/value tile at a time
        cols = range(c0, min(n_keys, c0 + block_cols))
        for r0 in range(0, n, block_rows):                    # the query tiles that reach it
            rows = range(r0, min(n, r0 + block_rows))
            # TODO: skip tiles wholly past the causal diagonal, rows that saw no key,
            # and masked keys. For the others: s (times scale), then p from L, dp,
            # ds, and add their parts to dV[j], dQ[i] and dK[j].
            print("key tile", list(cols), "query tile", list(rows), "scale", scale)
    return dQ, dK, dV


# A tiny case to print: two rows, two keys, O and L from a forward you trust.
Q = [[1.0, 0.0], [0.0, 1.0]]
O = [[0.6, 0.4], [0.4, 0.6]]
L = [1.0, 1.0]
print(flash_backward(Q, Q, Q, O, [[1.0, 0.0], [0.0, 1.0]], L, 1, 1))
