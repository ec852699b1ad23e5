"""The lab's picture of the walk: the steps Count adds up, in marks a page can draw.

The lab draws each kernel's schedule as a grid of query tiles (rows) by key
tiles (columns): the tile on the bench (workgroup memory), the tiles streaming
past it, the pairs a causal mask skips, and the N×N tables that a plain kernel
sends out to global memory and reads back. Its numbers are the emulator's own
walk, :func:`emulator.traffic.walk_steps`, the generator Count adds up; this
module only groups its steps into marks and names each tensor's place.

At most :data:`MAX_MARKS` marks per axis: past that, one mark stands for
several tiles side by side (a GPU runs many workgroups at once), and the
picture says how many.
"""
from __future__ import annotations

from .tiling import MANIFEST, TENSOR_ORDER, Tiling, element_bytes
from .traffic import _INNER, _OUTER, _formula, walk_steps

MAX_MARKS = 64

#: The fields of each run of :func:`runs`, in order.
RUN_FIELDS = ("pass", "phase", "outer", "inner", "repeat", "pairs", "reads", "writes")


def marks_of(tiling: Tiling, most: int = MAX_MARKS) -> tuple[int, int]:
    """(query tiles, key tiles) per mark: the fewest that keep each axis at
    ``most`` marks or fewer. Raises ValueError if ``most`` < 1."""
    if most < 1:
        raise ValueError(f"most must be at least 1, not {most}")
    return -(-tiling.query_tiles // most), -(-tiling.key_tiles // most)


def role(text: str, walk: str) -> str:
    """Where a pass's tensor sits while the pass walks (from its manifest formula):

    "whole" (a "once" pass: the whole tensor, once), "table" (grows with both
    the tile and the stream: a tile of an N×N table such as S or P), "stream"
    (grows with the stream only: the tiles walking past, such as K and V), or
    "bench" (fixed per tile: it comes onto the bench with the tile, or leaves
    with it, such as Q and O). Raises ValueError for a formula outside the grammar.
    """
    names = set(_formula(text, walk).co_names)
    if walk == "once":
        return "whole"
    inner, outer = _INNER[walk] in names, _OUTER[walk] in names
    return "table" if inner and outer else "stream" if inner else "bench"


def axes(kernel: str) -> dict:
    """{tensor: "query" | "key" | "table"} for every tensor ``kernel`` moves, in
    the manifest's display order: the rows it runs along in the picture (N query
    rows, N key rows, or the N×N table). A tensor that only "once" passes touch
    (the backward's O) runs along the query rows, as every such tensor has N rows."""
    found: dict = {}
    for spec in MANIFEST["kernels"][kernel]["passes"]:
        for kind in ("reads", "writes"):
            for tensor, text in spec[kind].items():
                where = role(text, spec["walk"])
                if where == "table":
                    found[tensor] = "table"
                elif where != "whole" and tensor not in found:
                    outer = "query" if spec["walk"] == "query_tiles" else "key"
                    found[tensor] = outer if where == "bench" else ("key" if outer == "query" else "query")
                else:
                    found.setdefault(tensor, None)
    return {t: found[t] or "query" for t in TENSOR_ORDER if t in found}


def runs(tiling: Tiling, marks: tuple[int, int]) -> list:
    """The walk's steps at ``marks`` (query tiles, key tiles per mark), as runs:
    [pass index, phase, outer mark, inner mark, repeat, pairs, reads, writes]
    (see :data:`RUN_FIELDS`). A run stands for ``repeat`` steps in a row, the
    same pass and outer mark, the inner marks ``inner`` … ``inner + repeat − 1``,
    each moving the same elements ({tensor: float32 elements}) over the same
    number of (query tile, key tile) pairs. Marks are None for a "once" pass,
    and inner is None outside stream steps."""
    out: list = []
    for step in walk_steps(tiling, marks):
        if step.outer is None:
            outer = inner = None
        else:
            query_axis = MANIFEST["kernels"][tiling.kernel]["passes"][step.pass_index]["walk"] == "query_tiles"
            g_outer, g_inner = marks if query_axis else marks[::-1]
            outer = step.outer[0] // g_outer
            inner = None if step.inner is None else step.inner[0] // g_inner
        last = out[-1] if out else None
        same = [step.pass_index, "stream", outer, step.pairs, step.reads, step.writes]
        if step.phase == "stream" and last and [*last[:3], *last[5:]] == same and last[3] + last[4] == inner:
            last[4] += 1
            continue
        out.append([step.pass_index, step.phase, outer, inner, 1, step.pairs, dict(step.reads), dict(step.writes)])
    return out


def _axis_marks(tiles: int, size: int, n: int, group: int) -> list:
    """[[first row, row after the last, first tile, tile after the last], ...] per mark."""
    return [[t * size, min(n, (t + group) * size), t, min(tiles, t + group)] for t in range(0, tiles, group)]


def picture(tiling: Tiling, most: int = MAX_MARKS) -> dict:
    """Everything the lab's picture draws for one kernel and size, as JSON-ready data.

    Returns {"kernel", "label", "direction", "n", "d", "causal",
    "workgroup_bytes", "block_rows", "block_cols", "query_tiles", "key_tiles",
    "bytes_per_element" (4), "group": {"query_tiles": g_r, "key_tiles": g_c}
    (tiles per mark), "query_marks" and "key_marks" (see _axis_marks), "passes":
    [{"name", "walk", "reads": {tensor: role}, "writes": {...}}] (see
    :func:`role`), "tensors": [[tensor, axis], ...] in display order (see
    :func:`axes`; a list, as the worker's JSON sorts object keys), "run_fields",
    "runs" (see :func:`runs`), "steps" (the steps the runs stand for)}. Its runs
    add up to emulator.traffic.count's elements, tensor by tensor (tests/test_walk.py).
    """
    entry = MANIFEST["kernels"][tiling.kernel]
    marks = marks_of(tiling, most)
    walked = runs(tiling, marks)
    steps = 0
    for run in walked:
        steps += run[4]
    return {
        "kernel": tiling.kernel, "label": entry.get("label", tiling.kernel),
        "direction": entry.get("direction", "forward"),
        "n": tiling.n, "d": tiling.d, "causal": tiling.causal, "workgroup_bytes": tiling.workgroup_bytes,
        "block_rows": tiling.block_rows, "block_cols": tiling.block_cols,
        "query_tiles": tiling.query_tiles, "key_tiles": tiling.key_tiles,
        "bytes_per_element": element_bytes(tiling.kernel),
        "group": {"query_tiles": marks[0], "key_tiles": marks[1]},
        "query_marks": _axis_marks(tiling.query_tiles, tiling.block_rows, tiling.n, marks[0]),
        "key_marks": _axis_marks(tiling.key_tiles, tiling.block_cols, tiling.n, marks[1]),
        "passes": [{"name": spec["name"], "walk": spec["walk"],
                    "reads": {t: role(x, spec["walk"]) for t, x in spec["reads"].items()},
                    "writes": {t: role(x, spec["walk"]) for t, x in spec["writes"].items()}}
                   for spec in entry["passes"]],
        "tensors": [[tensor, axis] for tensor, axis in axes(tiling.kernel).items()],
        "run_fields": list(RUN_FIELDS),
        "runs": walked,
        "steps": steps,
    }
