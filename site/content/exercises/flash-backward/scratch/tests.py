"""Scratch: flash_backward(Q, K, V, O, dO, L, block_rows, block_cols, causal, key_mask) -> (dQ, dK, dV).

The oracle is the emulator's exact float64 backward (emulator.backward.reference:
P from the float64 forward, dS = P∘(dP − D)), with O and L from its float64
forward (forward64). No P is ever passed: the kernel must recompute it from L.
Every entry must be within TOL·max(1, |expected|). Cases run smallest first.

test_reads_like_the_fused_backward hands the code Q, K, V and O that count
their row reads (exercises.instruments) and holds them to the manifest's
fused-backward walk at the same tiles: K and V once and Q once per key tile
that reaches it (or the other loop order), O once (for D), and no more than
two key tiles of P held at once. A stored P, or D recomputed inside the
tiles, gets the numbers right and these counts wrong.

test_holds_no_table_of_p measures the memory the call holds beyond the
gradients it returns (exercises.skill.measure, tracemalloc) in the memory
case of exercise.toml (small tiles, N × N many tiles' worth), against
exercises.instruments.backward_budget: D and a few tiles, from block_rows,
block_cols and d. Tiles walked in order only to fill a table of P read like
the fused backward and hold N × N numbers.

Every expected value is computed after the learner's call has returned, so
no frame holds it while the learner's code runs.
"""
import math

from emulator.backward import forward64, random_do, reference
from emulator.i18n import _
from emulator.inputs import random_qkv
from exercises import content, instruments
from exercises.testing import N_, Failure, describe_case, expect_close, fmt, given, need, titled

TOL = 1e-9
SHIFT = math.log(2.0)   # the L test adds ln 2 to odd rows' L: their P must halve


def square_mask(key_mask, n):
    return None if key_mask is None else [list(key_mask) for _ in range(n)]


def describe(label, br, bc, causal, key_mask):
    return describe_case(label, br, bc, causal, key_mask)


def compare(desc, got, want):
    if not isinstance(got, (tuple, list)) or len(got) != 3:
        raise Failure(_("{input}: expected a triple (dQ, dK, dV), got {got}").format(input=desc, got=fmt(got)),
                      input=desc,
                      expected="(dQ, dK, dV)", got=fmt(got))
    for name, g, w in zip(("dQ", "dK", "dV"), got, want, strict=True):
        if not isinstance(g, (list, tuple)) or len(g) != len(w):
            raise Failure(_("{input}: expected {name} with {n} rows, got {got}").format(
                              input=desc, name=name, n=len(w), got=fmt(g)),
                          input=desc, expected=_("{n} rows").format(n=len(w)), got=fmt(g))
        for i, (grow, wrow) in enumerate(zip(g, w, strict=True)):
            if not isinstance(grow, (list, tuple)) or len(grow) != len(wrow):
                raise Failure(_("{input}: expected {name}[{i}] to have {count} numbers, got {got}").format(
                                  input=desc, name=name, i=i, count=len(wrow), got=fmt(grow)),
                              input=desc, expected=_("{count} numbers").format(count=len(wrow)), got=fmt(grow))
            for c, (x, y) in enumerate(zip(grow, wrow, strict=True)):
                expect_close(f"{name}[{i}][{c}]", x, y, rel=TOL, abs_=TOL)


def run_case(mod, n, d, seed, br, bc, causal=False, key_mask=None, label=None):
    fn = need(mod, "flash_backward")
    Q, K, V = random_qkv(n, d, seed)
    dO = random_do(n, d, seed)
    mask = square_mask(key_mask, n)
    desc = describe(label or _("N = {n}, d = {d}, seed {seed}").format(n=n, d=d, seed=seed), br, bc, causal, key_mask)
    O, L = forward64(Q, K, V, causal, mask)
    with given(desc):
        got = fn(Q, K, V, O, dO, L, br, bc, causal=causal, key_mask=key_mask)
    ref = reference(Q, K, V, dO, causal, mask)   # after the call: no frame holds it while the code runs
    with given(desc):
        compare(desc, got, (ref["dQ"], ref["dK"], ref["dV"]))


@titled(N_("N = 1: one query, one key"))
def test_one_row(mod):
    run_case(mod, 1, 4, 1, 1, 1)
    run_case(mod, 1, 4, 1, 4, 4)


@titled(N_("random inputs, full attention, ragged last tiles (N = 5, 13, 30)"))
def test_random_ragged(mod):
    for n, d, br, bc, seed in ((5, 3, 2, 2, 5), (13, 4, 4, 3, 13), (30, 8, 8, 7, 30)):
        run_case(mod, n, d, seed, br, bc)


@titled(N_("causal: row i sees keys 0..i only (N = 5, 13, 30)"))
def test_random_causal(mod):
    for n, d, br, bc, seed in ((5, 3, 2, 2, 5), (13, 4, 4, 3, 13), (30, 8, 8, 7, 30)):
        run_case(mod, n, d, seed, br, bc, causal=True)


@titled(N_("padding: the last keys masked, a whole key tile masked, the first tile masked"))
def test_padding_keys_and_a_key_tile_all_masked(mod):
    run_case(mod, 10, 4, 10, 4, 3, key_mask=[True] * 7 + [False] * 3)
    run_case(mod, 10, 4, 10, 4, 3, key_mask=[True] * 3 + [False] * 3 + [True] * 4)
    run_case(mod, 9, 4, 9, 4, 3, causal=True, key_mask=[False] * 3 + [True] * 6,
             label=_("N = {n}, d = {d}, seed {seed} (rows 0 to {last} are empty)").format(n=9, d=4, seed=9, last=2))


@titled(N_("rows that see no key (L = -inf): zero gradients, with no NaN"))
def test_rows_with_no_keys(mod):
    run_case(mod, 5, 4, 5, 2, 2, causal=True, key_mask=[False, True, True, True, True],
             label=_("N = {n}, d = {d}, seed {seed} (row 0 is empty)").format(n=5, d=4, seed=5))
    run_case(mod, 5, 4, 5, 2, 2, key_mask=[False] * 5,
             label=_("N = {n}, d = {d}, seed {seed} (every row is empty)").format(n=5, d=4, seed=5))


@titled(N_("P comes from the L you are given, P = exp(S - L), not from a softmax recomputed from scratch"))
def test_p_is_recomputed_from_the_given_L(mod):
    fn = need(mod, "flash_backward")
    n, d, seed, br, bc = 7, 4, 7, 4, 3
    Q, K, V = random_qkv(n, d, seed)
    dO = random_do(n, d, seed)
    desc = _("{case}, L + ln 2 in rows 1, 3 and 5 (so their recomputed P is halved)").format(
        case=describe(_("N = {n}, d = {d}, seed {seed}").format(n=n, d=d, seed=seed), br, bc, False, None))
    O, L = forward64(Q, K, V)
    shifted = [x + SHIFT if i % 2 else x for i, x in enumerate(L)]
    with given(desc):
        got = fn(Q, K, V, O, dO, shifted, br, bc, causal=False, key_mask=None)
    # Halving P in row i halves every gradient term of that row, as halving dO_i
    # would (D_i = dO_i·O_i, with O the true output, scales with it too).
    scaled = [[0.5 * x for x in row] if i % 2 else row for i, row in enumerate(dO)]
    ref = reference(Q, K, V, scaled)
    with given(desc):
        compare(desc, got, (ref["dQ"], ref["dK"], ref["dV"]))


# (N, d, block_rows, block_cols, seed, causal): several key and query tiles, ragged ones too.
READ_CASES = ((30, 4, 8, 7, 30, False), (30, 4, 8, 7, 31, True))


@titled(N_("reads as the fused backward does: K and V once, Q once per key tile, O once for D, no table of P"))
def test_reads_like_the_fused_backward(mod):
    fn = need(mod, "flash_backward")
    for n, d, br, bc, seed, causal in READ_CASES:
        Q, K, V = random_qkv(n, d, seed)
        dO = random_do(n, d, seed)
        desc = describe(_("N = {n}, d = {d}, seed {seed}").format(n=n, d=d, seed=seed), br, bc, causal, None)
        with given(desc):
            O, L = forward64(Q, K, V, causal)
            instruments.run_backward(fn, Q, K, V, O, dO, L, br, bc, causal, desc, key_mask=None)


# The case whose memory is measured (exercise.toml; the prompt quotes it): N, d, block_rows, block_cols, seed.
MEMORY = content.step("flash-backward", "scratch")["memory"]
MEMORY_CASE = tuple(MEMORY[k] for k in ("n", "d", "block_rows", "block_cols", "seed"))


@titled(N_("holds no table of P: at N = {n}, block_rows {br} and block_cols {bc}, no more memory than D and "
           "a few tiles need"), n=MEMORY_CASE[0], br=MEMORY_CASE[2], bc=MEMORY_CASE[3])
def test_holds_no_table_of_p(mod):
    fn = need(mod, "flash_backward")
    n, d, br, bc, seed = MEMORY_CASE
    Q, K, V = random_qkv(n, d, seed)
    dO = random_do(n, d, seed)
    O, L = forward64(Q, K, V)
    desc = describe(_("N = {n}, d = {d}, seed {seed}").format(n=n, d=d, seed=seed), br, bc, False, None)
    with given(desc):
        run = instruments.measure_backward(fn, Q, K, V, O, dO, L, br, bc, False, key_mask=None)
    ref = reference(Q, K, V, dO)
    with given(desc):
        compare(desc, run.result, (ref["dQ"], ref["dK"], ref["dV"]))  # right at this size too
    instruments.hold_backward(run, desc, n, d, br, bc)
