# Right, another way: each tile's own (m, l) in one go, merged with combine as the tiles
# go by. Every score is read once, tile by tile.
import math
from functools import reduce


def combine(a, b):
    (ma, la), (mb, lb) = a, b
    m = max(ma, mb)
    if m == -math.inf:
        return (-math.inf, 0.0)
    return (m, la * math.exp(ma - m) + lb * math.exp(mb - m))


def _state(tile):
    m = max(tile, default=-math.inf)
    if m == -math.inf:
        return (-math.inf, 0.0)
    return (m, math.fsum(math.exp(s - m) for s in tile))


def online_softmax(scores, block):
    tiles = (scores[i:i + block] for i in range(0, len(scores), block))
    return reduce(combine, map(_state, tiles), (-math.inf, 0.0))
