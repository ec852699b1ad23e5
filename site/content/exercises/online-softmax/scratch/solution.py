import math


def online_softmax(scores, block):
    """Running max m and sum l of exp(s - m) over scores, visited in tiles of `block`."""
    m, l = -math.inf, 0.0
    for start in range(0, len(scores), block):
        tile = scores[start:start + block]
        m_new = max([m, *tile])
        if m_new == -math.inf:          # nothing but masked scores so far
            continue
        l = l * math.exp(m - m_new) + math.fsum(math.exp(s - m_new) for s in tile)
        m = m_new
    return m, l


def combine(a, b):
    """Merge two partial states (m, l) into one; (-inf, 0) is the identity."""
    (ma, la), (mb, lb) = a, b
    m = max(ma, mb)
    if m == -math.inf:
        return (-math.inf, 0.0)
    return (m, la * math.exp(ma - m) + lb * math.exp(mb - m))
