import math


def online_softmax(scores, block):
    """Running max m and sum l of exp(s - m) over scores, visited in tiles of `block`."""
    m, l = -math.inf, 0.0
    # visit scores[start:start + block] for each tile, updating (m, l)
    return m, l


def combine(a, b):
    """Merge two partial states (m, l) into one."""
    return a


print(online_softmax([1, 2, 3, 0], 2))   # expect (3, 1.5530...)
