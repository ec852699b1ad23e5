"""The weak suite: five tests that look reasonable and pass the correct kernel,
and catch some of the five bugs but not all.

Each test takes the kernel's attention(Q, K, V, causal=False, key_mask=None)
and raises AssertionError when it finds a fault. They compare with the exact
float64 reference within TOL = 2⁻⁷ (the spacing of bfloat16 numbers just
above 1); their V entries are at most 1 in size, so this is the exercise's
bound, TOL · max(1, max |V|).

Read them as a reviewer would: which inputs never appear?
"""
import math

from exercises.breakit import TOL, random_qkv, reference_attention


def assert_close(O, want, what):
    for i, (row, ref_row) in enumerate(zip(O, want, strict=False)):
        for c, (x, y) in enumerate(zip(row, ref_row, strict=False)):
            assert abs(x - y) <= TOL, f"{what}: O[{i}][{c}] = {x:.6g}, expected {y:.6g}"
    assert len(O) == len(want), f"{what}: {len(O)} rows, expected {len(want)}"


def test_one_tile(attention):
    """N = 4, d = 4: one query tile against one key tile"""
    Q, K, V = random_qkv(4, 4, seed=1, scale=0.01)
    assert_close(attention(Q, K, V), reference_attention(Q, K, V), "N = 4, d = 4")


def test_zero_queries_average_the_values(attention):
    """Q = 0: every score is 0, so each row of O is the mean of V's rows (N = 6, d = 4)"""
    _, K, V = random_qkv(6, 4, seed=2)
    Q = [[0.0] * 4 for _ in range(6)]
    mean = [math.fsum(row[c] for row in V) / len(V) for c in range(4)]
    assert_close(attention(Q, K, V), [mean] * 6, "Q = 0, N = 6, d = 4")


def test_random_small_scores(attention):
    """random inputs at N = 8, 16 and 32, d = 8, scores of about 0.01"""
    for n in (8, 16, 32):
        Q, K, V = random_qkv(n, 8, seed=n, scale=0.01)
        assert_close(attention(Q, K, V), reference_attention(Q, K, V), f"N = {n}, d = 8")


def test_key_order_does_not_matter(attention):
    """shuffling the keys (with their values) leaves O unchanged (N = 16, d = 4, queries equal to the keys)"""
    _, K, V = random_qkv(16, 4, seed=3)
    Q = K
    order = list(reversed(range(16)))
    assert_close(attention(Q, [K[j] for j in order], [V[j] for j in order]),
                 attention(Q, K, V), "N = 16, d = 4, Q = K, keys reversed")


def test_outputs_lie_within_the_values(attention):
    """each O[i][c] lies between the smallest and the largest V[j][c] (N = 32, d = 8, queries equal to the keys)"""
    _, K, V = random_qkv(32, 8, seed=4)
    Q = K
    O = attention(Q, K, V)
    for c in range(8):
        lo, hi = min(row[c] for row in V), max(row[c] for row in V)
        for i, row in enumerate(O):
            assert lo <= row[c] <= hi, f"O[{i}][{c}] = {row[c]:.6g} is outside [{lo:.6g}, {hi:.6g}]"
