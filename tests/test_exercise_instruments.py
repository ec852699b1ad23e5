"""exercises/instruments.py: inputs that count the rows a learner's code reads, tile
by tile, held to the emulator's own walks; and the source check for borrowed counts.

The step-level verdicts (every skill-less wrong answer fails with its message,
other loop orders pass) are in tests/test_exercises.py; here, the instrument's
own rules, with counts worked out by hand.
"""
from __future__ import annotations

import pytest

from emulator import traffic
from emulator.tiling import lesson_blocks
from exercises import instruments, runner
from exercises.testing import Failure


def _watched(n=10, block=4):
    rec = instruments.Recorder()
    return rec, rec.watch("K", [[float(i)] for i in range(n)], block)


def test_a_watched_list_is_the_list_it_wraps_and_len_reads_nothing():
    rec, K = _watched()
    assert isinstance(K, list) and len(K) == 10 and bool(K)
    assert rec.reads == {"K": 0} and rec.tiles == {"K": 0}
    assert K == [[float(i)] for i in range(10)]


def test_rows_of_one_tile_load_it_once_however_often_they_are_read():
    rec, K = _watched()
    for _ in range(5):
        for j in range(4):
            assert K[j] == [float(j)]
    assert rec.reads == {"K": 4} and rec.tiles == {"K": 1}
    K[5]                      # tile 1: rows 4 to 7
    K[0]                      # back to tile 0: loaded again
    K[-1]                     # row 9, the ragged last tile of 2 rows
    assert rec.tiles == {"K": 4} and rec.reads == {"K": 4 + 4 + 4 + 2}


@pytest.mark.parametrize("read,rows", [
    (lambda K: list(K), 10), (lambda K: [*K], 10), (lambda K: list(zip(*K, strict=True)), 10),
    (lambda K: K.copy(), 10), (lambda K: K[2:7], 8), (lambda K: K + [], 10), (lambda K: [] + K, 10),
    (lambda K: K * 1, 10), (lambda K: [0.0] in K, 10), (lambda K: list(reversed(K)), 10),
    (lambda K: [r for r in K if r], 10), (lambda K: K.index([9.0]), 10), (lambda K: max(K), 10),
])
def test_every_way_of_reading_the_rows_is_counted(read, rows):
    rec, K = _watched()
    read(K)
    assert rec.reads["K"] == rows


def test_a_slice_or_a_copy_comes_back_as_a_plain_list():
    rec, K = _watched()
    part = K[0:4]
    assert type(part) is list and type(K.copy()) is list
    before = rec.reads["K"]
    part[0], part[3]          # the learner's own copy: not watched
    assert rec.reads["K"] == before


def test_a_bad_index_raises_as_a_list_does_and_counts_nothing():
    rec, K = _watched()
    with pytest.raises(IndexError):
        K[10]
    with pytest.raises(TypeError):
        K["0"]
    assert rec.reads["K"] == 0


def test_ahead_counts_keys_read_before_their_values_within_one_query_tile():
    rec = instruments.Recorder(keys="K", values="V", queries="Q")
    Q = rec.watch("Q", [[0.0]] * 8, 4)
    K = rec.watch("K", [[0.0]] * 12, 4)
    V = rec.watch("V", [[0.0]] * 12, 4)
    Q[0]
    for j in range(12):       # every key first, then every value: three tiles held
        K[j]
    for j in range(12):
        V[j]
    assert rec.ahead == 12
    rec = instruments.Recorder(keys="K", values="V", queries="Q")
    Q, K, V = rec.watch("Q", [[0.0]] * 8, 4), rec.watch("K", [[0.0]] * 12, 4), rec.watch("V", [[0.0]] * 12, 4)
    for r0 in (0, 4):         # tile by tile, the value tile even before the key tile
        Q[r0]
        for c0 in (0, 4, 8):
            V[c0:c0 + 4]
            K[c0:c0 + 4]
    assert rec.ahead == 0


@pytest.mark.parametrize("n,d,m,causal", [(4096, 16, 16384, False), (4096, 64, 16384, True), (1000, 32, 8192, False),
                                          (65, 16, 16384, True)])
def test_at_the_lesson_tiles_the_query_order_is_the_emulators_fused_count(n, d, m, causal):
    br, bc = lesson_blocks(d, m)
    rows = instruments.forward_orders(n, d, br, bc, causal)["query"]
    t = traffic.count("fused", n, d, causal, m)
    assert {k: 4 * d * v for k, v in rows.items()} == {k: t.reads[k] for k in ("Q", "K", "V")}


def test_the_key_order_reads_k_once_and_q_once_per_key_tile_that_reaches_it():
    # N = 10, B_r = 4, B_c = 3: key tiles at 0, 3, 6, 9; causal, the query rows from
    # the tile holding each key tile's first key: 10, 10, 6 (from row 4), 2 (from row 8).
    # The query order, causal: the tiles of rows 0-3, 4-7 and 8-9 stream keys up to 6, 9, 10.
    assert instruments.forward_orders(10, 2, 4, 3, True)["key"] == {"Q": 28, "K": 10, "V": 10}
    assert instruments.forward_orders(10, 2, 4, 3, False)["key"] == {"Q": 40, "K": 10, "V": 10}
    assert instruments.backward_orders(10, 2, 4, 3, True) == {
        "key": {"Q": 28, "K": 10, "V": 10, "O": 10}, "query": {"Q": 10, "K": 25, "V": 25, "O": 10}}


def _forward(order):
    def fn(Q, K, V, block_rows, block_cols, causal=False):
        n = len(Q)
        if order == "row":                  # every key for every query row
            for i in range(n):
                for j in range(n):
                    Q[i], K[j], V[j]
            return "done"
        for r0 in range(0, n, block_rows):  # query tiles outer
            for c0 in range(0, n, block_cols):
                if causal and c0 > min(n, r0 + block_rows) - 1:
                    break
                for i in range(r0, min(n, r0 + block_rows)):
                    for j in range(c0, min(n, c0 + block_cols)):
                        Q[i], K[j], V[j]
        return "done"
    return fn


def test_run_forward_passes_a_tiled_walk_and_names_an_untiled_one_with_the_issues_numbers():
    Q = K = V = [[0.0] * 4 for _ in range(65)]
    assert instruments.run_forward(_forward("tiles"), Q, K, V, 32, 8, False, "case") == "done"
    assert instruments.run_forward(_forward("tiles"), Q, K, V, 16, 8, True, "case") == "done"
    with pytest.raises(Failure) as info:
        instruments.run_forward(_forward("row"), Q, K, V, 32, 8, False, "N = 65")
    assert info.value.message == ("N = 65: your code read every row of K once per row of Q (N = 65: 4,225 reads); "
                                  "a tiled pass reads it once per query tile (3 tiles: 195 reads)")
    assert info.value.expected == "rows of K read: 195" and info.value.got == "rows of K read: 4,225"


def test_a_copy_of_k_taken_first_shows_as_all_of_k_held_at_once():
    def copies(Q, K, V, block_rows, block_cols, causal=False):
        K, V = [list(r) for r in K], [list(r) for r in V]
        return _forward("tiles")(Q, K, V, block_rows, block_cols, causal)
    Q = K = V = [[0.0] * 4 for _ in range(65)]
    with pytest.raises(Failure, match=r"read every row of K just once in all \(65 reads\), so it held all of K"):
        instruments.run_forward(copies, Q, K, V, 32, 8, False, "case")


def test_run_over_tiles_wants_one_pass():
    def two_passes(scores, block):
        return max(scores), sum(1 for _ in scores)
    with pytest.raises(Failure, match=r"read every score 2 times \(20 reads of 10 scores\); an online softmax reads "
                                      r"each tile once \(4 tiles: 10 reads\)"):
        instruments.run_over_tiles(two_passes, [0.0] * 10, 3, "case")
    assert instruments.run_over_tiles(lambda s, b: [s[i:i + b] for i in range(0, len(s), b)], [0.0] * 10, 3, "x")


@pytest.mark.parametrize("source,found", [
    ("from emulator import traffic\n", ("emulator.traffic", 1)),
    ("import math\nimport emulator.traffic as t\n", ("emulator.traffic", 2)),
    ("def f():\n    from exercises import instruments\n", ("exercises.instruments", 2)),
    ("x = __import__('emulator')\n", ("emulator", 1)),
    ("import importlib\nt = importlib.import_module('emulator.traffic')\n", ("emulator.traffic", 2)),
    ("import sys\nt = sys.modules['emulator.traffic']\n", ("emulator.traffic", 2)),
    ("import math\nfrom collections import Counter\n", None),
    ("emulator = 3\n", None),
])
def test_borrowed_finds_the_projects_own_code_in_the_learners_source(source, found):
    mod = runner.load_module(source, guarded=False)  # the source check, behind the guard (exercises.guard)
    assert instruments.borrowed(mod) == found


# ---------------------------------------------------------------------------
# Memory held by a tiled pass (exercise 2): budgets from the tiles, refusals that name the shape

def test_the_backward_budget_is_slack_tiles_of_p_and_ds_and_d_and_follows_the_tiles():
    from exercises.skill import SLACK, VALUE_BYTES
    # d = 2, tiles 4 × 3: P and dS 2·12 + rows of Q, dO, K, V (4 + 3)·2 = 38 numbers a tile; D: 2 per row.
    assert instruments.backward_tile_values(2, 4, 3) == 24 + 14 == 38
    assert instruments.backward_tile_values(2, 8, 6) == 96 + 28 == 124
    small, large = instruments.backward_budget(65, 2, 4, 3), instruments.backward_budget(65, 2, 8, 6)
    assert small.bytes == SLACK * 38 * VALUE_BYTES + 2 * 65 * VALUE_BYTES
    assert large.bytes - small.bytes == SLACK * (124 - 38) * VALUE_BYTES  # the tiles' share grew, D's did not
    assert small.tile_bytes == 38 * VALUE_BYTES
    assert "(4 × 3)" in small.holds and "(8 × 6)" in large.holds and "D (65 numbers" in small.holds
    # One tile the whole N × N: then a table of P is a tile's worth, and the budget holds it.
    assert instruments.backward_budget(65, 2, 65, 65).bytes > 65 * 65 * VALUE_BYTES


def test_the_forward_budget_is_one_query_tiles_state_or_every_rows_in_the_key_order():
    from exercises.skill import SLACK, VALUE_BYTES
    # d = 2, tiles 16 × 2: a tile of scores 16·2 and m, l, O for its 16 rows 16·4 = 96 numbers.
    assert instruments.forward_tile_values(2, 16, 2) == 32 + 64 == 96
    assert instruments.forward_tile_values(2, 8, 2) == 16 + 32 == 48   # the budget follows B_r
    query, key = (instruments.forward_budget(129, 2, 16, 2, order) for order in ("query", "key"))
    assert query.bytes == SLACK * 96 * VALUE_BYTES
    assert key.bytes - query.bytes == instruments.KEY_OUTER_STATE * instruments.output_bytes(129, 2)
    assert instruments.output_bytes(129, 2) > 129 * 4 * VALUE_BYTES  # every row's state


@pytest.mark.parametrize("numbers,shape", [
    (65 * 65, "that is an N × N table of P (4,225 numbers)"),
    (8 * 65 * 2, "that is copies of the inputs (N × d = 130 numbers each)"),
])
def test_hold_backward_names_what_the_code_held(numbers, shape):
    from exercises import skill
    run = skill.Run(result=None, held=numbers * skill.VALUE_BYTES)
    with pytest.raises(Failure, match="case: your code held .* KB \\(N = 65, block_rows 4, block_cols 3\\): "
                                      + shape.replace("(", "\\(").replace(")", "\\)")):
        instruments.hold_backward(run, "case", 65, 2, 4, 3)
    budget = instruments.backward_budget(65, 2, 4, 3)
    instruments.hold_backward(skill.Run(result=None, held=budget.bytes), "case", 65, 2, 4, 3)  # at the budget: passes


def _tiled_forward(order):
    """A correct tiled forward (no masks) in loop ``order``: query tiles outer, or key tiles outer."""
    import math

    def query_outer(Q, K, V, br, bc, causal=False, key_mask=None):
        n, d = len(Q), len(Q[0])
        O, L = [], []
        for r0 in range(0, n, br):
            rows = range(r0, min(n, r0 + br))
            m, l, acc = {i: -math.inf for i in rows}, {i: 0.0 for i in rows}, {i: [0.0] * d for i in rows}
            for c0 in range(0, len(K), bc):
                cols = range(c0, min(len(K), c0 + bc))
                for i in rows:
                    s = [math.fsum(a * b for a, b in zip(Q[i], K[j], strict=True)) / math.sqrt(d) for j in cols]
                    new = max(m[i], *s)
                    alpha, p = math.exp(m[i] - new), [math.exp(x - new) for x in s]
                    l[i] = l[i] * alpha + math.fsum(p)
                    acc[i] = [a * alpha + math.fsum(pj * V[j][c] for pj, j in zip(p, cols, strict=True))
                              for c, a in enumerate(acc[i])]
                    m[i] = new
            for i in rows:
                O.append([a / l[i] for a in acc[i]])
                L.append(m[i] + math.log(l[i]))
        return O, L

    def key_outer(Q, K, V, br, bc, causal=False, key_mask=None):
        n, d = len(Q), len(Q[0])
        m, l, acc = [-math.inf] * n, [0.0] * n, [[0.0] * d for _ in range(n)]
        for c0 in range(0, len(K), bc):
            cols = range(c0, min(len(K), c0 + bc))
            for r0 in range(0, n, br):
                for i in range(r0, min(n, r0 + br)):
                    s = [math.fsum(a * b for a, b in zip(Q[i], K[j], strict=True)) / math.sqrt(d) for j in cols]
                    new = max(m[i], *s)
                    alpha, p = math.exp(m[i] - new), [math.exp(x - new) for x in s]
                    l[i] = l[i] * alpha + math.fsum(p)
                    acc[i] = [a * alpha + math.fsum(pj * V[j][c] for pj, j in zip(p, cols, strict=True))
                              for c, a in enumerate(acc[i])]
                    m[i] = new
        return [[a / l[i] for a in acc[i]] for i in range(n)], [m[i] + math.log(l[i]) for i in range(n)]
    return {"query": query_outer, "key": key_outer}[order]


@pytest.mark.parametrize("order", ["query", "key"])
def test_measure_forward_tells_the_loop_order_and_each_order_fits_its_budget(order):
    from emulator.inputs import random_qkv
    Q, K, V = random_qkv(65, 2, 65)
    run, found = instruments.measure_forward(_tiled_forward(order), Q, K, V, 8, 2, False)
    assert found == order
    instruments.hold_forward(run, found, "case", 65, 2, 8, 2)
    assert run.held < instruments.forward_budget(65, 2, 8, 2, found).bytes / 2   # by a wide margin


def test_a_strip_of_scores_held_per_query_tile_is_refused_and_named():
    import math

    from emulator.inputs import random_qkv

    def strip(Q, K, V, br, bc, causal=False, key_mask=None):
        n, d = len(Q), len(Q[0])
        O, L = [], []
        for r0 in range(0, n, br):
            rows = range(r0, min(n, r0 + br))
            s = {i: [] for i in rows}
            for c0 in range(0, len(K), bc):
                for j in range(c0, min(len(K), c0 + bc)):
                    for i in rows:
                        s[i].append(math.fsum(a * b for a, b in zip(Q[i], K[j], strict=True)) / math.sqrt(d))
            for i in rows:
                top = max(s[i])
                p = [math.exp(x - top) for x in s[i]]
                O.append([math.fsum(pj * v[c] for pj, v in zip(p, V, strict=True)) / math.fsum(p) for c in range(d)])
                L.append(top + math.log(math.fsum(p)))
        return O, L
    Q, K, V = random_qkv(65, 2, 65)
    run, order = instruments.measure_forward(strip, Q, K, V, 8, 2, False)
    assert order == "query"
    with pytest.raises(Failure, match=r"that is a block_rows × N strip of scores \(520 numbers\)"):
        instruments.hold_forward(run, order, "case", 65, 2, 8, 2)


def test_the_same_code_holds_the_same_bytes_whatever_ran_before():
    from emulator.inputs import random_qkv
    Q, K, V = random_qkv(65, 2, 65)
    held = []
    for junk in (0, 5_000):
        garbage = [(float(i), (i, i + 1)) for i in range(junk)]
        del garbage
        run, _ = instruments.measure_forward(_tiled_forward("key"), Q, K, V, 8, 2, False)
        held.append(run.held)
    # the same within a few small objects (one float, one list header), where before the
    # free lists were filled the two differed by about 2 KB
    assert held[0] > 0 and abs(held[0] - held[1]) <= 160, held
