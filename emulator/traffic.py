"""Bytes each kernel moves to and from global memory (HBM, "the warehouse").

Each kernel's schedule is declared once, in ``kernels_wgsl/manifest.json``:
per pass, the elements of each tensor read and written at each step of its
walk. :func:`walk` adds them up tile by tile; the tests hold it to the
forward kernels' totals from a formula (tests/closed_forms.py), ragged N and
causal included.

What the manifest declares for the forward kernels, per query tile of r ≤ B_r rows that streams ``kv`` keys past it
(kv = N for full attention; for causal, the key tiles up to the diagonal):

plain (three passes, each its own dispatch)
  1. scores:  read Q r·d, read K kv·d,           write S r·kv
  2. softmax: read S r·kv,                       write P r·kv
  3. P·V:     read P r·kv, read V kv·d,          write O r·d
fused and fused-no-rescale (one pass; FlashAttention Algorithm 1, FA2 §3.1)
              read Q r·d, read K kv·d, read V kv·d, write O r·d

Every element is a float32, 4 bytes, unless the kernel declares another "dtype"
(manifest "dtypes": float16, 2 bytes, for fused-f16). One head. Q stays on the bench (workgroup
memory) while the K and V tiles stream past it, so K and V are fetched once per
query tile: that is why a larger B_r (smaller d, or larger M) saves traffic.

There is one walk, :func:`walk_steps`: per pass, per tile, the elements of each
tensor read and written. :func:`walk` and :func:`count` add up its steps with a
query tile's whole row of key tiles taken as one step; the lab's picture of the
walk (emulator.walk) takes the same steps a key tile (or a group of tiles) at a time.
"""
from __future__ import annotations

import ast
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from functools import cache
from typing import NamedTuple

from .tiling import M_DEFAULT, MANIFEST, TENSOR_ORDER, Tiling, dtype_of, element_bytes, make_tiling

#: FLOP a score of plain's softmax pass counts (max, subtract, exp, sum, divide): the convention
#: the benchmarks' GFLOP/s (bench.bench_wgsl) and the page's roofline (course.measured) share,
#: beside the bytes this module counts.
SOFTMAX_FLOP_PER_SCORE = 5

WALKS = ("query_tiles", "key_tiles", "once")
_NAMES = {"query_tiles": {"r", "kv", "n", "d"}, "key_tiles": {"c", "qv", "n", "d"}, "once": {"n", "d"}}


def passes(kernel: str) -> list:
    """The manifest's passes of ``kernel``: [{"name", "walk", "reads", "writes"}].

    Raises KeyError for a kernel the manifest does not declare.
    """
    return MANIFEST["kernels"][kernel]["passes"]


def tensors_of(direction: str) -> tuple:
    """Tensor names any kernel of ``direction`` ("forward"/"backward") reads or
    writes, in the manifest's display order."""
    used = set()
    for entry in MANIFEST["kernels"].values():
        if entry.get("direction", "forward") == direction:
            for spec in entry["passes"]:
                used.update(spec["reads"], spec["writes"])
    return tuple(t for t in TENSOR_ORDER if t in used)


TENSORS = tensors_of("forward")


@cache
def _formula(text: str, walk: str):
    """Compile an element formula ("r*d", "kv*d", "c*qv + n") after checking
    it uses only integers, + - * and the names its walk defines.

    Raises ValueError naming the formula otherwise (a manifest error).
    """
    if walk not in WALKS:
        raise ValueError(f"manifest: unknown walk {walk!r}; use one of {', '.join(WALKS)}")
    tree = ast.parse(text, mode="eval")
    for node in ast.walk(tree):
        ok = isinstance(node, (ast.Expression, ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Load)) or (
            isinstance(node, ast.Constant) and type(node.value) is int) or (
            isinstance(node, ast.Name) and node.id in _NAMES[walk])
        if not ok:
            raise ValueError(f"manifest: formula {text!r} may use only integers, + - * and {sorted(_NAMES[walk])}")
    return compile(tree, f"<manifest {text}>", "eval")


# The variable a pass's formulas stream over (its inner axis) and the one fixed per tile (outer).
_INNER = {"query_tiles": "kv", "key_tiles": "qv"}
_OUTER = {"query_tiles": "r", "key_tiles": "c"}
PHASES = ("load", "stream", "store", "once")


def _degree(node, name: str) -> int:
    """Degree in ``name`` of a checked formula's polynomial (+, -, * of names and integers)."""
    if isinstance(node, ast.Expression):
        return _degree(node.body, name)
    if isinstance(node, ast.BinOp):
        left, right = _degree(node.left, name), _degree(node.right, name)
        return left + right if isinstance(node.op, ast.Mult) else max(left, right)
    return int(isinstance(node, ast.Name) and node.id == name)


@cache
def _affine(text: str, walk: str) -> bool:
    """Whether a formula grows linearly (or not at all) with its walk's streamed
    variable (kv or qv): then any stretch of the stream moves elements in
    proportion to its rows, whichever tile streams it."""
    _formula(text, walk)
    return walk == "once" or _degree(ast.parse(text, mode="eval"), _INNER[walk]) <= 1


class Step(NamedTuple):
    """One step of a kernel's walk: elements each tensor moves to or from global memory.

    pass_index, pass_name: the manifest pass (0-based, its "name").
    phase: "load" (what the outer tiles bring onto the bench before anything
    streams: the formula's part that does not grow with the streamed keys or
    queries), "stream" (the inner tiles walking past), "store" (what the outer
    tiles write back after the stream) or "once" (a pass that runs once).
    outer: tiles [start, stop) of the pass's own axis (query tiles for walk
    query_tiles, key tiles for key_tiles); None for once.
    inner: tiles [start, stop) of the other axis that stream past (stream only).
    pairs: (query tile, key tile) pairs this step visits; a pair past the causal
    diagonal is skipped and not counted.
    reads, writes: {tensor: elements} (int, float32 elements, not bytes), only
    the tensors this step moves; read-only (steps of like tiles share them).
    """

    pass_index: int
    pass_name: str
    phase: str
    outer: tuple | None
    inner: tuple | None
    pairs: int
    reads: dict
    writes: dict


def walk_steps(tiling: Tiling, marks: tuple | None = None):
    """Yield every :class:`Step` of ``tiling.kernel``'s walk, pass by pass, in order.

    A pass that walks query tiles holds each query tile on the bench while the
    key tiles it visits stream past (causal: up to the diagonal, FA2 §3.1.1); a
    pass that walks key tiles holds a key tile while the query tiles that see
    it stream past (FA2 Algorithm 2); a "once" pass is one step. A formula
    f(r, kv) of the manifest is split exactly: f(r, 0) is loaded (reads) or
    stored (writes) with the tile, and the stream over keys [a, b) moves
    f(r, b) − f(r, a); so each tile's steps add up to f(r, kv), the count.

    marks: None (the count's walk: a run of like outer tiles per step, each
    with its whole stream; the tiles of full attention are all alike but a
    ragged last one, and under causal each streams its own length, so the walk
    costs at most O(T_r + T_c) steps), or (query tiles, key tiles) per step, the
    lab picture's marks: a step then holds that many outer tiles side by side,
    and one streamed group of tiles. Raises ValueError for a manifest
    formula outside the grammar (see :func:`_formula`).
    """
    entry = MANIFEST["kernels"][tiling.kernel]
    n, d = tiling.n, tiling.d
    for index, spec in enumerate(entry["passes"]):
        name, how = spec["name"], spec["walk"]
        formulas = [(kind, tensor, _formula(text, how), _affine(text, how))
                    for kind in ("reads", "writes") for tensor, text in spec[kind].items()]
        if how == "once":
            moved = {"reads": {}, "writes": {}}
            for kind, tensor, code, _linear in formulas:
                moved[kind][tensor] = _eval(code, {"n": n, "d": d})
            yield Step(index, name, "once", None, None, 0, moved["reads"], moved["writes"])
            continue
        yield from _tile_steps(tiling, index, name, how, formulas, marks)


def _eval(code, env: dict) -> int:
    return eval(code, {"__builtins__": {}}, env)  # noqa: S307 (checked by _formula)


def _tiles(tiling: Tiling, how: str) -> tuple:
    """The outer tiles of a pass that walks ``how``, each as (its rows, the first
    streamed row it visits, the row after its last), and the streamed axis's
    tile size and tile count. Full attention streams every row [0, N) past
    every tile; causal, a query tile streams keys [0, keys_visited) and a key
    tile the query rows [N − queries_visiting, N)."""
    n = tiling.n
    if how == "query_tiles":
        size = tiling.block_rows
        tiles = [(min(n, start + size) - start, 0, tiling.keys_visited(min(n, start + size)))
                 for start in range(0, n, size)]
        return tiles, tiling.block_cols, tiling.key_tiles
    size = tiling.block_cols
    tiles = [(min(n, start + size) - start, n - tiling.queries_visiting(start), n) for start in range(0, n, size)]
    return tiles, tiling.block_rows, tiling.query_tiles


def _groups(geometry: list, like: bool, size: int):
    """[start, stop) of each step's outer tiles: runs of like tiles (the same rows,
    streaming the same rows) when ``like``, else ``size`` tiles at a time."""
    if not like:
        yield from ((a, min(len(geometry), a + size)) for a in range(0, len(geometry), size))
        return
    start = 0
    for i in range(1, len(geometry) + 1):
        if i == len(geometry) or geometry[i] != geometry[start]:
            yield start, i
            start = i


def _prefix(values: list) -> list:
    out = [0]
    for v in values:
        out.append(out[-1] + v)
    return out


class _Band:
    """Outer tiles of one size walking side by side (one mark of the picture):
    each streams the rows [lo, hi) (tiles [lo // size, ⌈hi / size⌉)), where lo
    and hi never decrease from tile to tile (query tiles: lo = 0, hi grows
    under causal; key tiles: hi = N, lo grows). ``span(a, b, rows)`` adds up,
    over the band, how much of [a, b) each tile streams: rows, or tiles."""

    def __init__(self, tiles: list, size: int):
        self.count = len(tiles)
        self.lo = [t[1] for t in tiles]
        self.hi = [t[2] for t in tiles]
        self.first = [lo // size for lo in self.lo]
        self.last = [-(-hi // size) for hi in self.hi]
        self.sums = {key: _prefix(getattr(self, key)) for key in ("lo", "hi", "first", "last")}

    def span(self, a: int, b: int, rows: bool) -> int:
        """Σ over the band's tiles of _overlap(start, stop, a, b): rows if ``rows``, else tiles."""
        starts, stops = (self.lo, self.hi) if rows else (self.first, self.last)
        ps, pe = (self.sums["lo"], self.sums["hi"]) if rows else (self.sums["first"], self.sums["last"])
        k1 = bisect_right(stops, a)  # tiles from k1 on end after a
        k2 = bisect_left(starts, b)  # tiles before k2 start before b
        if k2 <= k1:
            return 0
        m1 = min(max(bisect_left(stops, b), k1), k2)  # tiles from m1 on end at or after b
        ends = pe[m1] - pe[k1] + b * (k2 - m1)
        m2 = min(max(bisect_right(starts, a), k1), k2)  # tiles from m2 on start after a
        begins = a * (m2 - k1) + ps[k2] - ps[m2]
        return ends - begins


def _overlap(start: int, stop: int, a: int, b: int) -> int:
    """|[start, stop) ∩ [a, b)|."""
    return max(0, min(stop, b) - max(start, a))


class _One:
    """A band of one tile (see _Band), as the count's walk takes them."""

    def __init__(self, tile: tuple, size: int):
        self.lo, self.hi = [tile[1]], [tile[2]]
        self.tiles = (tile[1] // size, -(-tile[2] // size))

    def span(self, a: int, b: int, rows: bool) -> int:
        return _overlap(self.lo[0], self.hi[0], a, b) if rows else _overlap(*self.tiles, a, b)


def _tile_steps(tiling: Tiling, index: int, name: str, how: str, formulas: list, marks):
    """The load, stream and store steps of one pass that walks tiles (see walk_steps).

    A stream step of affine formulas (every manifest formula so far) is summed
    over each band of like tiles at once, from the rows they stream (_Band);
    any other formula is evaluated tile by tile."""
    n, d = tiling.n, tiling.d
    outer_var, inner_var = _OUTER[how], _INNER[how]
    geometry, size, streamed = _tiles(tiling, how)
    outer_group, step = (1, streamed) if marks is None else (marks if how == "query_tiles" else marks[::-1])
    streaming = [(kind == "reads", tensor, code, affine) for kind, tensor, code, affine in formulas
                 if inner_var in code.co_names]
    memo: dict = {}  # (formula, own rows, stream position) -> elements: tiles of one size share them

    def value(code, own, p):
        key = (code, own, p)
        got = memo.get(key)
        if got is None:
            got = memo[key] = _eval(code, {outer_var: own, inner_var: p, "n": n, "d": d})
        return got

    at_rest: dict = {}  # own rows -> ({tensor: elements loaded}, {tensor: elements stored}) at stream position 0
    for own in {tile[0] for tile in geometry}:
        loads, stores = {}, {}
        for kind, tensor, code, _linear in formulas:
            moved = value(code, own, 0)
            if moved:
                (loads if kind == "reads" else stores)[tensor] = moved
        at_rest[own] = (loads, stores)
    # per own rows, each streamed formula's elements per streamed row: f(own, p) = f(own, 0) + p·slope
    # when the formula is affine in p (None: evaluate it at each position instead)
    slopes = {own: [(is_read, tensor, code, value(code, own, 1) - value(code, own, 0) if affine else None)
                    for is_read, tensor, code, affine in streaming] for own in at_rest}
    for first, last in _groups(geometry, marks is None, outer_group):
        tiles = geometry[first:last]
        span = (first, last)
        if marks is None:  # the count's walk: a run of like tiles, each streaming the same rows
            like = last - first
            loads, stores = at_rest[tiles[0][0]]
            if like > 1:
                loads, stores = ({t: like * e for t, e in moved.items()} for moved in (loads, stores))
            if loads:
                yield Step(index, name, "load", span, None, 0, loads, {})
            own, lo, hi = tiles[0]
            rows = like * (hi - lo)
            reads, writes = {}, {}
            for is_read, tensor, code, slope in slopes[own]:
                delta = rows * slope if slope is not None else like * (value(code, own, hi - lo) - value(code, own, 0))
                if delta:
                    (reads if is_read else writes)[tensor] = delta
            yield Step(index, name, "stream", span, (0, streamed), like * (-(-hi // size) - lo // size), reads, writes)
            if stores:
                yield Step(index, name, "store", span, None, 0, {}, stores)
            continue
        if len(tiles) == 1:
            loads, stores = at_rest[tiles[0][0]]
        else:
            loads, stores = {}, {}
            for tile in tiles:
                for mine, total in zip(at_rest[tile[0]], (loads, stores), strict=True):
                    for tensor, moved in mine.items():
                        total[tensor] = total.get(tensor, 0) + moved
        if loads:
            yield Step(index, name, "load", span, None, 0, loads, {})
        if len(tiles) == 1:
            bands = {tiles[0][0]: _One(tiles[0], size)}
        else:
            bands = {own: _Band([t for t in tiles if t[0] == own], size) for own in {t[0] for t in tiles}}
        for a in range(0, streamed, step):
            b = min(streamed, a + step)
            pairs = 0
            reads, writes = {}, {}
            rows_a, rows_b = a * size, min(n, b * size)
            for own, band in bands.items():
                visited = band.span(a, b, rows=False)
                if not visited:
                    continue
                pairs += visited
                rows = band.span(rows_a, rows_b, rows=True)
                for is_read, tensor, code, slope in slopes[own]:
                    if slope is not None:
                        delta = rows * slope
                    else:
                        delta = 0
                        for start, hi in zip(band.lo, band.hi, strict=True):
                            pa = max(0, min(hi, rows_a) - start)
                            pb = max(0, min(hi, rows_b) - start)
                            delta += value(code, own, pb) - value(code, own, pa)
                    if delta:
                        tally = reads if is_read else writes
                        tally[tensor] = tally.get(tensor, 0) + delta
            if pairs:
                yield Step(index, name, "stream", span, (a, b), pairs, reads, writes)
        if stores:
            yield Step(index, name, "store", span, None, 0, {}, stores)


@dataclass
class Traffic:
    """Global-memory traffic of one kernel on one head.

    reads, writes: bytes per tensor name (int), every tensor of the kernel's
    direction present (0 where untouched); per_pass: {pass name: bytes}.
    """

    tiling: Tiling
    reads: dict = field(default_factory=lambda: dict.fromkeys(TENSORS, 0))
    writes: dict = field(default_factory=lambda: dict.fromkeys(TENSORS, 0))
    per_pass: dict = field(default_factory=dict)

    @property
    def total_bytes(self) -> int:
        """All bytes read plus all bytes written (int)."""
        total = 0
        for name in self.reads:
            total += self.reads[name] + self.writes[name]
        return total

    def as_dict(self) -> dict:
        t = self.tiling
        entry = MANIFEST["kernels"][t.kernel]
        return {
            "kernel": t.kernel, "n": t.n, "d": t.d, "causal": t.causal,
            "direction": entry.get("direction", "forward"),
            "dtype": dtype_of(t.kernel), "bytes_per_element": element_bytes(t.kernel),
            "workgroup_bytes": t.workgroup_bytes,
            "block_rows": t.block_rows, "block_cols": t.block_cols,
            "query_tiles": t.query_tiles, "key_tiles": t.key_tiles,
            "reads": dict(self.reads), "writes": dict(self.writes),
            "per_pass": dict(self.per_pass),
            "total_bytes": self.total_bytes,
            "total_mib": self.total_bytes / 2**20,
        }


def walk(tiling: Tiling) -> Traffic:
    """Count traffic by adding up :func:`walk_steps`, each element 4 bytes.

    A pass walks its query tiles (r rows, kv keys visited), its key tiles
    (c rows, qv query rows that see it) or runs once; at each step every
    tensor formula gives elements read or written, times the kernel's bytes per
    element (4 for float32, 2 for float16: :func:`emulator.tiling.element_bytes`). A query
    tile's row of key tiles is one step here, and like tiles walk together, so the walk
    costs O(T_r + T_c) steps at most, well under a second at N = 65,536.
    """
    entry = MANIFEST["kernels"][tiling.kernel]
    names = tensors_of(entry.get("direction", "forward"))
    traffic = Traffic(tiling, dict.fromkeys(names, 0), dict.fromkeys(names, 0))
    size = element_bytes(tiling.kernel)
    reads, writes = dict(traffic.reads), dict(traffic.writes)  # elements, then bytes
    per_pass = dict.fromkeys((spec["name"] for spec in entry["passes"]), 0)
    for step in walk_steps(tiling):
        moved = 0
        for tensor, elements in step.reads.items():
            reads[tensor] += elements
            moved += elements
        for tensor, elements in step.writes.items():
            writes[tensor] += elements
            moved += elements
        per_pass[step.pass_name] += moved
    traffic.reads = {t: e * size for t, e in reads.items()}
    traffic.writes = {t: e * size for t, e in writes.items()}
    traffic.per_pass = {p: e * size for p, e in per_pass.items()}
    return traffic


def pass_elements(tiling: Tiling, pass_name: str) -> dict:
    """Elements one pass of ``tiling.kernel`` reads and writes, per tensor, walked
    as :func:`walk` walks it: {"reads": {tensor: elements}, "writes": {...}}.

    The exercise checker holds a learner's row reads to these (exercises.instruments):
    a row tensor's elements divided by d are its rows. Raises KeyError for a pass
    the kernel does not declare.
    """
    [spec] = [s for s in passes(tiling.kernel) if s["name"] == pass_name] or [None]
    if spec is None:
        raise KeyError(f"kernel {tiling.kernel!r} has no pass {pass_name!r}")
    out = {"reads": dict.fromkeys(spec["reads"], 0), "writes": dict.fromkeys(spec["writes"], 0)}
    for step in walk_steps(tiling):
        if step.pass_name == pass_name:
            for kind in ("reads", "writes"):
                for tensor, elements in getattr(step, kind).items():
                    out[kind][tensor] += elements
    return out


def count(kernel: str, n: int, d: int, causal: bool = False,
          workgroup_bytes: int = M_DEFAULT) -> Traffic:
    """Bytes ``kernel`` moves to and from global memory for one (N, d) head.

    kernel: "plain", "fused", "fused-no-rescale" or another manifest entry.
    Returns a Traffic (bytes per tensor, .total_bytes).
    Raises tiling.InputError if the tile does not fit.

    >>> count("fused", 4096, 16).total_bytes
    17301504
    """
    return walk(make_tiling(kernel, n, d, causal, workgroup_bytes))


def one_tile_schedule(tiling: Tiling) -> list[dict]:
    """Each pass's first tile (its first query or key tile, with its whole stream)
    in elements, from :func:`walk_steps`, for the page's schedule table:
    [{"pass", "tensor", "kind", "elements", "bytes"}], in the manifest's order."""
    first: dict = {}
    for step in walk_steps(tiling):
        if step.outer is None or step.outer[0] == 0:
            like = 1 if step.outer is None else step.outer[1] - step.outer[0]  # a run of like tiles
            mine = first.setdefault(step.pass_index, {"reads": {}, "writes": {}})
            for kind in ("reads", "writes"):
                for tensor, elements in getattr(step, kind).items():
                    mine[kind][tensor] = mine[kind].get(tensor, 0) + elements // like
    rows = []
    size = element_bytes(tiling.kernel)
    for index, spec in enumerate(passes(tiling.kernel)):
        for kind, label in (("reads", "read"), ("writes", "write")):
            for tensor in spec[kind]:
                e = first.get(index, {kind: {}})[kind].get(tensor, 0)
                rows.append({"pass": spec["name"], "tensor": tensor, "kind": label,
                             "elements": e, "bytes": e * size})
    return rows
