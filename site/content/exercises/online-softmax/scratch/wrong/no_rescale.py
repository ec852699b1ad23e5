# Wrong: when a later tile raises the max, the running sum is not rescaled.
import math


def online_softmax(scores, block):
    m, l = -math.inf, 0.0
    for start in range(0, len(scores), block):
        tile = scores[start:start + block]
        m = max([m, *tile])
        if m == -math.inf:
            continue
        l = l + math.fsum(math.exp(s - m) for s in tile)
    return m, l


def combine(a, b):
    (ma, la), (mb, lb) = a, b
    m = max(ma, mb)
    if m == -math.inf:
        return (-math.inf, 0.0)
    return (m, la + lb)
