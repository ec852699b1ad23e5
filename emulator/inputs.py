"""Seeded random inputs for the lab's Check.

Distribution (documented for the page): every entry of Q and K is drawn
uniformly from [−√3, √3) (mean 0, variance 1), so a scaled score
q·k/√d has mean 0 and variance 1; every entry of V is uniform on [−1, 1),
and so is every entry of the backward's upstream gradient dO (:func:`random_do`).
Each value is rounded to float32 before use, so the kernels and the float64
reference start from the very same numbers.

Only ``random.Random.random`` and exact arithmetic are used, so CPython 3.11
and Pyodide's 3.14 produce identical inputs for the same seed.
"""
from __future__ import annotations

import random
from array import array

SQRT3 = 1.7320508075688772


def random_qkv(n: int, d: int, seed: int = 0):
    """Return (Q, K, V): three lists of N rows, each a list of d float32 values.

    Shapes (N, d), float32 values held as Python floats. seed: a whole number
    ≥ 0 (the lab takes 0 to 2**32 − 1, emulator.tiling.SEED_MAX). Raises
    ValueError if n < 1, d < 1 or seed < 0: ``random.Random`` seeds with the
    absolute value of an int, so seed −7 would silently give seed 7's inputs.
    """
    if n < 1 or d < 1:
        raise ValueError(f"need n ≥ 1 and d ≥ 1, got n={n}, d={d}")
    _check_seed(seed)
    rng = random.Random(seed)
    u = rng.random

    def block(lo_scale):
        rows = []
        for _ in range(n):
            rows.append(array("f", [(2.0 * u() - 1.0) * lo_scale for _ in range(d)]).tolist())
        return rows

    q = block(SQRT3)
    k = block(SQRT3)
    v = block(1.0)
    return q, k, v


def _check_seed(seed) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"a seed is a whole number ≥ 0 (random.Random would read −7 as 7), got {seed!r}")


def random_do(n: int, d: int, seed: int = 0) -> list:
    """A seeded upstream gradient dO: (N, d) rows, entries uniform on [−1, 1), float32.

    Drawn from its own generator (``random.Random(f"dO:{seed}")``), so Q, K
    and V stay those of :func:`random_qkv` for the same seed. Raises
    ValueError for a seed below 0, as :func:`random_qkv` does.
    """
    _check_seed(seed)
    rng = random.Random(f"dO:{seed}")
    u = rng.random
    return [array("f", [2.0 * u() - 1.0 for _ in range(d)]).tolist() for _ in range(n)]
