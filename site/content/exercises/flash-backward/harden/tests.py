"""Harden: flash_forward(Q, K, V, block_rows, block_cols, causal, key_mask, fp16) -> (O, L),
and FP16_EXP_LIMIT.

The oracle is the emulator's float64 forward (emulator.backward.forward64:
softmax over each row's allowed keys, O = 0 and L = -inf for a row with none).
In float64 every entry of O must be within TOL of it and L within
TOL·max(1, |L|). With fp16=True each P entry is rounded to half precision,
which moves O by up to about 2·2⁻¹¹ (V's entries are at most 1): FP16_TOL.
Cases run smallest first.

test_reads_like_the_fused_kernel hands the code Q, K and V that count their
row reads (exercises.instruments) and holds them to the emulator's fused
kernel at the same tiles: a whole-row softmax with the masks gets every number
right, and reads every key row once per query row.

test_holds_one_tile_of_scores measures the memory the call holds beyond the
O and L it returns (exercises.skill.measure, tracemalloc) in the memory case
of exercise.toml (small tiles, a B_r × N strip many tiles' worth), against
exercises.instruments.forward_budget for the loop order
the code's reads show: m, l and O for a query tile (or for every row, key
tiles outer) and a tile of S and P, from block_rows, block_cols and d. A
whole-row softmax that reads K and V tile by tile to gather the row's scores
reads like the fused kernel and holds a block_rows × N strip of them.

Every expected value is computed after the learner's call has returned.
"""
import math
import struct

from emulator.backward import forward64
from emulator.i18n import _, short
from emulator.inputs import random_qkv
from exercises import content, instruments
from exercises.testing import N_, Failure, describe_case, expect_close, expect_pair, fmt, given, need, titled

TOL = 1e-9
FP16_TOL = 2e-3
FP16_MAX = 65504.0            # the largest finite half
LIMIT = 11.0901               # ln 65,520 to four decimals: exp(x) ≥ 65,520 rounds to inf
STEP = content.step("flash-backward", "harden")
FITS = STEP["fp16_fits"]                  # exercise.toml: the fp16 cases' largest scores,
OVERFLOWS = tuple(STEP["fp16_overflows"])  # below and above LIMIT (the prompt quotes them)


def half(x):
    """x rounded to binary16 (struct format "e"), inf from 65,520 up."""
    try:
        return struct.unpack("<e", struct.pack("<e", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def scores_up_to(Q, K, top):
    """Q scaled so that the largest score q·k/√d is exactly ``top``."""
    d = len(Q[0])
    s_max = max(math.fsum(a * b for a, b in zip(q, k, strict=True)) / math.sqrt(d) for q in Q for k in K)
    return [[x * top / s_max for x in q] for q in Q]


def square_mask(key_mask, n):
    return None if key_mask is None else [list(key_mask) for _ in range(n)]


def describe(label, br, bc, causal, key_mask, fp16):
    return describe_case(label, br, bc, causal, key_mask, fp16)


def seeded(n, d, seed):
    return _("N = {n}, d = {d}, seed {seed}").format(n=n, d=d, seed=seed)


def largest(n, d, top):
    return _("N = {n}, d = {d}, largest score {top}").format(n=n, d=d, top=short(top))


def run_case(mod, Q, K, V, br, bc, causal, key_mask, label, fp16=False):
    fn = need(mod, "flash_forward")
    desc = describe(label, br, bc, causal, key_mask, fp16)
    tol = FP16_TOL if fp16 else TOL
    kwargs = {"causal": causal, "key_mask": key_mask}
    if fp16:
        kwargs["fp16"] = True
    with given(desc):
        got = fn(Q, K, V, br, bc, **kwargs)
    want_o, want_l = forward64(Q, K, V, causal, square_mask(key_mask, len(Q)))  # after the call
    compare(desc, got, want_o, want_l, tol, fp16)


def compare(desc, got, want_o, want_l, tol, fp16):
    """Raise a Failure for the first entry of ``got`` = (O, L) off the expected ones."""
    n = len(want_o)
    with given(desc):
        o, lse = expect_pair(got, "(O, L)")
        if not isinstance(o, list) or len(o) != n or not isinstance(lse, (list, tuple)) or len(lse) != n:
            raise Failure(_("{input}: expected O with {n} rows and L with {n} values").format(input=desc, n=n),
                          input=desc, expected=_("{n} rows").format(n=n), got=fmt(o))
        for i in range(n):
            row = o[i]
            if not isinstance(row, (list, tuple)) or len(row) != len(want_o[i]):
                raise Failure(_("{input}: expected O[{i}] to have {count} numbers, got {got}").format(
                                  input=desc, i=i, count=len(want_o[i]), got=fmt(row)),
                              input=desc, expected=_("{count} numbers").format(count=len(want_o[i])),
                              got=fmt(row))
            for c in range(len(row)):
                expect_close(f"O[{i}][{c}]", row[c], want_o[i][c], rel=0.0, abs_=tol)
            if not fp16:
                expect_close(f"L[{i}]", lse[i], want_l[i], rel=TOL, abs_=TOL)


@titled(N_("random inputs, full attention, ragged last tiles (N = 1, 5, 13, 30)"))
def test_random_ragged(mod):
    for n, d, br, bc, seed in ((1, 4, 2, 2, 1), (5, 3, 2, 2, 5), (13, 4, 4, 3, 13), (30, 8, 8, 7, 30)):
        Q, K, V = random_qkv(n, d, seed)
        run_case(mod, Q, K, V, br, bc, False, None, seeded(n, d, seed))


@titled(N_("causal: row i sees keys 0..i only (N = 5, 13, 30)"))
def test_random_causal(mod):
    for n, d, br, bc, seed in ((5, 3, 2, 2, 5), (13, 4, 4, 3, 13), (30, 8, 8, 7, 30)):
        Q, K, V = random_qkv(n, d, seed)
        run_case(mod, Q, K, V, br, bc, True, None, seeded(n, d, seed))


@titled(N_("padding: the last keys masked, and a whole key tile masked in the middle"))
def test_padding_keys(mod):
    Q, K, V = random_qkv(10, 4, 10)
    run_case(mod, Q, K, V, 4, 3, False, [True] * 7 + [False] * 3, seeded(10, 4, 10))
    run_case(mod, Q, K, V, 4, 3, False, [True] * 3 + [False] * 3 + [True] * 4, seeded(10, 4, 10))


@titled(N_("every key of the first tile masked: the max is still -inf there, and nothing may turn into NaN"))
def test_a_first_key_tile_all_masked(mod):
    Q, K, V = random_qkv(9, 4, 9)
    run_case(mod, Q, K, V, 4, 3, False, [False] * 3 + [True] * 6, seeded(9, 4, 9))
    run_case(mod, Q, K, V, 4, 3, True, [False] * 3 + [True] * 6, seeded(9, 4, 9))


@titled(N_("rows that see no key at all: O = 0 and L = -inf, with no NaN and no ZeroDivisionError"))
def test_rows_with_no_keys(mod):
    Q, K, V = random_qkv(5, 4, 5)
    run_case(mod, Q, K, V, 2, 2, True, [False, True, True, True, True],
             _("N = {n}, d = {d}, seed {seed} (row 0 is empty)").format(n=5, d=4, seed=5))
    run_case(mod, Q, K, V, 2, 2, False, [False] * 5,
             _("N = {n}, d = {d}, seed {seed} (every row is empty)").format(n=5, d=4, seed=5))


@titled(N_("FP16_EXP_LIMIT: exp(x) is inf in half precision exactly from x = ln {big} ≈ {limit} (not {near})"),
        big=65520, limit=11.0901, near=11.09)
def test_the_fp16_limit(mod):
    limit = need(mod, "FP16_EXP_LIMIT")
    desc = "FP16_EXP_LIMIT"
    with given(desc):
        if isinstance(limit, bool) or not isinstance(limit, (int, float)):
            raise Failure(_("{input}: expected a number, got {got}").format(input=desc, got=fmt(limit)), input=desc,
                          expected=f"FP16_EXP_LIMIT = {LIMIT}", got=fmt(limit))
        below, above = half(math.exp(limit - 1e-6)), half(math.exp(limit + 1e-6))
        if round(limit, 4) != LIMIT or below != FP16_MAX or above != math.inf:
            raise Failure(_("{input}: expected FP16_EXP_LIMIT = {limit} ({places} d.p.), got {got}: "
                            "just below it exp rounds to {below} in fp16, just above to {above}").format(
                              input=desc, limit=LIMIT, places=4, got=repr(limit), below=fmt(below), above=fmt(above)),
                          input=desc, expected=f"FP16_EXP_LIMIT = {LIMIT}", got=repr(limit))


@titled(N_("fp16, largest score {top}: exp of every score fits in half precision, max subtracted or not"), top=FITS)
def test_fp16_scores_below_the_limit(mod):
    Q, K, V = random_qkv(12, 4, 12)
    run_case(mod, scores_up_to(Q, K, FITS), K, V, 4, 5, False, None, largest(12, 4, FITS), fp16=True)


@titled(N_("fp16, largest scores {a} and {b}: exp overflows half precision unless the running max is subtracted"),
        a=OVERFLOWS[0], b=OVERFLOWS[-1])
def test_fp16_scores_past_the_limit(mod):
    Q, K, V = random_qkv(12, 4, 12)
    for top in OVERFLOWS:
        run_case(mod, scores_up_to(Q, K, top), K, V, 4, 5, False, None, largest(12, 4, top), fp16=True)
    top = OVERFLOWS[-1]
    run_case(mod, scores_up_to(Q, K, top), K, V, 4, 5, True, [True] * 10 + [False] * 2,
             largest(12, 4, top), fp16=True)


# (N, d, block_rows, block_cols, seed, causal): several query and key tiles, ragged ones too.
READ_CASES = ((30, 4, 8, 7, 30, False), (30, 4, 8, 7, 31, True))


@titled(N_("reads K and V as the fused kernel does: once per query tile, causal tiles past the diagonal skipped"))
def test_reads_like_the_fused_kernel(mod):
    fn = need(mod, "flash_forward")
    for n, d, br, bc, seed, causal in READ_CASES:
        Q, K, V = random_qkv(n, d, seed)
        desc = describe(seeded(n, d, seed), br, bc, causal, None, False)
        with given(desc):
            instruments.run_forward(fn, Q, K, V, br, bc, causal, desc)


# The case whose memory is measured (exercise.toml; the prompt quotes it): N, d, block_rows, block_cols, seed.
MEMORY_CASE = tuple(STEP["memory"][k] for k in ("n", "d", "block_rows", "block_cols", "seed"))


@titled(N_("holds one tile of scores: at N = {n}, block_rows {br} and block_cols {bc}, no more memory than a tiled "
           "pass needs"), n=MEMORY_CASE[0], br=MEMORY_CASE[2], bc=MEMORY_CASE[3])
def test_holds_one_tile_of_scores(mod):
    fn = need(mod, "flash_forward")
    n, d, br, bc, seed = MEMORY_CASE
    Q, K, V = random_qkv(n, d, seed)
    desc = describe(seeded(n, d, seed), br, bc, False, None, False)
    with given(desc):
        run, order = instruments.measure_forward(fn, Q, K, V, br, bc, False, key_mask=None)
    want_o, want_l = forward64(Q, K, V)
    compare(desc, run.result, want_o, want_l, TOL, False)   # right at this size too
    instruments.hold_forward(run, order, desc, n, d, br, bc)
