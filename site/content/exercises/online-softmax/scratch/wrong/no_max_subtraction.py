# Wrong: sums exp(s) directly instead of exp(s - m); overflows for large scores.
import math


def online_softmax(scores, block):
    m, l = -math.inf, 0.0
    for start in range(0, len(scores), block):
        tile = scores[start:start + block]
        m = max([m, *tile])
        l = l + math.fsum(math.exp(s) for s in tile)
    return m, (l * math.exp(-m) if m != -math.inf else 0.0)


def combine(a, b):
    (ma, la), (mb, lb) = a, b
    m = max(ma, mb)
    if m == -math.inf:
        return (-math.inf, 0.0)
    total = la * math.exp(ma) + lb * math.exp(mb)
    return (m, total * math.exp(-m))
