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
