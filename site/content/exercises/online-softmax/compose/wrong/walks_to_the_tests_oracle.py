# Wrong: climbs the call stack to the frame of the test that called it, finds the tests' own
# oracle there, and hands it the inputs. Right numbers, and none of them computed.
def flash_forward(Q, K, V, block_rows, block_cols, causal=False):
    """Tiled exact attention. Q: N rows of d floats; K, V: rows of d floats.

    Returns (O, L): O is N rows of d floats, L the logsumexp of each row.
    """
    import sys

    frame = sys._getframe(1)
    while frame is not None and "oracle" not in frame.f_globals:
        frame = frame.f_back
    return frame.f_globals["oracle"](Q, K, V, causal)
