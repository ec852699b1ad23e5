"""Instruments that see how a learner's code works, not only what it returns.

A step's tests hand the learner's function inputs that report their own reads.
:class:`Watched` is a list (it behaves as the plain list of rows the prompt
promises) whose every row access is told to a :class:`Recorder`. The recorder
models the fast memory of a fused kernel (workgroup memory, SRAM) as one tile
of each watched tensor, ``block`` rows aligned on multiples of ``block``:
touching a row of another tile loads that tile, and its rows count as read
from global memory (HBM). A tiled pass that works through a key tile, row
after row and as often as it likes, so reads each key row once per query
tile, as the fused kernel does; code that goes back to key 0 for every query
row reads every key row once per query row.

What it counts, per tensor: ``reads`` (rows loaded, as above) and ``tiles``
(tile loads). Across K and V: ``ahead``, the most keys whose rows of K were
read before any row of V of their tile, during one query tile's visit. Their
scores must be held meanwhile; a tiled pass holds those of one key tile.

Expectations come from the emulator: :func:`emulator.traffic.pass_elements`
walks the manifest's kernels at the learner's block_rows and block_cols (the
lesson's rules of :class:`emulator.tiling.Tiling`: the last tile may be
ragged, a causal pass skips key tiles wholly past a query tile's last row).
Two loop orders are tiled passes, and both are accepted:

- query tiles outer, key tiles inner: FlashAttention-2's forward, the
  manifest's ``fused`` pass (K and V once per query tile, Q once), and its
  backward's ``dq`` pass;
- key tiles outer, query tiles inner: FlashAttention's Algorithm 1 order and
  FlashAttention-2's backward, the manifest's ``dkv`` pass of
  ``fused-backward`` (K and V once, Q once per key tile that reaches it).

Reads must equal the count within one tile per tensor: a shape peek such as
``len(V[0])`` may load a tile more, and a tile still held from the last visit
(the last query tile of one key tile is the first of the next) one less.

What they cannot see: a copy the code makes. ``K2 = [list(r) for r in K]``
reads each row of K once, and what the code then does with its copy is
invisible; the count then shows too few reads (all of K held at once), which
is refused too. The learner's arithmetic is not watched either: the tests of
the numbers do that.

Standard library only, so the same source runs in CPython 3.11 and in the
page's Pyodide (Python 3.14).
"""
from __future__ import annotations

import operator

from emulator.i18n import _, group
from emulator.tiling import BYTES, Tiling
from emulator.traffic import pass_elements

from . import guard
from .skill import VALUE_BYTES, Budget, deep_size, hold_to, measure
from .testing import Failure

#: Key tiles a tiled pass may hold ahead of their values: the one it works on and
#: one fetched early (software pipelining).
AHEAD_TILES = 2


class _Tensor:
    __slots__ = ("name", "n", "block", "tile", "reads", "tiles")

    def __init__(self, name: str, n: int, block: int):
        self.name, self.n, self.block = name, n, max(1, int(block))
        self.tile = None
        self.reads = 0
        self.tiles = 0


class Recorder:
    """The fast memory of one run: one tile per watched tensor, and the counts.

    ``reads[name]``: rows of ``name`` loaded from global memory; ``tiles[name]``:
    its tile loads; ``ahead``: the most keys (rows of the ``keys`` tensor) read
    ahead of every row of ``values`` of their tile, within one visit of a tile of
    ``queries``. Set ``keys``, ``values`` and ``queries`` to tensor names to track
    ``ahead``.
    """

    def __init__(self, keys: str | None = None, values: str | None = None, queries: str | None = None):
        self._tensors: dict[str, _Tensor] = {}
        self.keys, self.values, self.queries = keys, values, queries
        self._key_tiles: dict[int, int] = {}   # tile -> rows, keys read in this visit
        self._value_tiles: set[int] = set()
        self.ahead = 0

    def watch(self, name: str, rows, block: int) -> Watched:
        """``rows`` (a list of rows) as a :class:`Watched` list, in tiles of ``block`` rows."""
        self._tensors[name] = _Tensor(name, len(rows), block)
        return Watched(rows, self, name)

    @property
    def reads(self) -> dict:
        return {name: t.reads for name, t in self._tensors.items()}

    @property
    def tiles(self) -> dict:
        return {name: t.tiles for name, t in self._tensors.items()}

    def touch(self, name: str, j: int) -> None:
        """Row ``j`` of ``name`` was read: load its tile unless it is the one held."""
        t = self._tensors[name]
        tile = j // t.block
        if tile != t.tile:
            t.tile = tile
            t.tiles += 1
            t.reads += min(t.block, t.n - tile * t.block)
            if name == self.queries:       # a new query tile: a new visit
                self._key_tiles.clear()
                self._value_tiles.clear()
        if name == self.keys and tile not in self._key_tiles:
            self._key_tiles[tile] = min(t.block, t.n - tile * t.block)
            held = 0
            for k, rows in self._key_tiles.items():
                if k not in self._value_tiles:
                    held += rows
            self.ahead = max(self.ahead, held)
        elif name == self.values:
            self._value_tiles.add(tile)


class Watched(list):
    """A list of rows that tells its :class:`Recorder` each row read.

    Indexing, slicing, iteration (``for``, ``zip``, ``list()``, ``*``), ``copy()``,
    ``+``, ``*`` and ``in`` count; ``len()`` and ``bool()`` do not. A slice or a
    copy comes back as a plain list (its rows were read when it was taken).
    """

    __slots__ = ("_recorder", "_name")

    def __init__(self, rows, recorder: Recorder, name: str):
        super().__init__(rows)
        self._recorder = recorder
        self._name = name

    def _all(self) -> list:
        for j in range(len(self)):
            self._recorder.touch(self._name, j)
        return list.__getitem__(self, slice(None))

    def __getitem__(self, index):
        if isinstance(index, slice):
            for j in range(*index.indices(len(self))):
                self._recorder.touch(self._name, j)
            return list.__getitem__(self, index)
        value = list.__getitem__(self, index)  # IndexError and TypeError as a list raises them
        j = operator.index(index)
        self._recorder.touch(self._name, j + len(self) if j < 0 else j)
        return value

    def __iter__(self):
        for j in range(len(self)):
            self._recorder.touch(self._name, j)
            yield list.__getitem__(self, j)

    def __reversed__(self):
        for j in range(len(self) - 1, -1, -1):
            self._recorder.touch(self._name, j)
            yield list.__getitem__(self, j)

    def __contains__(self, item):
        return item in self._all()

    def copy(self):
        return self._all()

    def __add__(self, other):
        return self._all() + other

    def __radd__(self, other):
        return list(other) + self._all()

    def __mul__(self, times):
        return self._all() * times

    __rmul__ = __mul__

    def index(self, *args):
        return self._all().index(*args)

    def count(self, item):
        return self._all().count(item)


# ------------------------------------------------------------ expectations

def _tiling(kernel: str, n: int, d: int, causal: bool, block_rows: int, block_cols: int) -> Tiling:
    return Tiling(kernel, n, d, bool(causal), block_rows, block_cols, BYTES * d * (block_rows + 2 * block_cols))


def _rows(elements: dict, tensors, d: int) -> dict:
    return {t: elements[t] // d for t in tensors}


def forward_orders(n: int, d: int, block_rows: int, block_cols: int, causal: bool) -> dict:
    """Rows of Q, K and V a tiled forward pass reads, per loop order:
    {"query": {...}, "key": {...}} (see the module docstring), from the emulator's walks."""
    q_outer = pass_elements(_tiling("fused", n, d, causal, block_rows, block_cols), "fused")["reads"]
    k_outer = pass_elements(_tiling("fused-backward", n, d, causal, block_rows, block_cols), "dkv")["reads"]
    return {"query": _rows(q_outer, ("Q", "K", "V"), d), "key": _rows(k_outer, ("Q", "K", "V"), d)}


def backward_orders(n: int, d: int, block_rows: int, block_cols: int, causal: bool) -> dict:
    """Rows of Q, K, V and O a tiled backward pass reads, per loop order, from the
    manifest's ``fused-backward``: key tiles outer (its ``dkv`` pass) or query tiles
    outer (its ``dq`` pass); O is read once, by the pass that forms D = rowsum(dO∘O)."""
    tiling = _tiling("fused-backward", n, d, causal, block_rows, block_cols)
    once = _rows(pass_elements(tiling, "preprocess")["reads"], ("O",), d)
    key = dict(_rows(pass_elements(tiling, "dkv")["reads"], ("Q", "K", "V"), d), **once)
    query = dict(_rows(pass_elements(tiling, "dq")["reads"], ("Q", "K", "V"), d), **once)
    return {"key": key, "query": query}


# ------------------------------------------------------------ judging

def _what_it_did(t: str, got: int, want: int, n: int, known: dict, causal: bool) -> str:
    """How code that read ``got`` rows of ``t`` read them. ``known``: {reads: what} for
    the counts of untiled walks ("per row of Q", "per key tile"): "row of X" or "key tile"."""
    what = known.get(got)
    for reads, said in known.items():
        if what is None and said.startswith("row of ") and reads and got > reads and got % reads == 0:
            return _("your code read every row of {t} {times} times per row of {other} ({got} reads)").format(
                t=t, times=got // reads, other=said[len("row of "):], got=group(got))
    if what is not None and what.startswith("row of "):
        other = what[len("row of "):]
        if causal:
            return _("your code read every row of {t} once per row of {other} that sees it ({got} reads)").format(
                t=t, other=other, got=group(got))
        return _("your code read every row of {t} once per row of {other} (N = {n}: {got} reads)").format(
            t=t, other=other, n=group(n), got=group(got))
    if what == "every key tile":
        return _("your code read every row of {t} once per query tile, the key tiles wholly past the diagonal "
                 "too ({got} reads)").format(t=t, got=group(got))
    if what == "query tile":
        return _("your code read every row of {t} once per query tile ({got} reads)").format(t=t, got=group(got))
    if what == "key tile":
        return _("your code read every row of {t} once per key tile ({got} reads)").format(t=t, got=group(got))
    if got == n and want > n:
        return _("your code read every row of {t} just once in all ({got} reads), so it held all of {t} "
                 "at once").format(t=t, got=group(got))
    if want and got > want and got % want == 0:
        return _("your code read every row of {t} {times} times as often as a tiled pass ({got} reads)").format(
            t=t, times=got // want, got=group(got))
    return _("your code read rows of {t} {got} times in all").format(t=t, got=group(got))


def _what_a_tiled_pass_does(want: int, per_tile: bool, order: str, tiles: int, causal: bool) -> str:
    if not per_tile:
        return _("a tiled pass reads each row of it once ({want} reads)").format(want=group(want))
    if order == "query" and causal:
        text = _("a tiled pass reads it once per query tile, up to that tile's last row ({tiles} tiles: {want} reads)")
    elif order == "query":
        text = _("a tiled pass reads it once per query tile ({tiles} tiles: {want} reads)")
    elif causal:
        text = _("a tiled pass reads it once per key tile it reaches, from the diagonal on "
                 "({tiles} tiles: {want} reads)")
    else:
        text = _("a tiled pass reads it once per key tile ({tiles} tiles: {want} reads)")
    return text.format(tiles=group(tiles), want=group(want))


def _refuse(desc: str, rec: Recorder, orders: dict, primary: str, blocks: dict, ns: dict, known: dict,
            tile_counts: dict, causal: bool) -> None:
    """Pass when the reads fit one of ``orders`` ({order: {tensor: rows}}); else raise a
    Failure naming the first tensor off the order the code is closest to (``primary``
    on a tie). known: {tensor: {reads: what}}, for :func:`_what_it_did`."""
    got = rec.reads

    def fits(order, t):
        return abs(got.get(t, 0) - order[t]) <= blocks[t]

    if any(all(fits(order, t) for t in order) for order in orders.values()):
        return
    name = max(orders, key=lambda k: ([fits(orders[k], t) for t in orders[k]].count(True), k == primary))
    order = orders[name]
    t = next(t for t in ("K", "V", "Q", "O") if t in order and not fits(order, t))
    if name != primary and got.get(t, 0) == ns[t]:
        # Off the other order only by a tensor read just once, as the primary order reads it:
        # the code follows the primary order, and what it read once it had copied.
        name, order = primary, orders[primary]
        t = next(t for t in ("K", "V", "Q", "O") if t in order and not fits(order, t))
    want = order[t]
    did = _what_it_did(t, got.get(t, 0), want, ns[t], known.get(t, {}), causal)
    tiled = _what_a_tiled_pass_does(want, want > ns[t], name, tile_counts[name], causal)
    message = _("{input}: {did}; {tiled}").format(input=desc, did=did, tiled=tiled)
    raise Failure(message, input=desc, expected=_("rows of {t} read: {want}").format(t=t, want=group(want)),
                  got=_("rows of {t} read: {got}").format(t=t, got=group(got.get(t, 0))))


def _refuse_ahead(desc: str, rec: Recorder, block_cols: int) -> None:
    if rec.ahead <= AHEAD_TILES * block_cols:
        return
    message = _("{input}: your code read {keys} rows of K before it used their rows of V, so it held the scores "
                "of {keys} keys at once; a tiled pass holds those of one key tile ({tile} keys) at a time").format(
                    input=desc, keys=group(rec.ahead), tile=group(block_cols))
    raise Failure(message, input=desc,
                  expected=_("scores held: one key tile ({tile} keys)").format(tile=group(block_cols)),
                  got=_("scores held: {keys} keys").format(keys=group(rec.ahead)))


def _known(orders, per_row: dict, per_tile: dict) -> dict:
    """{tensor: {reads: what}} for the messages: the untiled walks' counts."""
    known = {}
    for t, (other, reads) in per_row.items():
        known.setdefault(t, {})[reads] = f"row of {other}"
    for t, (what, reads) in per_tile.items():
        known.setdefault(t, {}).setdefault(reads, what)
    return known


def run_forward(fn, Q, K, V, block_rows: int, block_cols: int, causal: bool, desc: str, **kwargs):
    """Call ``fn(Q, K, V, block_rows, block_cols, causal=causal, **kwargs)`` with Q, K
    and V watched, and raise Failure unless it read them as a tiled pass does (either
    loop order) and held no more than :data:`AHEAD_TILES` key tiles of scores at once.
    Q and K must have the same number of rows (the emulator's walks are square).
    Returns what ``fn`` returned."""
    n, d = len(Q), len(Q[0])
    rec = Recorder(keys="K", values="V", queries="Q")
    got = fn(rec.watch("Q", Q, block_rows), rec.watch("K", K, block_cols), rec.watch("V", V, block_cols),
             block_rows, block_cols, causal=causal, **kwargs)
    orders = forward_orders(n, d, block_rows, block_cols, causal)
    by_row = forward_orders(n, d, 1, block_cols, causal)["query"]      # a "tile" of one query row
    by_key = forward_orders(n, d, block_rows, 1, causal)["key"]        # a "tile" of one key row
    unskipped = forward_orders(n, d, block_rows, block_cols, False)["query"]  # causal by masking every tile
    known = _known(orders, {"K": ("Q", by_row["K"]), "V": ("Q", by_row["V"]), "Q": ("K", by_key["Q"])},
                   {"K": ("every key tile", unskipped["K"]), "V": ("every key tile", unskipped["V"])} if causal else {})
    tiling = _tiling("fused", n, d, causal, block_rows, block_cols)
    _refuse(desc, rec, orders, "query", {"Q": block_rows, "K": block_cols, "V": block_cols},
            {"Q": n, "K": len(K), "V": len(V)}, known, {"query": tiling.query_tiles, "key": tiling.key_tiles},
            causal)
    _refuse_ahead(desc, rec, block_cols)
    return got


def run_backward(fn, Q, K, V, O, dO, L, block_rows: int, block_cols: int, causal: bool, desc: str, **kwargs):
    """Call ``fn(Q, K, V, O, dO, L, block_rows, block_cols, causal=causal, **kwargs)``
    with Q, K, V and O watched, and raise Failure unless it read them as a tiled
    backward does (either loop order, O once, for D) and held no more than
    :data:`AHEAD_TILES` key tiles of scores (or of P) at once. Returns what ``fn`` returned."""
    n, d = len(Q), len(Q[0])
    rec = Recorder(keys="K", values="V", queries="Q")
    got = fn(rec.watch("Q", Q, block_rows), rec.watch("K", K, block_cols), rec.watch("V", V, block_cols),
             rec.watch("O", O, block_rows), dO, L, block_rows, block_cols, causal=causal, **kwargs)
    orders = backward_orders(n, d, block_rows, block_cols, causal)
    by_row = backward_orders(n, d, 1, block_cols, causal)["query"]
    by_key = backward_orders(n, d, block_rows, 1, causal)["key"]
    known = _known(orders, {"K": ("Q", by_row["K"]), "V": ("Q", by_row["V"]), "Q": ("K", by_key["Q"]),
                            "O": ("K", by_key["Q"])},
                   {"O": ("key tile", orders["key"]["Q"])})
    tiling = _tiling("fused-backward", n, d, causal, block_rows, block_cols)
    _refuse(desc, rec, orders, "key", {"Q": block_rows, "K": block_cols, "V": block_cols, "O": block_rows},
            {"Q": n, "K": len(K), "V": len(V), "O": n}, known,
            {"key": tiling.key_tiles, "query": tiling.query_tiles}, causal)
    _refuse_ahead(desc, rec, block_cols)
    return got


def run_over_tiles(fn, scores: list, block: int, desc: str):
    """Call ``fn(scores, block)`` with the scores watched in tiles of ``block`` and raise
    Failure unless it read each tile once, in one pass (no slack: a pass that finds the
    whole row's max first reads every score twice). Returns what ``fn`` returned."""
    rec = Recorder()
    got = fn(rec.watch("scores", scores, block), block)
    n = len(scores)
    reads = rec.reads["scores"]
    if reads == n:
        return got
    if reads < n:
        did = _("your code read {got} of the {n} scores: {missing} were never read").format(
            got=group(reads), n=group(n), missing=group(n - reads))
    elif reads % n == 0:
        did = _("your code read every score {times} times ({got} reads of {n} scores)").format(
            times=reads // n, got=group(reads), n=group(n))
    else:
        did = _("your code read the scores {got} times in all, for {n} scores").format(got=group(reads), n=group(n))
    tiles = -(-n // block)
    message = _("{input}: {did}; an online softmax reads each tile once ({tiles} tiles: {n} reads)").format(
        input=desc, did=did, tiles=group(tiles), n=group(n))
    raise Failure(message, input=desc, expected=_("scores read: {n}").format(n=group(n)),
                  got=_("scores read: {got}").format(got=group(reads)))


# ------------------------------------------------------------ the source

#: The project's own packages (one list, the guard's: exercises.guard refuses them in a check).
OWN_PACKAGES = guard.OWN_PACKAGES


def _own(name) -> bool:
    return isinstance(name, str) and name.split(".")[0] in OWN_PACKAGES


def borrowed(mod) -> tuple[str, int] | None:
    """(module name, line) of the first use of the project's own code in the learner's
    module ``mod``: an ``import`` or ``from ... import`` of one of :data:`OWN_PACKAGES`
    (in a function too), ``__import__("emulator...")``, ``importlib.import_module(...)``,
    ``sys.modules["emulator..."]``; or, when the source cannot be read, a global name
    bound to such a module or to a function of one. None when there is none.

    The source is the one the runner compiled (exercises.runner registers it with
    linecache under ``mod.__file__``)."""
    import ast
    import linecache
    import types

    source = "".join(linecache.getlines(getattr(mod, "__file__", "") or ""))
    try:
        tree = ast.parse(source) if source else None
    except SyntaxError:
        tree = None
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if _own(alias.name):
                        return alias.name, node.lineno
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and _own(node.module):
                return f"{node.module}.{node.names[0].name}", node.lineno
            elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                func = node.func
                called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if called in ("__import__", "import_module") and _own(node.args[0].value):
                    return node.args[0].value, node.lineno
            elif (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
                  and isinstance(node.value, ast.Attribute) and node.value.attr == "modules"
                  and _own(node.slice.value)):
                return node.slice.value, node.lineno
    for value in vars(mod).values():
        if isinstance(value, types.ModuleType) and _own(value.__name__):
            return value.__name__, 0
        if callable(value) and _own(getattr(value, "__module__", None)):
            return value.__module__, 0
    return None


# ------------------------------------------------------------ memory held by a tiled pass (exercise 2)
#
# A copy, a strip or a table can be read in the tiled pass's order (the counts above
# then agree) and still be held whole. exercises.skill measures the peak a call holds
# beyond what it returns (tracemalloc) and words the refusal; these are exercise 2's
# budgets, exercises.skill.Budget.tiles_of: SLACK tiles of the step's own B_r, B_c and d,
# plus the state of the size of the output that a loop order keeps.


def backward_tile_values(d: int, block_rows: int, block_cols: int) -> int:
    """Numbers of one step of a tiled backward by recomputation (FlashAttention-2,
    Algorithm 2): a tile of P and one of dS (2 · B_r · B_c), and the rows of Q, dO, K and
    V they are made from ((B_r + B_c) · d)."""
    return 2 * block_rows * block_cols + (block_rows + block_cols) * d


def forward_tile_values(d: int, block_rows: int, block_cols: int) -> int:
    """Numbers of one step of a tiled forward: a B_r × B_c tile of scores, and m, l and
    O's accumulator (2 + d numbers) for its B_r rows: B_r · (B_c + d + 2)."""
    return block_rows * (block_cols + d + 2)


def output_bytes(n: int, d: int) -> int:
    """Bytes of state the size of a forward's output, O (N rows of d) and L, and m and l
    for every row (2 · N numbers): what a pass with the key tiles outer keeps between
    its visits to a query tile."""
    return deep_size(([[0.5] * d for _ in range(n)], [0.5] * n)) + 2 * n * VALUE_BYTES


def _tiles_said(n: int, block_rows: int, block_cols: int) -> str:
    return _("N = {n}, block_rows {br}, block_cols {bc}").format(n=group(n), br=block_rows, bc=block_cols)


def backward_budget(n: int, d: int, block_rows: int, block_cols: int):
    """The :class:`exercises.skill.Budget` of a tiled backward at these tiles:
    :func:`backward_tile_values` per tile, and D (N numbers, two per row's worth)."""
    holds = _("a tiled backward holds D ({n} numbers, one per row) and a tile of P and of dS ({br} × {bc}) "
              "at a time").format(n=group(n), br=block_rows, bc=block_cols)
    return Budget.tiles_of(backward_tile_values(d, block_rows, block_cols), _tiles_said(n, block_rows, block_cols),
                           holds, _("numbers"), extra=2 * n * VALUE_BYTES)


#: How many output-sized sets of every row's state a pass with the key tiles outer may hold:
#: its m, l and O as lists, or as one small object per row (a class with three attributes
#: holds about twice the bytes of the same numbers in lists), and the O it builds from them.
KEY_OUTER_STATE = 2


def forward_budget(n: int, d: int, block_rows: int, block_cols: int, order: str):
    """The :class:`exercises.skill.Budget` of a tiled forward in loop ``order`` at these
    tiles: :func:`forward_tile_values` per tile; with ``order`` "key" (key tiles outer,
    FlashAttention's Algorithm 1) also :data:`KEY_OUTER_STATE` times :func:`output_bytes`,
    every row's state."""
    if order == "key":
        holds = _("a tiled pass holds m, l and O for each row, and one tile of scores ({br} × {bc})")
    else:
        holds = _("a tiled pass holds m, l and O for one query tile ({br} rows), and one tile of scores "
                  "({br} × {bc})")
    return Budget.tiles_of(forward_tile_values(d, block_rows, block_cols), _tiles_said(n, block_rows, block_cols),
                           holds.format(br=block_rows, bc=block_cols), _("numbers"),
                           extra=KEY_OUTER_STATE * output_bytes(n, d) if order == "key" else 0)


def _shapes(n: int, d: int, block_rows: int, table: str, backward: bool) -> list:
    """What the code may have held instead, as the refusal names it: [(label, numbers)]
    (exercises.skill.hold_to names the largest that the memory held covers): an N × N
    table; for the backward, copies of its inputs (N × d numbers each); for the forward, a
    block_rows × N strip of scores or every score of one row (a softmax of the whole row)."""
    shapes = [(_("an N × N table of {table} ({count} numbers)").format(table=table, count=group(n * n)), n * n)]
    if backward:
        shapes.append((_("copies of the inputs (N × d = {count} numbers each)").format(count=group(n * d)), 2 * n * d))
    else:
        shapes += [(_("a block_rows × N strip of {table} ({count} numbers)").format(
                        table=table, count=group(block_rows * n)), block_rows * n),
                   (_("every score of a row at once, a softmax of the whole row ({count} numbers)").format(
                        count=group(n)), 2 * n)]
    return shapes


def hold_backward(run, desc: str, n: int, d: int, block_rows: int, block_cols: int) -> None:
    """Raise a Failure unless the backward call ``run`` (exercises.skill.measure) held no
    more than :func:`backward_budget`, naming a table, a strip or a copy when it held one."""
    hold_to(run, desc, backward_budget(n, d, block_rows, block_cols),
            _shapes(n, d, block_rows, "P", True))


def measure_backward(fn, Q, K, V, O, dO, L, block_rows: int, block_cols: int, causal: bool, **kwargs):
    """Call ``fn(Q, K, V, O, dO, L, block_rows, block_cols, causal=causal, **kwargs)``
    under exercises.skill.measure; its Run."""
    return measure(fn, Q, K, V, O, dO, L, block_rows, block_cols, causal=causal, **kwargs)


def measure_forward(fn, Q, K, V, block_rows: int, block_cols: int, causal: bool, **kwargs):
    """Call ``fn(Q, K, V, block_rows, block_cols, causal=causal, **kwargs)`` under
    exercises.skill.measure, with Q, K and V watched to tell the
    loop order: (run, order), order "key" when K was read once (key tiles outer), else "query"."""
    rec = Recorder()
    run = measure(fn, rec.watch("Q", Q, block_rows), rec.watch("K", K, block_cols), rec.watch("V", V, block_cols),
                  block_rows, block_cols, causal=causal, **kwargs)
    n, d = len(Q), len(Q[0])
    key_reads = forward_orders(n, d, block_rows, block_cols, causal)["key"]["K"]
    order = "key" if abs(rec.reads["K"] - key_reads) <= block_cols else "query"
    return run, order


def hold_forward(run, order: str, desc: str, n: int, d: int, block_rows: int, block_cols: int) -> None:
    """Raise a Failure unless the forward call ``run`` held no more than :func:`forward_budget`
    in its loop ``order``, naming a table, a strip or a copy when it held one."""
    hold_to(run, desc, forward_budget(n, d, block_rows, block_cols, order),
            _shapes(n, d, block_rows, _("scores"), False))
