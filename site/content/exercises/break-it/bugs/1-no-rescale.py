"""Fused attention forward with the online softmax, written to be read.

attention(Q, K, V, causal=False, key_mask=None) -> O

  Q         N rows of d floats (the queries)
  K, V      N_k rows of d floats (keys and values; N_k may differ from N)
  causal    row i sees only keys j <= i
  key_mask  N_k booleans, False for a padding key that no row may see
  O         N rows of d floats; a row that sees no key at all gets zeros

One query tile of BLOCK_ROWS rows at a time, the keys stream past in tiles of
BLOCK_COLS. Each row keeps three things between key tiles: m, the largest
score seen so far; l, the sum of exp(score - m) so far; and acc, the sum of
exp(score - m) * V[j] so far. When a tile raises m, the old l and acc were
measured against the old m, so both are multiplied by exp(m_old - m_new)
before the tile's own terms are added. O = acc / l at the end.

Sources: Milakov & Gimelshein 2018, "Online normalizer calculation for
softmax", Algorithm 3; Dao et al. 2022, FlashAttention, Algorithm 1.
Plain Python floats (float64); no numpy, so it runs in the page too.
"""
import math

BLOCK_ROWS = 4  # query rows per tile (B_r)
BLOCK_COLS = 4  # key rows per tile (B_c)


def attention(Q, K, V, causal=False, key_mask=None):
    n, n_keys = len(Q), len(K)
    d = len(Q[0])
    width = len(V[0]) if V else d
    scale = 1.0 / math.sqrt(d)

    def visible(i, j):
        if key_mask is not None and not key_mask[j]:
            return False
        return not causal or j <= i

    O = []
    for r0 in range(0, n, BLOCK_ROWS):
        rows = range(r0, min(r0 + BLOCK_ROWS, n))
        m = [-math.inf for _ in rows]        # running max of each row
        l = [0.0 for _ in rows]              # running sum of exp(s - m)
        acc = [[0.0] * width for _ in rows]  # running sum of exp(s - m) * V[j]
        n_tiles = (n_keys + BLOCK_COLS - 1) // BLOCK_COLS  # the last tile may be short
        for t in range(n_tiles):
            cols = range(t * BLOCK_COLS, min((t + 1) * BLOCK_COLS, n_keys))
            for a, i in enumerate(rows):
                s = [math.fsum(q * k for q, k in zip(Q[i], K[j], strict=False)) * scale
                     if visible(i, j) else -math.inf
                     for j in cols]
                # The new running max, and the number every exponent is taken
                # against: the max itself, or 0 while no key has been visible
                # (any finite number works then: every term is exp(-inf) = 0).
                m_new = max(m[a], max(s))
                shift = m_new if m_new > -math.inf else 0.0
                m_old = m[a] if m[a] > -math.inf else shift  # nothing seen yet: l = acc = 0, any factor will do
                alpha = math.exp(m_old - shift)  # what the old terms are worth now
                p = [math.exp(x - shift) for x in s]
                l[a] = l[a] * alpha + math.fsum(p)
                acc[a] = [acc[a][c] + math.fsum(pj * V[j][c] for pj, j in zip(p, cols, strict=False))
                          for c in range(width)]
                m[a] = m_new
        for a in range(len(rows)):
            if l[a] == 0.0:                  # the row saw no key: O = 0, not 0/0
                O.append([0.0] * width)
            else:
                O.append([x / l[a] for x in acc[a]])
    return O
