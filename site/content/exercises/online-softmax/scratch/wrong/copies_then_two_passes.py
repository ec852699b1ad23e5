# Wrong: a copy of the scores first, then the whole-row max and the sum against it, over the
# copy. The scores are read once, in order, so a read count sees one pass; but every score is
# held at once, and block is never used.
import math


def online_softmax(scores, block):
    """Running max m and sum l of exp(s - m) over scores, visited in tiles of `block`."""
    s = list(scores)
    m = max(s, default=-math.inf)
    if m == -math.inf:
        return (-math.inf, 0.0)
    return (m, math.fsum(math.exp(x - m) for x in s))


def combine(a, b):
    """Merge two partial states (m, l) into one; (-inf, 0) is the identity."""
    (ma, la), (mb, lb) = a, b
    m = max(ma, mb)
    if m == -math.inf:
        return (-math.inf, 0.0)
    return (m, la * math.exp(ma - m) + lb * math.exp(mb - m))
