"""Scratch: online_softmax(scores, block) -> (m, l) and combine(a, b).

The oracle is exact: m = max(scores), l = fsum(exp(s - m)), and (-inf, 0)
for no scores or only masked ones. Inputs run smallest first, so the first
failure reported is the smallest input that shows the mistake.

test_one_pass_over_the_tiles hands online_softmax scores that count their
reads tile by tile (exercises.instruments): an online softmax reads each tile
once; a whole-row softmax reads the row twice (once for m, once for l).

test_holds_one_tile_at_a_time hands it a long row of tracked scores
(exercises.skill): each score counts itself while it is alive, and the call
runs under tracemalloc, so a copy of the row (list(scores), sorted(scores),
floats copied one by one) fails, by a wide margin, against a budget made of
the block: an online softmax holds one tile of scores.

Every test calls the learner's function first, with nothing but its inputs in
reach; the expected values are worked out after it returns.
"""
import math
import random

from emulator.i18n import _, group
from exercises import instruments, skill
from exercises.testing import N_, Failure, expect_close, expect_pair, fmt, given, need, titled

INF = math.inf
REL = 1e-12  # float64 rounding: a few ulps over a handful of terms


def exact(scores):
    """(m, l) of a list of scores, computed in one go (float64)."""
    m = max(scores, default=-INF)
    if m == -INF:
        return (-INF, 0.0)
    return (m, math.fsum(math.exp(s - m) for s in scores))


def show(scores):
    return "[" + ", ".join(f"{s:g}" for s in scores) + "]"


def _state(s):
    return f"({s[0]:g}, {s[1]:.6g})"


def check_online(mod, scores, block):
    fn = need(mod, "online_softmax")
    with given(_("scores {scores}, block {block}").format(scores=show(scores), block=block)):
        got = expect_pair(fn(list(scores), block))
        m, l = exact(scores)
        expect_close("m", got[0], m, rel=0.0)
        expect_close("l", got[1], l, rel=REL)


def check_state(got, expected):
    got = expect_pair(got)
    expect_close("m", got[0], expected[0], rel=0.0)
    expect_close("l", got[1], expected[1], rel=REL)


@titled(N_("the worked example: scores [1, 2, 3, 0] in tiles of 2"))
def test_worked_example(mod):
    check_online(mod, [1.0, 2.0, 3.0, 0.0], 2)


@titled(N_("every tile size, including a short last tile"))
def test_every_tile_size(mod):
    rng = random.Random(14)
    rows = [[0.5], [1.0, 2.0], [3.0, 1.0, 2.0], [1.0, 2.0, 3.0, 0.0], [0.3, -1.2, 2.5, 2.5, -0.7],
            [round(rng.uniform(-4, 4), 2) for _ in range(7)], [round(rng.uniform(-4, 4), 2) for _ in range(12)]]
    cases = sorted(((len(r), b, r) for r in rows for b in range(1, len(r) + 2)), key=lambda c: (c[0], c[1]))
    for _size, block, row in cases:
        check_online(mod, row, block)


@titled(N_("a single score"))
def test_a_single_score(mod):
    for s, block in ((0.0, 1), (-7.5, 1), (42.0, 3)):
        check_online(mod, [s], block)


@titled(N_("scores of +{big} and -{big} (exp would overflow or vanish without subtracting m)"), big="1000")
def test_scores_of_plus_and_minus_1000(mod):
    for scores, block in (([1000.0, 999.0], 1), ([-1000.0, -999.5], 2), ([999.0, 1000.0, -1000.0], 2)):
        check_online(mod, scores, block)


@titled(N_("masked scores (-inf), all masked, and no scores at all give (-inf, 0), never NaN"))
def test_masked_and_empty(mod):
    for scores, block in (([], 3), ([-INF], 1), ([-INF, -INF], 1), ([-INF, -INF, 2.0], 2),
                          ([1.0, -INF], 1), ([-INF, 0.5, -INF, -INF], 2)):
        check_online(mod, scores, block)


def _random_states(rng, k, scale=5.0):
    return [exact([rng.uniform(-scale, scale) for _ in range(rng.randint(1, 4))]) for _ in range(k)]


@titled(N_("combine(state of left part, state of right part) = state of all the scores"))
def test_combine_matches_one_pass(mod):
    combine = need(mod, "combine")
    rows = [[1.0, 2.0, 3.0, 0.0], [3.0, 0.0, 1.0, 2.0], [0.0, 5.0], [1000.0, -1000.0, 999.0], [-INF, 1.0, -INF]]
    for row in rows:
        for cut in range(1, len(row)):
            left, right = row[:cut], row[cut:]
            with given(_("combine(state of {left}, state of {right})").format(left=show(left), right=show(right))):
                check_state(combine(exact(left), exact(right)), exact(row))


@titled(N_("(-inf, 0) is the identity: combining with it changes nothing"))
def test_identity(mod):
    combine = need(mod, "combine")
    e = (-INF, 0.0)
    with given("combine((-inf, 0), (-inf, 0))"):
        check_state(combine(e, e), e)
    for s in [(0.0, 1.0), (3.0, 1.553), (-2.5, 4.0), (1000.0, 2.0)]:
        with given(f"combine((-inf, 0), {_state(s)})"):
            check_state(combine(e, s), s)
        with given(f"combine({_state(s)}, (-inf, 0))"):
            check_state(combine(s, e), s)


@titled(N_("associativity: combine(combine(a, b), c) = combine(a, combine(b, c)) on random states"))
def test_associativity(mod):
    combine = need(mod, "combine")
    rng = random.Random(2018)
    for _round in range(200):
        a, b, c = _random_states(rng, 3)
        desc = f"a = {_state(a)}, b = {_state(b)}, c = {_state(c)}"
        with given(desc):
            left = expect_pair(combine(expect_pair(combine(a, b)), c))
            right = expect_pair(combine(a, expect_pair(combine(b, c))))
            expect_close("combine(a, combine(b, c)).m", right[0], left[0], rel=0.0)
            if not math.isclose(left[1], right[1], rel_tol=REL):
                raise Failure(_("{input}: combine(combine(a, b), c) gives l = {left}, "
                                "combine(a, combine(b, c)) gives l = {right}").format(
                                  input=desc, left=fmt(left[1]), right=fmt(right[1])),
                              input=desc, expected=f"l = {fmt(left[1])}", got=f"l = {fmt(right[1])}")


@titled(N_("merging the tiles' states in any order gives the same (m, l) within rounding"))
def test_any_order(mod):
    combine = need(mod, "combine")
    rng = random.Random(1805)
    for size in (2, 3, 5, 8):
        scores = [rng.uniform(-6, 6) for _ in range(3 * size)]
        tiles = [scores[i:i + 3] for i in range(0, len(scores), 3)]
        for _round in range(5):
            order = list(range(len(tiles)))
            rng.shuffle(order)
            with given(_("{count} tiles of 3 random scores, merged in the order {order}").format(
                    count=size, order=order)):
                acc = (-INF, 0.0)
                for i in order:
                    acc = expect_pair(combine(acc, exact(tiles[i])))
                check_state(acc, exact(scores))


@titled(N_("one pass over the tiles: each tile of scores is read once, not the whole row twice"))
def test_one_pass_over_the_tiles(mod):
    fn = need(mod, "online_softmax")
    rng = random.Random(12)
    row = [round(rng.uniform(-4, 4), 2) for _ in range(12)]
    for block in (3, 5):
        desc = _("scores {scores}, block {block}").format(scores=show(row), block=block)
        with given(desc):
            got = expect_pair(instruments.run_over_tiles(fn, list(row), block, desc))
            m, l = exact(row)
            expect_close("m", got[0], m, rel=0.0)
            expect_close("l", got[1], l, rel=REL)


# A row long enough that a copy of it is many tiles (exercises.skill: the budget is made of the block).
HOLD_N, HOLD_BLOCK = 16_384, 32


@titled(N_("holds one tile of scores at a time: no copy of the row, in any form"))
def test_holds_one_tile_at_a_time(mod):
    fn = need(mod, "online_softmax")
    rng = random.Random(30)
    row = [rng.uniform(-8.0, 8.0) for _ in range(HOLD_N)]
    desc = _("{n} random scores, block {block}").format(n=group(HOLD_N), block=HOLD_BLOCK)
    scores = skill.Stream(row, HOLD_BLOCK)
    with given(desc):
        run = skill.measure(fn, scores, HOLD_BLOCK)   # the learner's call: only its inputs in reach
        got = expect_pair(run.result)
        m, l = exact(row)                             # the expected pair, after the call
        expect_close("m", got[0], m, rel=0.0)
        expect_close("l", got[1], l, rel=1e-9)
    budget = skill.Budget.tiles_of(HOLD_BLOCK, _("block = {block}").format(block=HOLD_BLOCK),
                                   _("an online softmax holds one block"), _("scores"),
                                   value_bytes=scores.value_bytes)
    skill.hold_to(run, desc, budget, [(_("a copy of every score"), HOLD_N)], order=False)
