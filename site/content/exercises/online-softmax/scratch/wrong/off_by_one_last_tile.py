# Wrong: the loop stops one tile early when the last tile is short.
import math


def online_softmax(scores, block):
    m, l = -math.inf, 0.0
    for start in range(0, len(scores) - block + 1, block):
        tile = scores[start:start + block]
        m_new = max([m, *tile])
        if m_new == -math.inf:
            continue
        l = l * math.exp(m - m_new) + math.fsum(math.exp(s - m_new) for s in tile)
        m = m_new
    return m, l


def combine(a, b):
    (ma, la), (mb, lb) = a, b
    m = max(ma, mb)
    if m == -math.inf:
        return (-math.inf, 0.0)
    return (m, la * math.exp(ma - m) + lb * math.exp(mb - m))
