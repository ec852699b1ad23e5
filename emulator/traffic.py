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
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cache

from .tiling import M_DEFAULT, MANIFEST, TENSOR_ORDER, Tiling, dtype_of, element_bytes, make_tiling

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


def _steps(tiling: Tiling, walk: str):
    """The variables of each step of ``walk``: one dict per query tile, per
    key tile, or once for the whole head."""
    n, d = tiling.n, tiling.d
    if walk == "once":
        yield {"n": n, "d": d}
    elif walk == "query_tiles":
        for i in range(tiling.query_tiles):
            start, stop = tiling.query_tile_rows(i)
            yield {"r": stop - start, "kv": tiling.keys_visited(stop), "n": n, "d": d}
    else:
        for j in range(tiling.key_tiles):
            start, stop = tiling.key_tile_rows(j)
            yield {"c": stop - start, "qv": tiling.queries_visiting(start), "n": n, "d": d}


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
    """Count traffic by walking each pass the manifest declares for the kernel.

    A pass walks its query tiles (r rows, kv keys visited), its key tiles
    (c rows, qv query rows that see it) or runs once; at each step every
    tensor formula gives elements read or written, times the kernel's bytes per
    element (4 for float32, 2 for float16: :func:`emulator.tiling.element_bytes`). A query
    tile's row of key tiles is summed at once (``keys_visited``), so the walk
    costs O(T_r + T_c) steps, well under a second at N = 65,536.
    """
    entry = MANIFEST["kernels"][tiling.kernel]
    names = tensors_of(entry.get("direction", "forward"))
    traffic = Traffic(tiling, dict.fromkeys(names, 0), dict.fromkeys(names, 0))
    size = element_bytes(tiling.kernel)
    for spec in entry["passes"]:
        moved = 0
        compiled = [(kind, tensor, _formula(text, spec["walk"]))
                    for kind in ("reads", "writes") for tensor, text in spec[kind].items()]
        for env in _steps(tiling, spec["walk"]):
            for kind, tensor, code in compiled:
                b = eval(code, {"__builtins__": {}}, env) * size  # noqa: S307 (checked by _formula)
                getattr(traffic, kind)[tensor] += b
                moved += b
        traffic.per_pass[spec["name"]] = moved
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
    for kind in ("reads", "writes"):
        for tensor, text in spec[kind].items():
            code = _formula(text, spec["walk"])
            for env in _steps(tiling, spec["walk"]):
                out[kind][tensor] += eval(code, {"__builtins__": {}}, env)  # noqa: S307 (checked by _formula)
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
    """Each pass's first step (its first query or key tile) in elements, for
    the page's schedule table: [{"pass", "tensor", "kind", "elements", "bytes"}]."""
    rows = []
    size = element_bytes(tiling.kernel)
    for spec in passes(tiling.kernel):
        env = next(_steps(tiling, spec["walk"]))
        for kind, label in (("reads", "read"), ("writes", "write")):
            for tensor, text in spec[kind].items():
                e = eval(_formula(text, spec["walk"]), {"__builtins__": {}}, env)  # noqa: S307
                rows.append({"pass": spec["name"], "tensor": tensor, "kind": label,
                             "elements": e, "bytes": e * size})
    return rows
