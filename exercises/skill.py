"""Skill instruments: what a learner's code holds while it runs, and in what order it reads.

exercises.instruments counts the rows a learner's code reads. A copy reads
each element once and then works on the copy, so it hides from a read count;
these instruments see it:

Values alive at once
    :class:`Stream` hands the code a sequence (scores, or rows of K and V)
    whose every read makes a fresh *tracked* value: a float (or a list, for
    rows) that counts itself while it is alive. ``list(scores)`` or
    ``sorted(scores)`` keeps every one alive, an online softmax a tile of them.
Order of use
    The stream's tiles are ``block`` values long. Reading a tile before the
    furthest one read so far is going back: a second pass. A tracked score of
    an earlier tile used in arithmetic or a comparison after the code has moved
    on is counted too, per tile the code is on: more than a tile's worth of them
    is a second pass over a copy of the tracked values; a running max, one
    score carried from tile to tile, is not.
Memory held
    :func:`measure` runs the call under ``tracemalloc`` and takes the peak of
    memory allocated during it, less what the call returns (its output is not
    held working memory): a copy of the inputs in plain floats, a B_r × N strip
    of scores, an N × N table all show there.

Budgets come from the step's tiles (:class:`Budget`): a number of values held
(one or two tiles' worth) and bytes, :data:`SLACK` tiles of :data:`VALUE_BYTES`
each, never a constant of bytes. :func:`hold_to` raises a Failure naming what
the code did, in the learner's terms: "your code held 4,096 scores at once
(block = 64): an online softmax holds one block"; "held 2.1 MB for N = 512,
B_r = 8, B_c = 8: that is a B_r × N strip of scores; a tile needs about 5.5 KB".

How a step's tests use them (the learner's call first, expected values after,
so that no frame holds an answer while the learner's code runs)::

    stream = skill.Stream(scores, block)
    with given(desc):
        run = skill.measure(fn, stream, block)      # only the inputs are in reach
    m, l = exact(scores)                            # expected values, after the call
    ...compare run.result with them...
    skill.hold_to(run, desc, skill.Budget.tiles(values=block, tiles=..., holds=...), stream)

Standard library only (tracemalloc and weakref-free ``__del__`` counting work
the same in the page's Pyodide, Python 3.14); sizes are chosen by the tests so
that a measured call takes well under a second in CPython.
"""
from __future__ import annotations

import gc
import struct
import sys
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass, field

from emulator.i18n import _, group, short

from .testing import Failure

#: Bytes of one number held in a list: a float object and the list's pointer to it
#: (measured here, so it is the running Python's own figure).
VALUE_BYTES = sys.getsizeof(0.5) + struct.calcsize("P")

#: Tiles' worth of bytes a correct answer may hold: the tile itself, the next one
#: being read, lists the code builds from them, the interpreter's frames.
SLACK = 8



class _Counter:
    """How many tracked values are alive now and the most at once; the furthest tile
    read; the scores of earlier tiles used since the code reached it (and the most)."""

    __slots__ = ("alive", "most", "furthest", "stale", "stale_most", "reads", "limit")

    def __init__(self, limit: int):
        self.limit = limit
        self.alive = 0
        self.most = 0
        self.furthest = -1
        self.stale: set[int] = set()
        self.stale_most = 0
        self.reads = 0

    def born(self):
        self.alive += 1
        if self.alive > self.most:
            self.most = self.alive

    def moved_on(self, tile: int):
        self.furthest = tile
        self.stale.clear()

    def used(self, tile: int, index: int):
        # Kept small (one entry past the limit, a tile, is enough to tell), so that the
        # instrument's own memory never counts against the code under tracemalloc.
        if tile < self.furthest and index not in self.stale and len(self.stale) <= self.limit:
            self.stale.add(index)
            self.stale_most = max(self.stale_most, len(self.stale))


def _tracked_float(counter: _Counter):
    """A float subclass whose instances count themselves alive in ``counter`` and
    report their arithmetic and comparisons (the uses) with their tile."""

    def _use(name):
        base = getattr(float, name)

        def op(self, *args):
            counter.used(self._tile, self._index)
            return base(self, *args)
        op.__name__ = name
        return op

    space = {"__slots__": ("_tile", "_index"), "__module__": __name__, "__qualname__": "float"}

    def __new__(cls, value, tile=-1, index=-1):
        obj = float.__new__(cls, value)
        obj._tile, obj._index = tile, index
        counter.born()
        return obj

    def __del__(self):
        counter.alive -= 1

    def __reduce__(self):  # a copy (copy.copy, pickle) is a plain float: the copy is the code's own
        return (float, (float(self),))

    space.update(__new__=__new__, __del__=__del__, __reduce__=__reduce__, __repr__=float.__repr__)
    for name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
                 "__rtruediv__", "__lt__", "__le__", "__gt__", "__ge__", "__neg__", "__pow__", "__rpow__"):
        space[name] = _use(name)
    space["__eq__"] = _use("__eq__")
    space["__ne__"] = _use("__ne__")
    space["__hash__"] = float.__hash__
    return type("float", (float,), space)


def _tracked_row(counter: _Counter):
    """A list subclass (a row of K or V) whose instances count themselves alive."""

    def __init__(self, values, tile=-1, index=-1):
        list.__init__(self, values)
        self._tile, self._index = tile, index
        counter.born()

    def __del__(self):
        counter.alive -= 1

    space = {"__slots__": ("_tile", "_index"), "__module__": __name__, "__qualname__": "list",
             "__init__": __init__, "__del__": __del__}
    return type("list", (list,), space)


class Stream(Sequence):
    """A sequence of ``values`` (floats, or rows: lists of floats) that the code
    reads in tiles of ``block``; each read hands out a fresh tracked value.

    Reads: ``s[j]``, ``s[a:b]`` (a plain list of tracked values), iteration,
    ``in``, ``index``, ``count``; ``len()`` reads nothing. After the call:
    :attr:`most_alive` (tracked values alive at once, the most), :attr:`went_back`
    ((tile, furthest) of the first read of an earlier tile, or None),
    :attr:`stale` (the most scores of earlier tiles used while the code was on one
    tile), :attr:`reads`.
    """

    def __init__(self, values, block: int, rows: bool = False):
        self._values = [list(v) for v in values] if rows else [float(v) for v in values]
        self.block = max(1, int(block))
        self._counter = _Counter(self.block)
        self._make = (_tracked_row if rows else _tracked_float)(self._counter)
        self.went_back: tuple[int, int] | None = None
        one = self._make([0.5] * len(self._values[0]) if rows and self._values else 0.5)
        #: Bytes of one value handed out, in a list: what a tile of them costs to hold.
        self.value_bytes = sys.getsizeof(one) + struct.calcsize("P") + (
            sum(sys.getsizeof(v) for v in one) if rows else 0)
        del one

    def __len__(self):
        return len(self._values)

    def _read(self, j: int):
        tile = j // self.block
        c = self._counter
        if tile < c.furthest and self.went_back is None:
            self.went_back = (tile, c.furthest)
        if tile > c.furthest:
            c.moved_on(tile)
        c.reads += 1
        return self._make(self._values[j], tile, j)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self._read(j) for j in range(*index.indices(len(self._values)))]
        j = range(len(self._values))[index]  # IndexError and TypeError as a list raises them
        return self._read(j)

    def __iter__(self):
        for j in range(len(self._values)):
            yield self._read(j)

    @property
    def most_alive(self) -> int:
        return self._counter.most

    @property
    def stale(self) -> int:
        return self._counter.stale_most

    @property
    def reads(self) -> int:
        return self._counter.reads


def deep_size(value, seen=None) -> int:
    """Bytes of ``value`` and of the lists, tuples, dicts and numbers inside it."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    size = sys.getsizeof(value)
    if isinstance(value, (list, tuple, set)):
        size += sum(deep_size(v, seen) for v in value)
    elif isinstance(value, dict):
        size += sum(deep_size(k, seen) + deep_size(v, seen) for k, v in value.items())
    return size


@dataclass
class Run:
    """What :func:`measure` saw: the call's ``result``, and ``held`` bytes (the peak
    allocated during the call, less the result's own size)."""

    result: object
    held: int
    peak: int = 0
    streams: list = field(default_factory=list)


#: Floats CPython's free list keeps for reuse (Py_floats_MAXFREELIST, 3.11 to 3.14): at most
#: so many of the floats a call makes come from it, untraced, once it is full.
FREE_FLOATS = 100


def _fill_free_lists() -> None:
    """Make and drop enough floats, tuples, lists and dicts to fill the interpreter's free
    lists (CPython keeps up to :data:`FREE_FLOATS` floats, 2,000 tuples of each length up
    to 20, 80 lists and 80 dicts for reuse). From there a call starts from the same state
    whatever ran before: what it makes first comes from full free lists, and what it frees
    beyond them is given back. (Emptied instead, they would keep every object the call
    frees as traced memory, so that a call's peak added up each kind's largest count at
    different moments: a tiled pass written with many short lists failed its budget.)
    Cyclic garbage left by earlier code is collected first, so that no collection during
    the call gives its objects back to the lists."""
    gc.collect()
    keep = [(float(i) + 0.5, [], {}) for i in range(200)]
    keep += [tuple(range(size)) for size in range(1, 21) for _ in range(2_100)]
    del keep


def measure(fn, *args, **kwargs) -> Run:
    """Call ``fn(*args, **kwargs)`` under tracemalloc, the free lists filled first
    (:func:`_fill_free_lists`) so that the same code holds the same bytes each run;
    a :class:`Run`. The learner's exceptions pass through (call it inside ``given``)."""
    _fill_free_lists()
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        result = fn(*args, **kwargs)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        if started:
            tracemalloc.stop()
    return Run(result, max(0, peak - deep_size(result)), peak,
               [a for a in [*args, *kwargs.values()] if isinstance(a, Stream)])


def size(n: int) -> str:
    """Bytes as a learner reads them: "9.0 KB", "2.1 MB" (the language's decimal mark)."""
    if n >= 1024 * 1024:
        return _("{n} MB").format(n=short(round(n / (1024 * 1024), 1)))
    if n >= 1024:
        return _("{n} KB").format(n=short(round(n / 1024, 1)))
    return _("{n} bytes").format(n=group(n))


@dataclass
class Budget:
    """What a correct answer may hold, from the step's tiles.

    ``values``: tracked values alive at once; ``bytes``: memory held;
    ``tile_bytes``: one tile's worth (for the messages); ``tiles``: the tile sizes
    in the learner's terms ("block = 64", "N = 512, B_r = 8, B_c = 8");
    ``holds``: what a correct pass holds ("an online softmax holds one block");
    ``what``: the tracked values' name ("scores", "rows of K").
    """

    values: int
    bytes: int
    tile_bytes: int
    tiles: str
    holds: str
    what: str

    @classmethod
    def tiles_of(cls, tile_values: int, tiles: str, holds: str, what: str, alive: int | None = None,
                 value_bytes: int = VALUE_BYTES, extra: int = 0) -> Budget:
        """A budget of :data:`SLACK` tiles of ``tile_values`` numbers, each ``value_bytes``
        (a tracked score's :attr:`Stream.value_bytes`, or a plain float's), plus ``extra``
        bytes (state the size of the output, where a loop order keeps it); and
        ``alive`` tracked values at once (default: three tiles' worth: the tile, the
        next one, read before the last is let go, and a list the code builds of one)."""
        one = tile_values * value_bytes
        alive = 3 * tile_values if alive is None else alive
        return cls(values=alive, bytes=SLACK * one + extra, tile_bytes=one, tiles=tiles, holds=holds, what=what)


def _shape(held: int, shapes) -> str | None:
    """The largest of ``shapes`` ([(label, numbers)]) of which the code held three
    quarters at least (a strip may be held as scores and exponents, or in part)."""
    fits = [(n, label) for label, n in shapes if 4 * held >= 3 * n * VALUE_BYTES]
    return max(fits)[1] if fits else None


def hold_to(run: Run, desc: str, budget: Budget, shapes=(), order: bool = True) -> None:
    """Raise a Failure unless ``run`` held no more than ``budget``: tracked values
    alive at once, tiles read in order (no second pass; ``order=False`` where another
    test already counts the reads), memory held. ``shapes``: [(label, numbers)] the
    message may name ("a B_r × N strip of scores", B_r·N)."""
    for stream in run.streams:
        if stream.most_alive > budget.values:
            did = _("your code held {count} {what} at once ({tiles})").format(
                count=group(stream.most_alive), what=budget.what, tiles=budget.tiles)
            raise Failure(_("{input}: {did}: {holds}").format(input=desc, did=did, holds=budget.holds),
                          input=desc, expected=_("{what} held at once: {count} at most").format(
                              what=budget.what, count=group(budget.values)),
                          got=_("{what} held at once: {count}").format(what=budget.what,
                                                                         count=group(stream.most_alive)))
        if order and stream.went_back is not None:
            tile, furthest = stream.went_back
            did = _("your code went back to tile {tile} of the {what} after it had reached tile {furthest}: "
                    "that is a second pass").format(tile=group(tile), furthest=group(furthest), what=budget.what)
            raise Failure(_("{input}: {did}; {holds}, each tile once").format(input=desc, did=did,
                                                                              holds=budget.holds),
                          input=desc, expected=_("one pass over the tiles"), got=_("a second pass"))
        if order and stream.stale > stream.block:
            did = _("your code used {count} {what} of tiles it had already left: a second pass over values "
                    "it kept").format(count=group(stream.stale), what=budget.what)
            raise Failure(_("{input}: {did}; {holds}").format(input=desc, did=did, holds=budget.holds),
                          input=desc, expected=_("one pass over the tiles"), got=_("a second pass"))
    if run.held > budget.bytes:
        shape = _shape(run.held, shapes)
        if shape:
            did = _("your code held {held} ({tiles}): that is {shape}").format(
                held=size(run.held), tiles=budget.tiles, shape=shape)
        else:
            did = _("your code held {held} ({tiles}), more than {budget}").format(
                held=size(run.held), tiles=budget.tiles, budget=size(budget.bytes))
        raise Failure(_("{input}: {did}; a tile needs about {tile}: {holds}").format(
                          input=desc, did=did, tile=size(budget.tile_bytes), holds=budget.holds),
                      input=desc, expected=_("memory held: {budget} at most").format(budget=size(budget.bytes)),
                      got=_("memory held: {held}").format(held=size(run.held)))
