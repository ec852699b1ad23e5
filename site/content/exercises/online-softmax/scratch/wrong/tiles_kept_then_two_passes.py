# Wrong: the tiles are walked in order, as the prompt says, but each one is kept; then the max
# over all of them and the sum against it. One pass over the tiles, and the whole row held.
import math


def online_softmax(scores, block):
    """Running max m and sum l of exp(s - m) over scores, visited in tiles of `block`."""
    tiles = [scores[i:i + block] for i in range(0, len(scores), block)]
    m = max((max(t) for t in tiles), default=-math.inf)
    if m == -math.inf:
        return (-math.inf, 0.0)
    return (m, math.fsum(math.exp(s - m) for t in tiles for s in t))


def combine(a, b):
    """Merge two partial states (m, l) into one; (-inf, 0) is the identity."""
    (ma, la), (mb, lb) = a, b
    m = max(ma, mb)
    if m == -math.inf:
        return (-math.inf, 0.0)
    return (m, la * math.exp(ma - m) + lb * math.exp(mb - m))
