# Wrong: builds the whole N x N score table S, then P = softmax(S) row by row, then O = P V:
# right numbers, but the plain kernel's table, which a fused pass never forms.
import math


def flash_forward(Q, K, V, block_rows, block_cols, causal=False):
    """Tiled exact attention. Q: N rows of d floats; K, V: rows of d floats.

    Returns (O, L): O is N rows of d floats, L the logsumexp of each row.
    """
    n, n_keys = len(Q), len(K)
    d = len(Q[0]) if Q else 0
    width = len(V[0]) if V else d
    scale = 1.0 / math.sqrt(d)
    S = [[math.fsum(a * b for a, b in zip(Q[i], K[j], strict=True)) * scale
          if not (causal and j > i) else -math.inf for j in range(n_keys)] for i in range(n)]
    O, L = [], []
    for i in range(n):
        m = max(S[i], default=-math.inf)
        if m == -math.inf:
            O.append([0.0] * width)
            L.append(-math.inf)
            continue
        P = [math.exp(s - m) for s in S[i]]
        l = math.fsum(P)
        O.append([math.fsum(P[j] * V[j][c] for j in range(n_keys)) / l for c in range(width)])
        L.append(m + math.log(l))
    return O, L
