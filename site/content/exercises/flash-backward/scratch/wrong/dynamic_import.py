# Wrong: the project's float64 backward imported under a name put together at run time, so that
# no import statement names it. No gradient is computed.
def flash_backward(Q, K, V, O, dO, L, block_rows, block_cols, causal=False, key_mask=None):
    """Gradients of tiled attention, recomputing P from the saved logsumexp L.

    Q, O, dO: N rows of d floats; K, V: N_k rows; L: N floats (-inf for a row
    that saw no key). Returns (dQ, dK, dV), shaped like Q, K and V.
    """
    name = "".join(["emu", "lator", ".", "backward", "_reference"])
    module = __import__(name, fromlist=["reference"])
    mask = None if key_mask is None else [list(key_mask) for _ in Q]
    ref = module.reference(Q, K, V, dO, causal, mask)
    return ref["dQ"], ref["dK"], ref["dV"]
