"""Tile sizes and input rules for every kernel, read from kernels_wgsl/manifest.json.

This module is the single source of the lab's input rules: the page's worker
calls :func:`parse_request`, and the page only displays the messages it returns.

The lesson tiling (FlashAttention, arXiv:2205.14135, Algorithm 1 with the
block sizes of §3.1 adapted to one workgroup):

* the workgroup memory ("the bench", SRAM) holds ``M`` bytes, default 16,384
  (the WebGPU default ``maxComputeWorkgroupStorageSize``, WebGPU §3.6.2 limits);
* half of it holds the query tile, ``B_r`` float32 rows of ``d`` numbers:
  ``B_r = (M/2) / (4·d)``;
* the other half holds one key tile and one value tile of ``B_c`` rows each:
  ``B_c = ⌊(M/2) / (2·4·d)⌋``, and ``B_r = 2·B_c``. This equals (M/2)/(4d)
  whenever that divides evenly (every power-of-two M), and keeps each query
  tile a whole number of key tiles, so causal skipping stays on tile edges.

So at M = 16,384: d=16 gives B_r=128, B_c=64; d=64 gives B_r=32, B_c=16.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

from .i18n import _, group
from .parse_number import _shown, parse_number

_HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST_PATH = os.path.join(os.path.dirname(_HERE), "kernels_wgsl", "manifest.json")


def load_manifest(path: str | None = None) -> dict:
    """Read the kernel manifest (JSON) shared with the WebGPU loader.

    Raises FileNotFoundError if the manifest is missing.
    """
    with open(path or MANIFEST_PATH, encoding="utf-8") as f:
        return json.load(f)


MANIFEST = load_manifest()
LESSON = MANIFEST["lesson"]
BYTES = int(MANIFEST["bytes_per_element"])  # float32: 4 bytes per element
# The element types a kernel may declare (manifest "dtypes"): bytes each, and the WebGPU
# feature a device needs for them ("shader-f16" for float16; None for float32).
DTYPES = {name: spec for name, spec in MANIFEST.get("dtypes", {}).items() if name != "comment"}
HEAD_DIMS = tuple(int(x) for x in MANIFEST["head_dims"])
KERNELS = tuple(MANIFEST["kernels"].keys())
# The kernels the lesson's Count and Check show, in manifest order ("lesson": true).
LESSON_KERNELS = tuple(k for k, e in MANIFEST["kernels"].items() if e.get("lesson"))
# Every tensor name a kernel may declare, in display order (manifest "tensors").
TENSOR_ORDER = tuple(MANIFEST["tensors"]["order"])
M_DEFAULT = int(LESSON["workgroup_bytes_default"])
M_MIN = int(LESSON["workgroup_bytes_min"])
M_MAX = int(LESSON["workgroup_bytes_max"])
MIN_KEY_TILE = int(LESSON["min_key_tile_rows"])
COUNT_MAX_N = int(LESSON["count_max_n"])
CHECK_MAX_N = int(LESSON["check_max_n"])
CHECK_ALL_ROWS_MAX_N = int(LESSON["check_all_rows_max_n"])
SEED_MAX = int(LESSON["seed_max"])  # seeds run from 0 to 2**32 - 1 (emulator.inputs says why not below 0)


class InputError(ValueError):
    """A lab input that breaks a rule; ``field`` names the form control.

    ``field`` is one of "kernel", "n", "d", "workgroup_bytes", "causal", "seed",
    "input"; ``message`` is a sentence a learner can act on.
    """

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Tiling:
    """How one kernel cuts an (N, d) problem into tiles.

    block_rows: B_r, query rows per workgroup (rows of Q and O).
    block_cols: B_c, key/value rows per streamed tile.
    workgroup_bytes: M, bytes of workgroup memory the tiling assumes.
    """

    kernel: str
    n: int
    d: int
    causal: bool
    block_rows: int
    block_cols: int
    workgroup_bytes: int

    @property
    def query_tiles(self) -> int:
        """T_r = ceil(N / B_r)."""
        return -(-self.n // self.block_rows)

    @property
    def key_tiles(self) -> int:
        """T_c = ceil(N / B_c)."""
        return -(-self.n // self.block_cols)

    def query_tile_rows(self, i: int) -> tuple[int, int]:
        """Rows [start, stop) of query tile i (the last one may be ragged)."""
        start = i * self.block_rows
        return start, min(self.n, start + self.block_rows)

    def key_tile_rows(self, j: int) -> tuple[int, int]:
        """Rows [start, stop) of key tile j (the last one may be ragged)."""
        start = j * self.block_cols
        return start, min(self.n, start + self.block_cols)

    def queries_visiting(self, key_start: int) -> int:
        """Query rows whose tiles visit the key tile starting at ``key_start``.

        The transpose of :meth:`keys_visited`: full attention, all N rows;
        causal, the rows of every query tile whose last row reaches the key
        tile, i.e. rows [⌊key_start/B_r⌋·B_r, N). A backward pass that walks
        key tiles (FlashAttention-2 Algorithm 2) streams exactly these.
        """
        if not self.causal:
            return self.n
        return self.n - (key_start // self.block_rows) * self.block_rows

    def keys_visited(self, stop_row: int) -> int:
        """Keys a query tile ending at row ``stop_row`` (exclusive) streams past.

        Full attention: all N keys. Causal: every key tile that starts at or
        before the tile's last row, i.e. keys [0, min(N, ceil(stop/B_c)·B_c));
        the tiles past the diagonal are skipped (FlashAttention-2 §3.1.1).
        """
        if not self.causal:
            return self.n
        tiles = -(-stop_row // self.block_cols)
        return min(self.n, tiles * self.block_cols)


def dtype_of(kernel: str) -> str:
    """The element type of ``kernel``'s tensors: its manifest "dtype", "float32" when it
    declares none. Raises KeyError for a kernel the manifest does not declare."""
    return MANIFEST["kernels"][kernel].get("dtype", "float32")


def element_bytes(kernel: str) -> int:
    """Bytes per element of every tensor ``kernel`` moves (manifest "dtypes"): 4 for
    float32, 2 for float16. Raises KeyError for an unknown kernel or dtype."""
    return int(DTYPES[dtype_of(kernel)]["bytes"])


def _fmt(x: int) -> str:
    return group(x)


def lesson_too_small(d: int, m: str, half: str) -> str:
    """The refusal of an M too small for d's lesson tiles, M and ⌊M/2⌋ given as text
    (written, or the placeholders "{m}" and "{half}" of planner.cold_rules)."""
    row_bytes = BYTES * d
    need = 2 * 2 * row_bytes * MIN_KEY_TILE
    return _("M = {m} B is too small for d = {d}: half of it ({half} B) must hold a key tile "
             "and a value tile of at least {rows} rows of {row_bytes} B each. Use M ≥ {need} B "
             "or a smaller d.").format(m=m, d=d, half=half, rows=MIN_KEY_TILE, row_bytes=_fmt(row_bytes),
                                       need=_fmt(need))


def lesson_blocks(d: int, workgroup_bytes: int) -> tuple[int, int]:
    """(B_r, B_c) of the lesson preset; raises InputError if a tile does not fit."""
    half = workgroup_bytes // 2
    row_bytes = BYTES * d
    block_cols = half // (2 * row_bytes)
    block_rows = 2 * block_cols
    if block_cols < MIN_KEY_TILE:
        raise InputError("workgroup_bytes", lesson_too_small(d, _fmt(workgroup_bytes), _fmt(half)))
    return block_rows, block_cols


def make_tiling(kernel: str, n: int, d: int, causal: bool = False,
                workgroup_bytes: int = M_DEFAULT) -> Tiling:
    """Tiling of ``kernel`` for an (N, d) head, from the manifest.

    Kernels whose manifest entry says ``"tiling": "lesson"`` use
    :func:`lesson_blocks`; others give explicit ``block_rows``/``block_cols``
    per head dimension (keys are d as strings), and ``workgroup_bytes`` is then
    what the kernel declares (manifest "workgroup_bytes"), or else the bytes its
    Q, K and V tiles occupy.

    Raises InputError for an unknown kernel or a tile that does not fit.
    """
    entry = MANIFEST["kernels"].get(kernel)
    if entry is None:
        raise InputError("kernel", _unknown_kernel(kernel))
    rule = entry.get("tiling", "lesson")
    if rule == "lesson":
        br, bc = lesson_blocks(d, workgroup_bytes)
        m = workgroup_bytes
    else:
        br = int(rule["block_rows"][str(d)])
        bc = int(rule["block_cols"][str(d)])
        declared = entry.get("workgroup_bytes", {})
        m = int(declared[str(d)]) if str(d) in declared else element_bytes(kernel) * d * (br + 2 * bc)
        if br % bc:
            raise ValueError(f"manifest: {kernel} at d={d} has B_r={br} not a multiple of B_c={bc}")
    return Tiling(kernel, n, d, bool(causal), br, bc, m)


# ---------------------------------------------------------------------------
# Parsing raw form values: the one place the lab's rules live.



def parse_int(field: str, raw, label: str) -> int:
    """Parse a form value as a whole number, or raise InputError naming ``field``.

    Text goes through :func:`emulator.parse_number.parse_number` (ASCII digits;
    "4,096", "4 096" and "4_096" are 4,096), the one parser of every numeric
    field in the CLI, the worker and, mirrored in JavaScript, the page.
    """
    parsed = parse_number(raw, integer=True, label=label)
    if not parsed.ok:
        raise InputError(field, parsed.message)
    return parsed.value


TRUE_WORDS = tuple(LESSON["true_words"])
FALSE_WORDS = tuple(LESSON["false_words"])


def parse_bool(field: str, raw, label: str) -> bool:
    """Parse a yes/no form value: True, False, None (absent: False), the integers
    1 and 0, or a word of the manifest's lesson ``true_words`` / ``false_words``
    (true, yes, on, 1 / false, no, off, 0), trimmed and in any case.

    Raises InputError naming ``field`` for anything else, so a link with
    ``causal=maybe`` gets a message instead of a silent "not causal".
    """
    if raw is None or isinstance(raw, bool):
        return bool(raw)
    if isinstance(raw, int) and raw in (0, 1):
        return bool(raw)
    text = str(raw).strip().casefold() if isinstance(raw, str) else None
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise InputError(field, _("{label} takes {yes} to turn it on and {no} to turn it off; “{text}” is neither.").format(
        label=label, yes=_either(TRUE_WORDS), no=_either(FALSE_WORDS), text=_shown(str(raw))))


def _either(words) -> str:
    """"a, b or c" in the active language (rules.js writes the same)."""
    if len(words) < 2:
        return words[0]
    return _("{first} or {last}").format(first=", ".join(words[:-1]), last=words[-1])


def _unknown_kernel(kernel: str) -> str:
    return _("Unknown kernel {kernel}; choose one of {names}.").format(kernel=repr(kernel), names=", ".join(KERNELS))


def parse_request(params: dict, purpose: str = "count") -> dict:
    """Validate raw lab inputs; return clean ones or raise InputError.

    params: {"kernel": str, "n": str|int, "d": str|int, "causal": bool|str,
    "workgroup_bytes": str|int, "seed": str|int (check only; 0 to SEED_MAX,
    2**32 - 1: a negative seed is refused, see emulator.inputs)}.
    purpose: "count" (N ≤ 65,536) or "check" (N ≤ the check limit, 8,192).

    Returns {"kernel", "n", "d", "causal", "workgroup_bytes", "seed", "tiling"}.
    All errors are collected; the first is raised with the others attached as
    ``.all`` (a list of InputError).
    """
    errors: list[InputError] = []
    out: dict = {}

    kernel = str(params.get("kernel", "fused"))
    if kernel not in KERNELS:
        errors.append(InputError("kernel", _unknown_kernel(kernel)))
    out["kernel"] = kernel

    limit = CHECK_MAX_N if purpose == "check" else COUNT_MAX_N
    try:
        n = parse_int("n", params.get("n"), _("Sequence length N"))
        if n < 1:
            raise InputError("n", _("Sequence length N must be at least 1; {n} has no rows to attend to.").format(
                n=group(n)))
        if n > limit:
            if purpose == "check":
                raise InputError(
                    "n",
                    _("Check runs every kernel step in Python, so it stops at N = {limit}; N = {n} would take "
                      "too long. Count works up to N = {count_max}.").format(
                        limit=group(limit), n=group(n), count_max=group(COUNT_MAX_N)))
            raise InputError("n", _("Sequence length N must be at most {limit}; {n} is too large to count "
                                    "here.").format(limit=group(limit), n=group(n)))
        out["n"] = n
    except InputError as e:
        errors.append(e)

    try:
        d = parse_int("d", params.get("d"), _("Head dimension d"))
        if d not in HEAD_DIMS:
            raise InputError("d", _("Head dimension d must be one of {dims}; {d} is not.").format(
                dims=", ".join(map(str, HEAD_DIMS)), d=d))
        out["d"] = d
    except InputError as e:
        errors.append(e)

    try:
        m = parse_int("workgroup_bytes", params.get("workgroup_bytes", M_DEFAULT), _("Workgroup memory M"))
        if not (M_MIN <= m <= M_MAX):
            raise InputError(
                "workgroup_bytes",
                _("Workgroup memory M must be from {low} to {high} bytes; {m} is outside.").format(
                    low=group(M_MIN), high=group(M_MAX), m=group(m)))
        out["workgroup_bytes"] = m
    except InputError as e:
        errors.append(e)

    try:
        out["causal"] = parse_bool("causal", params.get("causal", False), _("Causal"))
    except InputError as e:
        errors.append(e)
        out["causal"] = False

    try:
        seed = parse_int("seed", params.get("seed", 0), _("Seed"))
        if not 0 <= seed <= SEED_MAX:
            raise InputError("seed", _("Seed must be a whole number from 0 to {high}; {seed} is outside.").format(
                high=group(SEED_MAX), seed=group(seed)))
        out["seed"] = seed
    except InputError as e:
        errors.append(e)

    if not errors and "d" in out and "workgroup_bytes" in out:
        try:
            out["tiling"] = make_tiling(kernel, out["n"], out["d"], out["causal"], out["workgroup_bytes"])
        except InputError as e:
            errors.append(e)
    if errors:
        first = errors[0]
        first.all = errors
        raise first
    return out
