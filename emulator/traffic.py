"""Bytes each kernel moves to and from global memory (HBM, "the warehouse").

The counts come from walking each kernel's load and store schedule, one query
tile at a time; :func:`closed_form` gives the same totals from a formula, and a
test holds the two equal (ragged N and causal included).

Schedules, per query tile of r ≤ B_r rows that streams ``kv`` keys past it
(kv = N for full attention; for causal, the key tiles up to the diagonal):

plain (three passes, each its own dispatch)
  1. scores:  read Q r·d, read K kv·d,           write S r·kv
  2. softmax: read S r·kv,                       write P r·kv
  3. P·V:     read P r·kv, read V kv·d,          write O r·d
fused and fused-no-rescale (one pass; FlashAttention Algorithm 1, FA2 §3.1)
              read Q r·d, read K kv·d, read V kv·d, write O r·d

Every element is a float32, 4 bytes. One head. Q stays on the bench (workgroup
memory) while the K and V tiles stream past it, so K and V are fetched once per
query tile: that is why a larger B_r (smaller d, or larger M) saves traffic.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .tiling import BYTES, Tiling, make_tiling, M_DEFAULT

TENSORS = ("Q", "K", "V", "S", "P", "O")


@dataclass
class Traffic:
    """Global-memory traffic of one kernel on one head.

    reads, writes: bytes per tensor name in TENSORS (int).
    steps: the schedule of one full query tile, for display:
      [{"pass": str, "reads": {...}, "writes": {...}}] in elements.
    """

    tiling: Tiling
    reads: dict = field(default_factory=lambda: dict.fromkeys(TENSORS, 0))
    writes: dict = field(default_factory=lambda: dict.fromkeys(TENSORS, 0))

    @property
    def total_bytes(self) -> int:
        """All bytes read plus all bytes written (int)."""
        total = 0
        for name in TENSORS:
            total += self.reads[name] + self.writes[name]
        return total

    def as_dict(self) -> dict:
        t = self.tiling
        return {
            "kernel": t.kernel, "n": t.n, "d": t.d, "causal": t.causal,
            "workgroup_bytes": t.workgroup_bytes,
            "block_rows": t.block_rows, "block_cols": t.block_cols,
            "query_tiles": t.query_tiles, "key_tiles": t.key_tiles,
            "reads": dict(self.reads), "writes": dict(self.writes),
            "total_bytes": self.total_bytes,
            "total_mib": self.total_bytes / 2**20,
        }


def _schedule(kernel: str, r: int, kv: int, d: int):
    """One query tile's (pass, tensor, 'read'|'write', elements) steps."""
    if kernel == "plain":
        return (
            ("scores", "Q", "read", r * d), ("scores", "K", "read", kv * d), ("scores", "S", "write", r * kv),
            ("softmax", "S", "read", r * kv), ("softmax", "P", "write", r * kv),
            ("pv", "P", "read", r * kv), ("pv", "V", "read", kv * d), ("pv", "O", "write", r * d),
        )
    return (
        ("fused", "Q", "read", r * d), ("fused", "K", "read", kv * d),
        ("fused", "V", "read", kv * d), ("fused", "O", "write", r * d),
    )


def walk(tiling: Tiling) -> Traffic:
    """Count traffic by walking the schedule over every query tile.

    Each query tile's row of key tiles is summed at once (``keys_visited``),
    so the walk costs O(T_r) steps, well under a second at N = 65,536.
    """
    traffic = Traffic(tiling)
    for i in range(tiling.query_tiles):
        start, stop = tiling.query_tile_rows(i)
        kv = tiling.keys_visited(stop)
        for _pass, tensor, kind, elements in _schedule(tiling.kernel, stop - start, kv, tiling.d):
            (traffic.reads if kind == "read" else traffic.writes)[tensor] += elements * BYTES
    return traffic


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


def closed_form(tiling: Tiling) -> int:
    """Total bytes from a formula (for testing :func:`walk`).

    With T = T_r, R = B_r and B_c dividing R, the keys visited summed over
    query tiles are  ΣKV = T·N (full) or R·T(T−1)/2 + N (causal), and the
    score elements are  ΣS = N² (full) or R²·T(T−1)/2 + (N − (T−1)R)·N (causal).
      fused = 4·(2·N·d + 2·d·ΣKV)
      plain = 4·(2·N·d + 2·d·ΣKV + 4·ΣS)
    """
    n, d, t, r = tiling.n, tiling.d, tiling.query_tiles, tiling.block_rows
    if tiling.causal:
        sum_kv = r * t * (t - 1) // 2 + n
        sum_s = r * r * t * (t - 1) // 2 + (n - (t - 1) * r) * n
    else:
        sum_kv = t * n
        sum_s = n * n
    elements = 2 * n * d + 2 * d * sum_kv
    if tiling.kernel == "plain":
        elements += 4 * sum_s
    return BYTES * elements


def one_tile_schedule(tiling: Tiling) -> list[dict]:
    """The first query tile's steps in elements, for the page's schedule table."""
    start, stop = tiling.query_tile_rows(0)
    kv = tiling.keys_visited(stop)
    return [
        {"pass": p, "tensor": t, "kind": k, "elements": e, "bytes": e * BYTES}
        for p, t, k, e in _schedule(tiling.kernel, stop - start, kv, tiling.d)
    ]
