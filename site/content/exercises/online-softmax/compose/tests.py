"""Compose: flash_forward(Q, K, V, block_rows, block_cols, causal) -> (O, L).

The oracle is the emulator's exact float64 attention (emulator.attention.
reference: dots formed exactly and rounded once, softmax in float64). A row
passes when every entry of O is within TOL of the reference and L within
TOL·max(1, |L|). Cases run smallest N first.

Right numbers are not enough: test_reads_like_the_fused_kernel hands the code
Q, K and V that count their row reads (exercises.instruments), and holds them
to the emulator's fused kernel at the same block_rows and block_cols (either
loop order), with at most two key tiles of scores held at once. A copy hides
from a read count, so test_holds_a_tile_of_scores runs the call under
tracemalloc (exercises.skill) at a size where a B_r × N strip of scores, or the
N × N table, is many times the budget made of the tiles: B_r × (B_c + d + 2)
numbers (a tile of S, of O, m and l), and the output's size once more, for a
loop order that keeps O, m and l for every row (key tiles outer).

Every test calls the learner's function first, with nothing but its inputs in
reach; the expected values (oracle) are worked out after it returns.
"""
import math
import random

from emulator.attention import reference
from emulator.i18n import _
from exercises import instruments
from exercises.testing import N_, Failure, describe_case, expect_close, expect_pair, fmt, given, need, titled

TOL = 1e-9  # float64: the learner's sums round differently from fsum, by ~1e-15


def qkv(n, d, seed, q_scale=1.0):
    """Random Q, K (uniform on ±√3, so scores have variance about 1) and V (±1)."""
    rng = random.Random(seed)
    r3 = math.sqrt(3.0)
    q = [[q_scale * rng.uniform(-r3, r3) for _ in range(d)] for _ in range(n)]
    k = [[rng.uniform(-r3, r3) for _ in range(d)] for _ in range(n)]
    v = [[rng.uniform(-1.0, 1.0) for _ in range(d)] for _ in range(n)]
    return q, k, v


def oracle(Q, K, V, causal):
    """(O, L) from the emulator's float64 reference, row by row."""
    d = len(Q[0])
    out_o, out_l = [], []
    for i, q in enumerate(Q):
        keys = range(len(K)) if not causal else range(min(i + 1, len(K)))
        dots = [math.fsum(a * b for a, b in zip(q, K[j], strict=True)) for j in keys]
        vt = [[V[j][c] for j in keys] for c in range(len(V[0]) if V else d)]
        o, lse, _p = reference(dots, vt, d)
        out_o.append(o)
        out_l.append(lse)
    return out_o, out_l


def run_case(mod, Q, K, V, br, bc, causal, label):
    fn = need(mod, "flash_forward")
    desc = describe_case(label, br, bc, causal)
    with given(desc):
        got = fn(Q, K, V, br, bc, causal)   # the learner's call: only its inputs in reach
        expect_output(got, Q, K, V, causal, desc)


def expect_output(got, Q, K, V, causal, desc):
    """Raise Failure unless ``got`` is the (O, L) of the inputs; worked out only now,
    after the learner's call has returned."""
    got = expect_pair(got, "(O, L)")
    want_o, want_l = oracle(Q, K, V, causal)
    o, lse = got
    if not isinstance(o, list) or len(o) != len(Q) or not isinstance(lse, (list, tuple)) or len(lse) != len(Q):
        raise Failure(_("{input}: expected O with {n} rows and L with {n} values, "
                        "got {rows} rows and {values} values").format(
                          input=desc, n=len(Q), rows=len(o) if isinstance(o, list) else fmt(o),
                          values=len(lse) if isinstance(lse, (list, tuple)) else fmt(lse)),
                      input=desc, expected=_("{n} rows").format(n=len(Q)), got=fmt(o))
    for i in range(len(Q)):
        row = o[i]
        if not isinstance(row, (list, tuple)) or len(row) != len(want_o[i]):
            raise Failure(_("{input}: expected O[{i}] to have {count} numbers, got {got}").format(
                              input=desc, i=i, count=len(want_o[i]), got=fmt(row)),
                          input=desc, expected=_("{count} numbers").format(count=len(want_o[i])),
                          got=fmt(row))
        for c in range(len(row)):
            expect_close(f"O[{i}][{c}]", row[c], want_o[i][c], rel=0.0, abs_=TOL)
        expect_close(f"L[{i}]", lse[i], want_l[i], rel=TOL, abs_=TOL)


@titled(N_("N = 1: one query, one key"))
def test_one_row(mod):
    Q, K, V = qkv(1, 4, 1)
    run_case(mod, Q, K, V, 1, 1, False, "N = 1, d = 4")
    run_case(mod, Q, K, V, 16, 8, False, "N = 1, d = 4")


@titled(N_("random inputs, full attention, ragged last tiles (N = 5, 65, 100)"))
def test_random_full(mod):
    for n, d, br, bc, seed in ((5, 3, 2, 2, 5), (65, 8, 16, 8, 65), (100, 4, 32, 16, 100), (100, 4, 7, 5, 7)):
        Q, K, V = qkv(n, d, seed)
        run_case(mod, Q, K, V, br, bc, False, _("N = {n}, d = {d}, seed {seed}").format(n=n, d=d, seed=seed))


@titled(N_("causal: row i sees keys 0..i only (N = 5, 65, 100)"))
def test_random_causal(mod):
    for n, d, br, bc, seed in ((5, 3, 2, 2, 5), (65, 8, 16, 8, 65), (100, 4, 32, 16, 100), (100, 4, 7, 5, 7)):
        Q, K, V = qkv(n, d, seed)
        run_case(mod, Q, K, V, br, bc, True, _("N = {n}, d = {d}, seed {seed}").format(n=n, d=d, seed=seed))


@titled(N_("scores near ±900: exp overflows unless the running max is subtracted"))
def test_large_scores(mod):
    Q, K, V = qkv(9, 4, 9, q_scale=300.0)
    run_case(mod, Q, K, V, 4, 2, False,
             _("N = {n}, d = {d}, Q scaled by {scale} (scores up to about {top})").format(n=9, d=4, scale=300, top=900))


@titled(N_("rows with no keys at all: O = 0 and L = -inf, no NaN and no ZeroDivisionError"))
def test_rows_with_no_keys(mod):
    Q = qkv(3, 4, 3)[0]
    empty = _("N = {n}, d = {d}, K and V empty").format(n=3, d=4)
    run_case(mod, Q, [], [], 2, 2, False, empty)
    run_case(mod, Q, [], [], 2, 2, True, empty)


# (N, d, block_rows, block_cols, seed, causal): several query and key tiles, ragged ones too.
READ_CASES = ((65, 4, 32, 8, 65, False), (65, 4, 16, 8, 66, True), (100, 4, 7, 5, 7, True))


@titled(N_("reads K and V as the fused kernel does: once per query tile, never a whole row of scores"))
def test_reads_like_the_fused_kernel(mod):
    fn = need(mod, "flash_forward")
    for n, d, br, bc, seed, causal in READ_CASES:
        Q, K, V = qkv(n, d, seed)
        desc = describe_case(_("N = {n}, d = {d}, seed {seed}").format(n=n, d=d, seed=seed), br, bc, causal)
        with given(desc):
            instruments.run_forward(fn, Q, K, V, br, bc, causal, desc)


# (N, d, block_rows, block_cols): N large beside the tiles, so that a B_r x N strip of
# scores, or one whole row of N scores, is several times a tile's budget; d small, so that
# the output is too (a pass with the key tiles outer may hold every row's state).
HOLD = (192, 2, 4, 2)


@titled(N_("holds a tile of scores, never a B_r × N strip or the N × N table"))
def test_holds_a_tile_of_scores(mod):
    fn = need(mod, "flash_forward")
    n, d, br, bc = HOLD
    Q, K, V = qkv(n, d, 30)
    desc = describe_case(_("N = {n}, d = {d}, seed {seed}").format(n=n, d=d, seed=30), br, bc, False)
    with given(desc):
        run, order = instruments.measure_forward(fn, Q, K, V, br, bc, False)  # only its inputs in reach
        expect_output(run.result, Q, K, V, False, desc)
    instruments.hold_forward(run, order, desc, n, d, br, bc)
