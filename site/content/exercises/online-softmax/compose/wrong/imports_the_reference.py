# Wrong: the emulator's own float64 attention, the very reference the tests compare with,
# called row by row. Right numbers, no tiling, no online softmax: nothing of the skill.
from emulator.attention import reference


def flash_forward(Q, K, V, block_rows, block_cols, causal=False):
    """Tiled exact attention. Q: N rows of d floats; K, V: rows of d floats.

    Returns (O, L): O is N rows of d floats, L the logsumexp of each row.
    """
    d = len(Q[0]) if Q else 0
    O, L = [], []
    for i, q in enumerate(Q):
        keys = range(min(i + 1, len(K))) if causal else range(len(K))
        dots = [sum(a * b for a, b in zip(q, K[j], strict=True)) for j in keys]
        columns = [[V[j][c] for j in keys] for c in range(len(V[0]) if V else d)]
        o, lse, _p = reference(dots, columns, d)
        O.append(o)
        L.append(lse)
    return O, L
