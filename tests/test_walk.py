"""The walk, step by step: emulator.traffic.walk_steps and the lab's picture of it.

Count adds up walk_steps one query tile (or key tile) at a time; the picture
(emulator.walk, op "walk") takes the same steps a key tile at a time, or in
marks of several tiles at large N. These tests hold every granularity to
traffic.count, tensor by tensor, and to the closed forms of tests/closed_forms.py,
and read single steps for what the lesson says a step does.
"""
from __future__ import annotations

import copy

import pytest
from closed_forms import backward as backward_closed_form
from closed_forms import forward as forward_closed_form

import lab_api as api
from emulator import traffic
from emulator import walk as picture_walk
from emulator.tiling import MANIFEST, make_tiling

# Six sizes: one row, ragged tiles (65, 77, 300, 1000), a whole number of tiles (4096),
# the d the lab starts at and others; causal and full.
SIZES = [(1, 16, False), (65, 16, True), (77, 128, False), (300, 64, True), (1000, 32, True), (4096, 16, False)]
FORWARD = ["plain", "fused", "fused-no-rescale"]
BACKWARD = ["plain-backward", "fused-backward", "fused-backward-no-D"]


def tally(steps) -> dict:
    """{("reads" | "writes", tensor): bytes} over the steps."""
    out: dict = {}
    for step in steps:
        for kind in ("reads", "writes"):
            for tensor, elements in getattr(step, kind).items():
                out[kind, tensor] = out.get((kind, tensor), 0) + elements * 4
    return {k: v for k, v in out.items() if v}


def counted(kernel, n, d, causal) -> dict:
    t = traffic.count(kernel, n, d, causal)
    return {(kind, tensor): b for kind in ("reads", "writes") for tensor, b in getattr(t, kind).items() if b}


def run_tally(result: dict) -> dict:
    """{("reads" | "writes", tensor): bytes} over the picture's runs, each run repeat times."""
    out: dict = {}
    for run in result["runs"]:
        entry = dict(zip(result["run_fields"], run, strict=True))
        for kind in ("reads", "writes"):
            for tensor, elements in entry[kind].items():
                key = (kind, tensor)
                out[key] = out.get(key, 0) + entry["repeat"] * elements * result["bytes_per_element"]
    return {k: v for k, v in out.items() if v}


@pytest.mark.parametrize("kernel", FORWARD + BACKWARD)
@pytest.mark.parametrize("n,d,causal", SIZES, ids=[f"{n=}-{d=}-{causal=}" for n, d, causal in SIZES])
def test_every_granularity_of_the_walk_adds_up_to_count(kernel, n, d, causal):
    tiling = make_tiling(kernel, n, d, causal)
    want = counted(kernel, n, d, causal)
    assert tally(traffic.walk_steps(tiling, (1, 1))) == want  # a key tile at a time
    assert tally(traffic.walk_steps(tiling, (2, 3))) == want  # marks of several tiles, ragged groups
    assert tally(traffic.walk_steps(tiling, picture_walk.marks_of(tiling, 4))) == want
    total = 0
    for value in want.values():
        total += value
    closed = forward_closed_form(tiling) if kernel in FORWARD else backward_closed_form(kernel, n, d, causal)
    assert total == (closed if kernel in FORWARD else closed["total_bytes"])


@pytest.mark.parametrize("direction,kernel,name", [("forward", "plain", "plain"), ("forward", "fused", "fused"),
                                                    ("backward", "fused", "fused-backward"),
                                                    ("backward", "plain", "plain-backward")])
@pytest.mark.parametrize("n,d,causal", SIZES, ids=[f"{n=}-{d=}-{causal=}" for n, d, causal in SIZES])
def test_the_walk_op_ends_on_counts_bytes(direction, kernel, name, n, d, causal):
    params = {"kernel": kernel, "n": str(n), "d": str(d), "causal": causal, "direction": direction}
    walked = api.handle({"op": "walk", "params": params})
    count = api.handle({"op": "count", "params": params})
    assert walked["ok"] and count["ok"], (walked, count)
    result = walked["result"]
    assert result["kernel"] == name == count["result"]["selected"]["kernel"]
    sel = count["result"]["selected"]
    assert run_tally(result) == {(k, t): b for k in ("reads", "writes") for t, b in sel[k].items() if b}
    steps = 0
    for run in result["runs"]:
        steps += run[result["run_fields"].index("repeat")]
    assert steps == result["steps"]


def test_a_fused_step_streams_one_key_tile_and_a_causal_walk_skips_the_tiles_past_the_diagonal():
    tiling = make_tiling("fused", 300, 64, causal=True)  # B_r = 32, B_c = 16: 10 query tiles, 19 key tiles
    steps = list(traffic.walk_steps(tiling, (1, 1)))
    streams = [s for s in steps if s.phase == "stream"]
    for s in streams:
        (j,), rows = range(*s.inner), min(300, (s.inner[0] + 1) * 16) - s.inner[0] * 16
        assert s.reads == {"K": rows * 64, "V": rows * 64} and s.writes == {} and s.pairs == 1
        # key tile j lies at or before the query tile's last row: the rest are skipped
        assert j * 16 <= min(300, s.outer[1] * 32) - 1
    # query tile i streams 2(i + 1) key tiles; the last one (rows 288–299) all 19
    assert [sum(1 for s in streams if s.outer == (i, i + 1)) for i in range(10)] == [2, 4, 6, 8, 10, 12, 14, 16,
                                                                                       18, 19]
    loads = [s for s in steps if s.phase == "load"]
    stores = [s for s in steps if s.phase == "store"]
    assert [s.reads for s in loads] == [{"Q": 32 * 64}] * 9 + [{"Q": 12 * 64}]  # Q comes onto the bench once
    assert [s.writes for s in stores] == [{"O": 32 * 64}] * 9 + [{"O": 12 * 64}]  # and O leaves once


def test_plain_sends_its_table_out_and_reads_it_back_pass_by_pass():
    tiling = make_tiling("plain", 100, 16)  # B_r = 128 > N: one query tile; B_c = 64: two key tiles
    streams = [s for s in traffic.walk_steps(tiling, (1, 1)) if s.phase == "stream"]
    assert [(s.pass_name, s.inner, s.reads, s.writes) for s in streams] == [
        ("scores", (0, 1), {"K": 64 * 16}, {"S": 100 * 64}), ("scores", (1, 2), {"K": 36 * 16}, {"S": 100 * 36}),
        ("softmax", (0, 1), {"S": 100 * 64}, {"P": 100 * 64}), ("softmax", (1, 2), {"S": 100 * 36}, {"P": 100 * 36}),
        ("pv", (0, 1), {"P": 100 * 64, "V": 64 * 16}, {}), ("pv", (1, 2), {"P": 100 * 36, "V": 36 * 16}, {}),
    ]


def test_a_key_tile_pass_streams_the_query_tiles_from_the_diagonal_down():
    tiling = make_tiling("fused-backward", 300, 64, causal=True)  # B_r = 32, B_c = 16
    dkv = [s for s in traffic.walk_steps(tiling, (1, 1)) if s.pass_name == "dkv" and s.phase == "stream"]
    # key tile 5 (rows 80–95) lies in query tile 2 (rows 64–95): query tiles 2…9 stream past it
    assert [s.inner for s in dkv if s.outer == (5, 6)] == [(i, i + 1) for i in range(2, 10)]
    assert [s.reads["Q"] for s in dkv if s.outer == (5, 6)] == [32 * 64] * 7 + [12 * 64]


def test_a_formula_that_is_not_linear_in_the_stream_is_walked_tile_by_tile(monkeypatch):
    """Grouped steps sum a band of tiles from their rows when a formula is linear in the
    stream; a quadratic one is evaluated per tile, and both add up to the count."""
    kernels = copy.deepcopy(MANIFEST["kernels"])
    kernels["toy"] = {
        "label": "toy", "direction": "forward", "lesson": False, "mirror": None, "tiling": "lesson",
        "passes": [{"name": "q", "walk": "query_tiles", "reads": {"K": "kv*kv + r", "Q": "r*d"}, "writes": {}},
                   {"name": "k", "walk": "key_tiles", "reads": {"Q": "qv*qv*c + 1"}, "writes": {"O": "c*qv"}}],
    }
    monkeypatch.setitem(MANIFEST, "kernels", kernels)
    tiling = make_tiling("toy", 300, 64, causal=True)
    by_hand = {"K": 0, "Q": 0, "O": 0}
    for i in range(tiling.query_tiles):
        start, stop = tiling.query_tile_rows(i)
        by_hand["K"] += tiling.keys_visited(stop) ** 2 + (stop - start)
        by_hand["Q"] += (stop - start) * 64
    for j in range(tiling.key_tiles):
        start, stop = tiling.key_tile_rows(j)
        qv = tiling.queries_visiting(start)
        by_hand["Q"] += qv * qv * (stop - start) + 1
        by_hand["O"] += (stop - start) * qv
    want = {("reads", "K"): 4 * by_hand["K"], ("reads", "Q"): 4 * by_hand["Q"], ("writes", "O"): 4 * by_hand["O"]}
    for marks in (None, (1, 1), (3, 4), (10, 19)):
        assert tally(traffic.walk_steps(tiling, marks)) == want, marks


def test_large_n_groups_tiles_into_at_most_64_marks_per_axis():
    tiling = make_tiling("plain", 65536, 64, causal=True)  # B_r = 32, B_c = 16: 2,048 and 4,096 tiles
    result = picture_walk.picture(tiling)
    assert result["group"] == {"query_tiles": 32, "key_tiles": 64}
    assert len(result["query_marks"]) == len(result["key_marks"]) == 64
    # every mark covers 1,024 rows: the grid's squares are square
    assert {m[1] - m[0] for m in result["query_marks"] + result["key_marks"]} == {1024}
    assert run_tally(result) == counted("plain", 65536, 64, True)
    assert result["steps"] < 20_000 and len(result["runs"]) < 2_000  # runs of like steps keep the reply small
    small = picture_walk.picture(make_tiling("fused", 4096, 16))
    assert small["group"] == {"query_tiles": 1, "key_tiles": 1}
    assert (len(small["query_marks"]), len(small["key_marks"])) == (32, 64)


def test_each_tensor_has_a_place_in_the_picture():
    assert picture_walk.axes("plain") == {"Q": "query", "K": "key", "V": "key", "S": "table", "P": "table",
                                          "O": "query"}
    assert picture_walk.axes("fused") == {"Q": "query", "K": "key", "V": "key", "O": "query"}
    back = picture_walk.axes("fused-backward")
    assert back["dK"] == back["dV"] == back["K"] == "key" and back["dQ"] == back["L"] == back["D"] == "query"
    assert picture_walk.role("r*kv", "query_tiles") == "table" and picture_walk.role("qv*d", "key_tiles") == "stream"
    assert picture_walk.role("c*d", "key_tiles") == "bench" and picture_walk.role("n*d", "once") == "whole"


def test_the_walk_op_refuses_bad_input_naming_the_field():
    reply = api.handle({"op": "walk", "params": {"kernel": "fused", "n": "0", "d": "16"}})
    assert not reply["ok"] and reply["errors"][0]["field"] == "n"
    reply = api.handle({"op": "walk", "params": {"kernel": "fused", "n": "64", "d": "17"}})
    assert not reply["ok"] and reply["errors"][0]["field"] == "d"
    with pytest.raises(ValueError, match="at least 1"):
        picture_walk.marks_of(make_tiling("fused", 64, 16), 0)


def test_the_schedule_table_and_the_count_take_the_walk_a_row_at_a_time(monkeypatch):
    """Count and its one-tile schedule take O(T_r + T_c) steps, not one per tile pair:
    at N = 65,536 and d = 64 that is thousands of steps where the pairs number millions."""
    taken = []
    original = traffic.walk_steps

    def counting(tiling, marks=None):
        for step in original(tiling, marks):
            taken.append(step)
            yield step

    monkeypatch.setattr(traffic, "walk_steps", counting)
    tiling = make_tiling("plain", 65536, 64, causal=True)  # 2,048 query tiles, 4,096 key tiles
    traffic.walk(tiling)
    traffic.one_tile_schedule(tiling)
    assert len(taken) <= 2 * 3 * 3 * tiling.query_tiles
