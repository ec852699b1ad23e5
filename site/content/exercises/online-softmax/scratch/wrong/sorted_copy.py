# Wrong: sort the scores, so the max is the last one, then sum against it. sorted() makes a
# copy of the whole row: every score held at once, and block never used.
import math


def online_softmax(scores, block):
    """Running max m and sum l of exp(s - m) over scores, visited in tiles of `block`."""
    s = sorted(scores)
    if not s or s[-1] == -math.inf:
        return (-math.inf, 0.0)
    m = s[-1]
    return (m, math.fsum(math.exp(x - m) for x in s))


def combine(a, b):
    """Merge two partial states (m, l) into one; (-inf, 0) is the identity."""
    (ma, la), (mb, lb) = a, b
    m = max(ma, mb)
    if m == -math.inf:
        return (-math.inf, 0.0)
    return (m, la * math.exp(ma - m) + lb * math.exp(mb - m))
