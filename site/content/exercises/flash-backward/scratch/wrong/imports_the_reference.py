# Wrong: the project's own float64 backward imported and called: the gradients the tests compare
# with, and no recomputation, no tiles, no L.
from emulator.backward_reference import reference


def flash_backward(Q, K, V, O, dO, L, block_rows, block_cols, causal=False, key_mask=None):
    """Gradients of tiled attention, recomputing P from the saved logsumexp L.

    Q, O, dO: N rows of d floats; K, V: N_k rows; L: N floats (-inf for a row
    that saw no key). Returns (dQ, dK, dV), shaped like Q, K and V.
    """
    mask = None if key_mask is None else [list(key_mask) for _ in Q]
    ref = reference(Q, K, V, dO, causal, mask)
    return ref["dQ"], ref["dK"], ref["dV"]
