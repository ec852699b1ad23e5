# Wrong: each score copied into a plain float of its own, into a new list, then two passes over
# that list. Only one of the scores handed in is alive at a time, but the copy holds the whole row.
import math


def online_softmax(scores, block):
    """Running max m and sum l of exp(s - m) over scores, visited in tiles of `block`."""
    row = []
    for s in scores:
        row.append(float(s))
    m = max(row, default=-math.inf)
    if m == -math.inf:
        return (-math.inf, 0.0)
    return (m, math.fsum(math.exp(x - m) for x in row))


def combine(a, b):
    """Merge two partial states (m, l) into one; (-inf, 0) is the identity."""
    (ma, la), (mb, lb) = a, b
    m = max(ma, mb)
    if m == -math.inf:
        return (-math.inf, 0.0)
    return (m, la * math.exp(ma - m) + lb * math.exp(mb - m))
