# Wrong: a tile of only masked scores gives exp(-inf - (-inf)) = NaN.
import math


def online_softmax(scores, block):
    m, l = -math.inf, 0.0
    for start in range(0, len(scores), block):
        tile = scores[start:start + block]
        m_new = max([m, *tile])
        l = l * math.exp(m - m_new) + math.fsum(math.exp(s - m_new) for s in tile)
        m = m_new
    return m, l


def combine(a, b):
    (ma, la), (mb, lb) = a, b
    m = max(ma, mb)
    return (m, la * math.exp(ma - m) + lb * math.exp(mb - m))
