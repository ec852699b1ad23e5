import math


def flash_forward(Q, K, V, block_rows, block_cols, causal=False):
    """Tiled exact attention. Q: N rows of d floats; K, V: rows of d floats.

    Returns (O, L): O is N rows of d floats, L the logsumexp of each row.
    """
    n = len(Q)
    d = len(Q[0]) if Q else 0
    O = [[0.0] * d for _ in range(n)]
    L = [-math.inf] * n
    return O, L


Q = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
print(flash_forward(Q, Q, Q, 2, 1))
