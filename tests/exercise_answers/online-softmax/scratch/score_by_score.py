# Right, another style: the running pair updated one score at a time, within each tile. Each
# score is read once, in order, and only the pair is kept between scores.
import math


def online_softmax(scores, block):
    m, l = -math.inf, 0.0
    for start in range(0, len(scores), block):
        for s in scores[start:start + block]:
            if s == -math.inf:
                continue
            if s > m:
                l = l * math.exp(m - s) + 1.0
                m = s
            else:
                l += math.exp(s - m)
    return (m, l) if l else (-math.inf, 0.0)


def combine(a, b):
    if a[0] < b[0]:
        a, b = b, a
    if a[0] == -math.inf:
        return (-math.inf, 0.0)
    return (a[0], a[1] + b[1] * math.exp(b[0] - a[0]))
