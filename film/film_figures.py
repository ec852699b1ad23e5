"""Every number the film says or draws, computed here and nowhere else.

The captions in ``site/content/film.toml`` are templates; they may only name
values from the dict :func:`figures` returns. Traffic figures come from the
emulator (``emulator.traffic.count``), model figures from ``facts/facts.json``,
and the rest (the hand-worked online softmax, the fp16 limits) are computed
below from their definitions, so no caption carries a hand-typed figure.
"""
from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from typing import Any

import i18n
from emulator import traffic  # the one byte counter (emulator/traffic.py)
from emulator.tiling import lesson_blocks

BYTES_PER_FLOAT32 = 4
MIB = 1 << 20


class FilmError(ValueError):
    """Raised when the film's script or figures are invalid; the message says
    which cue or figure, and what is wrong, so the build can stop on it."""


def group(n: int) -> str:
    """Format an integer with thousands separators: 4096 -> '4,096'."""
    return f"{int(n):,}"


_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]


def word(n: int) -> str:
    """Small counts as words for captions (4 -> 'four'); 11 and up stay digits."""
    return _WORDS[n] if 0 <= n < len(_WORDS) else group(n)


def fixed(x: float, places: int) -> str:
    """Format a float with a fixed number of decimals: (1.5529, 3) -> '1.553'."""
    return f"{x:.{places}f}"


def mib(nbytes: int) -> str:
    """Bytes as mebibytes (2**20 B), one decimal unless whole: 285736960 -> '272.5'."""
    value = nbytes / MIB
    return group(round(value)) if abs(value - round(value)) < 0.05 else f"{value:,.1f}"


_SUPERSCRIPT = str.maketrans("-0123456789.", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹·")


def sup(x: float) -> str:
    """A small integer or decimal written as superscript, for e^x in captions: -3 -> '⁻³'."""
    text = f"{x:g}"
    return text.translate(_SUPERSCRIPT)


class Writer:
    """Numbers written by one language's rules (Babel, through :func:`i18n.numbers`).

    lang: BCP 47 tag ("en", "pt-BR"); words: that language's small counts as
    words, zero to ten (film.toml ``[numbers] words``, laid over per language);
    without them, the English words. Every method returns a str; in English
    each gives exactly what the module-level helpers above give.
    """

    def __init__(self, lang: str | None = None, words: list[str] | None = None):
        self.lang = lang or i18n.default().code
        self.nf = i18n.numbers(self.lang)
        self.words = list(words) if words else list(_WORDS)
        # Python's own rounding (of the binary value, as f"{x:.3f}" does), then
        # the locale's symbols from Babel (CLDR): every language shows the same
        # digits, and English stays exactly as the helpers above write it.
        # (Babel rounds str(x) half-even, which can differ on a printed tie.)
        self._marks = str.maketrans({",": self.nf.group_symbol, ".": self.nf.decimal_symbol})

    def _local(self, text: str) -> str:
        return text.translate(self._marks)

    def group(self, n: int) -> str:
        """4096 -> '4,096' / '4.096'."""
        return self.nf.group(int(n))

    def word(self, n: int) -> str:
        """Small counts as this language's words (4 -> 'four' / 'quatro'); the rest as digits."""
        return self.words[n] if 0 <= n < len(self.words) else self.group(n)

    def fixed(self, x: float, places: int) -> str:
        """(1.5529, 3) -> '1.553' / '1,553' (no thousands separator, like ``f"{x:.3f}"``)."""
        return self._local(fixed(x, places))

    def short(self, x: float) -> str:
        """``:g`` with the language's decimal mark: 16.5 -> '16.5' / '16,5'."""
        return self.nf.short(x)

    def mib(self, nbytes: int) -> str:
        """Bytes as MiB, one decimal unless whole: 285736960 -> '272.5' / '272,5'."""
        return self._local(mib(nbytes))

    def shares(self, row: list[float], places: int = 2) -> list[str]:
        """:func:`shares` written in this language: ['0.09', ...] / ['0,09', ...]."""
        return [self.fixed(float(v), places) for v in shares(row, places)]

    def times_ten(self, x: float) -> str:
        """3.99673e-07 -> '4.0 × 10⁻⁷' / '4,0 × 10⁻⁷'."""
        mantissa, exponent = f"{x:.1e}".split("e")
        return f"{self.fixed(float(mantissa), 1)} × 10{sup(int(exponent))}"

    def join(self, values: list[float]) -> str:
        """A short list of numbers for a caption: '1, 2, 3, 0' (the decimal mark
        of a comma language is never the separator's: '0,5; 1')."""
        sep = "; " if self.nf.decimal_symbol == "," and any(v != int(v) for v in values) else ", "
        return sep.join(self.short(v) for v in values)


def _traffic(counts: Mapping[str, Any] | None, key: str, n: int, d: int, workgroup_bytes: int) -> dict:
    """Plain and fused traffic for one head (bytes), from build.py's ``counts``
    when it has ``key``, else from ``emulator.traffic.count`` directly.

    Returns {'plain': int bytes, 'fused': int bytes, 'plain_reads': {tensor: bytes}, ...}.
    """
    out: dict[str, Any] = {}
    entry = (counts or {}).get(key) if counts else None
    for kernel in ("plain", "fused"):
        if entry and kernel in entry:
            k = entry[kernel]
            total = k["total_bytes"] if isinstance(k, Mapping) else k.total_bytes
            reads = dict(k["reads"] if isinstance(k, Mapping) else k.reads)
            writes = dict(k["writes"] if isinstance(k, Mapping) else k.writes)
        else:
            t = traffic.count(kernel, n, d, causal=False, workgroup_bytes=workgroup_bytes)
            total, reads, writes = t.total_bytes, dict(t.reads), dict(t.writes)
        out[kernel] = int(total)
        out[f"{kernel}_reads"] = {k2: int(v) for k2, v in reads.items()}
        out[f"{kernel}_writes"] = {k2: int(v) for k2, v in writes.items()}
    return out


def _tiling(d: int, workgroup_bytes: int) -> tuple[int, int]:
    """(B_r, B_c) of the lesson tiling (emulator/tiling.py lesson_blocks: the
    query tile gets half of workgroup memory, K and V share the other half)."""
    b_r, b_c = lesson_blocks(d, workgroup_bytes)
    return int(b_r), int(b_c)


def online_softmax_example(scores: list[float], tile: int) -> dict:
    """Work the online softmax by hand on one row of scores, in tiles of ``tile``.

    Returns m (running max) and l (running sum of e^(s - m)) after each tile,
    the value l shrank to when a larger score arrived, the full-row denominator
    sum(e^s) and the same row computed without the rescale (the forgotten step).
    Source: Milakov & Gimelshein 2018 (arXiv:1805.02867), Algorithm 3.
    """
    m = -math.inf
    l = 0.0
    steps = []
    for start in range(0, len(scores), tile):
        chunk = scores[start:start + tile]
        m_new = max([m] + chunk)
        shrink = math.exp(m - m_new) if m != -math.inf else 0.0
        l_shrunk = l * shrink
        terms = [math.exp(s - m_new) for s in chunk]
        acc = l_shrunk
        for t in terms:  # explicit loop in the kernel's order, never sum() on floats
            acc += t
        steps.append({"chunk": chunk, "m_before": m, "m": m_new, "l_shrunk": l_shrunk, "l": acc,
                      "exponents": [s - m_new for s in chunk]})
        m, l = m_new, acc
    full = math.fsum(math.exp(s) for s in scores)
    # The broken kernel never shrinks l: each new tile's terms use the new m,
    # the old terms keep the old m.
    broken = 0.0
    m_run = -math.inf
    for start in range(0, len(scores), tile):
        chunk = scores[start:start + tile]
        m_run = max([m_run] + chunk)
        for s in chunk:
            broken += math.exp(s - m_run)
    return {"steps": steps, "m": m, "l": l, "full": full, "l_from_full": full * math.exp(-m),
            "broken_l": broken}


def shares(row: list[float], places: int = 2) -> list[str]:
    """Softmax of one row of scores, as decimals with ``places`` digits that
    add up to exactly one on screen (largest-remainder rounding: each share is
    rounded down, then the units left go to the largest remainders).

    row: scores (floats). Returns display strings, e.g. [1, 2, 3, 0] ->
    ['0.09', '0.24', '0.64', '0.03']. Source: softmax, P = exp(S - max) / sum.
    """
    top = max(row)
    ex = [math.exp(x - top) for x in row]
    total = math.fsum(ex)
    unit = 10 ** places
    exact = [e / total * unit for e in ex]
    floors = [math.floor(x) for x in exact]
    left = unit - int(math.fsum(floors))
    order = sorted(range(len(row)), key=lambda i: exact[i] - floors[i], reverse=True)
    for i in order[:left]:
        floors[i] += 1
    return [f"{v / unit:.{places}f}" for v in floors]


def times_ten(x: float) -> str:
    """A small float in scientific notation for the screen, two significant
    digits: 3.99673e-07 -> '4.0 × 10⁻⁷'."""
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa} × 10{sup(int(exponent))}"


def fp16_limits() -> dict:
    """fp16 (IEEE 754 binary16) limits, computed from the bit pattern.

    max_finite: 0x7BFF = 65,504. Round-to-nearest sends any value at or above
    max_finite + half an ulp (ulp = 32 at that exponent), i.e. 65,520, to +inf,
    so e^x overflows once x >= ln(65,520).
    """
    max_finite = struct.unpack("<e", struct.pack("<H", 0x7BFF))[0]
    below = struct.unpack("<e", struct.pack("<H", 0x7BFE))[0]
    edge = max_finite + (max_finite - below) / 2
    return {"max": max_finite, "edge": edge, "ln_edge": math.log(edge)}


def figures(counts: Mapping[str, Any] | None, facts: Mapping[str, Any] | None, example: Mapping[str, Any],
            n: int, d_small: int, d_large: int, workgroup_bytes: int,
            lang: str | None = None, words: list[str] | None = None) -> dict:
    """All values the captions and the drawings may use, in language ``lang``.

    ``n``, ``d_small`` and ``d_large`` are the film's sizes (film.toml ``[numbers]``),
    ``workgroup_bytes`` the lesson's M (the manifest's ``workgroup_bytes_default``).

    Raw numbers (ints/floats) sit next to their display strings, so the scenes
    draw from the same values the captions say; the display strings follow
    ``lang``'s rules (Babel: 285,736,960 / 285.736.960), small counts are
    ``words`` (zero to ten, that language's). Keys: N, M, table, cross,
    d16, d64 (each: d, plain/fused bytes and MiB, ratio, B_r, B_c, q_tiles),
    ex (online softmax by hand), fp16, model (from facts.json, may be empty).
    Raises FilmError if the worked example disagrees with itself.
    """
    w = Writer(lang, words)
    group, word, fixed, mib = w.group, w.word, w.fixed, w.mib  # noqa: F811 (this language's)
    table_bytes = n * n * BYTES_PER_FLOAT32  # one head's S, float32
    out: dict[str, Any] = {
        "N": group(n), "N_raw": n,
        "M": group(workgroup_bytes), "M_raw": workgroup_bytes, "float_bytes": BYTES_PER_FLOAT32,
        "table": {"bytes": group(table_bytes), "mib": mib(table_bytes), "raw": table_bytes},
        # S written, S read, P written, P read (the plain kernel's three passes)
        "cross": {"times": word(4), "times_raw": 4, "mib": mib(4 * table_bytes), "raw": 4 * table_bytes},
    }
    for d in (d_small, d_large):
        key = f"n{n}_d{d}"
        t = _traffic(counts, key, n, d, workgroup_bytes)
        b_r, b_c = _tiling(d, workgroup_bytes)
        ratio = t["plain"] / t["fused"]
        out[f"d{d}"] = {
            "d": d, "plain_raw": t["plain"], "fused_raw": t["fused"],
            "plain_bytes": group(t["plain"]), "fused_bytes": group(t["fused"]),
            "plain_mib": mib(t["plain"]), "fused_mib": mib(t["fused"]),
            "ratio_raw": ratio, "ratio": fixed(ratio, 1), "ratio2": fixed(ratio, 2),
            "B_r": b_r, "B_c": b_c, "q_tiles": -(-n // b_r),
            # one N x d float32 tensor (Q, K, V or O), the unit the question's hint counts in
            "tensor_bytes": group(n * d * BYTES_PER_FLOAT32), "tensor_kib": group(n * d * BYTES_PER_FLOAT32 // 1024),
            "kv_bytes_fused": group(t["fused_reads"].get("K", 0) + t["fused_reads"].get("V", 0)),
            "kv_mib_fused": mib(t["fused_reads"].get("K", 0) + t["fused_reads"].get("V", 0)),
            "reads": {"plain": t["plain_reads"], "fused": t["fused_reads"]},
            "writes": {"plain": t["plain_writes"], "fused": t["fused_writes"]},
        }
    scores = [float(s) for s in example["scores"]]
    tile = int(example["tile"])
    ex = online_softmax_example(scores, tile)
    first, second = ex["steps"][0], ex["steps"][1]
    sorted_scores = sorted(scores, reverse=True)
    ex_sorted = online_softmax_example(sorted_scores, tile)
    out["ex"] = {
        "scores": w.join(scores), "scores_raw": scores, "tile": word(tile), "tile_raw": tile,
        "tiles": word(len(ex["steps"])),
        "tile1": w.join(first["chunk"]),
        "tile2": w.join(second["chunk"]),
        "m1": w.short(first['m']), "l1": fixed(first["l"], 3),
        "l1_terms": " + ".join(f"e{sup(x)}" for x in first["exponents"]),
        "m": w.short(ex['m']), "l": fixed(ex["l"], 3), "l_raw": ex["l"],
        "shrink": f"e{sup(first['m'] - second['m'])}", "l_shrunk": fixed(second["l_shrunk"], 3),
        "shrink_value": fixed(math.exp(first["m"] - second["m"]), 3),
        "l2_terms": " + ".join(f"e{sup(x)}" for x in second["exponents"]),
        "full": fixed(ex["full"], 2), "e_minus_m": f"e{sup(-ex['m'])}",
        "l_from_full": fixed(ex["l_from_full"], 3),
        "broken_l": fixed(ex["broken_l"], 3), "broken_l_raw": ex["broken_l"],
        "sorted": w.join(sorted_scores),
        "sorted_broken_l": fixed(ex_sorted["broken_l"], 3),
        "steps": [{"chunk": s["chunk"], "m": s["m"], "l": s["l"], "l_shrunk": s["l_shrunk"]} for s in ex["steps"]],
    }
    table = [[float(x) for x in r] for r in example.get("table", [scores])]
    out["ex"]["table"] = {"words": list(example.get("words", [])), "S": [[w.short(x) for x in r] for r in table],
                          "P": [w.shares(r) for r in table]}
    if fixed(ex["l"], 3) != fixed(ex["l_from_full"], 3):
        raise FilmError(f"online softmax example disagrees: l={ex['l']} but full*e^-m={ex['l_from_full']}")
    if fixed(ex_sorted["broken_l"], 6) != fixed(ex_sorted["l"], 6):
        raise FilmError("broken rescale should match when the largest score comes first")
    lim = fp16_limits()
    out["fp16"] = {"max": group(int(lim["max"])), "edge": group(int(lim["edge"])),
                   "ln_edge": fixed(lim["ln_edge"], 2), "max_raw": lim["max"], "ln_edge_raw": lim["ln_edge"]}
    out["model"] = model_facts(facts or {}, w)
    return out


def _dig(obj: Any, *paths: str) -> Any:
    """First value found at any dotted path in obj, else None."""
    for path in paths:
        cur = obj
        for part in path.split("."):
            if isinstance(cur, Mapping) and part in cur:
                cur = cur[part]
            else:
                cur = None
                break
        if cur is not None:
            return cur
    return None


def model_facts(facts: Mapping[str, Any], writer: Writer | None = None) -> dict:
    """The model's own numbers from facts/facts.json, as display strings.

    Only keys present in facts.json appear; captions test for them with
    ``is defined`` and say less when they are missing. Never typed here.
    Keys: name, license, heads, layers; row_max (largest score in the probe
    sentence's last row), row_max_overflows (bool); heldout_max,
    overflow_count, score_count; broken_failed, checked_heads,
    broken_passed (heads where the largest score always came first),
    fused_passed; grid (one row per layer of checker results) with
    grid_layers (those layers' numbers as facts.json keys them, 0-based);
    lab_layer (the layer whose Q, K, V the lab loads). ``writer`` writes the
    numbers in its language (default: English).
    """
    w = writer or Writer()
    group, fixed, times_ten = w.group, w.fixed, w.times_ten  # noqa: F811 (this language's)
    out: dict[str, Any] = {}
    for key, path in (("name", "model.model"), ("license", "model.model_license"),
                      ("architecture", "model.architecture"), ("package", "model.package"),
                      ("package_version", "model.package_version"),
                      ("weights_sha256", "model.weights_sha256")):
        v = _dig(facts, path)
        if isinstance(v, str):
            out[key] = v
    for key, path in (("heads", "model.heads"), ("layers", "model.layers"), ("head_dim", "model.head_dim")):
        v = _dig(facts, path)
        if isinstance(v, int):
            out[key] = v
    lab_layer = _dig(facts, "lab.layer")
    if isinstance(lab_layer, int):
        out["lab_layer"] = lab_layer
    row = _dig(facts, "overflow.probe_last_row")
    if isinstance(row, Mapping) and isinstance(row.get("largest_score"), (int, float)):
        out["row_max"] = fixed(row["largest_score"], 2)
        out["row_max_raw"] = float(row["largest_score"])
        out["row_max_overflows"] = bool(row.get("overflows_fp16", False))
    held = _dig(facts, "overflow.held_out.all_layers")
    held_keys = ("largest_score", "overflowing", "scores")
    if isinstance(held, Mapping) and all(isinstance(held.get(k), (int, float)) for k in held_keys):
        out["heldout_max"] = fixed(held["largest_score"], 2)
        out["heldout_max_raw"] = float(held["largest_score"])
        out["overflow_count"] = group(held["overflowing"])
        out["score_count"] = group(held["scores"])
    tot = _dig(facts, "check.totals")
    tot_keys = ("broken_failed", "heads", "fused_passed")
    if isinstance(tot, Mapping) and all(isinstance(tot.get(k), int) for k in tot_keys):
        out["broken_failed"] = tot["broken_failed"]
        out["checked_heads"] = tot["heads"]
        out["broken_passed"] = tot["heads"] - tot["broken_failed"]
        out["fused_passed"] = tot["fused_passed"]
        if isinstance(tot.get("broken_should_fail"), int):
            out["broken_should_fail"] = tot["broken_should_fail"]
    worst = _dig(facts, "check.worst_max_abs_error")
    if isinstance(worst, Mapping) and all(isinstance(worst.get(k), (int, float)) for k in ("fused", "plain")):
        out["worst_fused"] = times_ten(worst["fused"])
        out["worst_plain"] = times_ten(worst["plain"])
    layers = _dig(facts, "check.layers")
    if isinstance(layers, Mapping) and layers:
        # Layers keep facts.json's own 0-based numbers ("layer 0" is the
        # lab's input layer, facts.json lab.layer), never renumbered from 1.
        grid = []
        out["grid_layers"] = sorted(int(k) for k in layers)
        for key in sorted(layers, key=lambda k: int(k)):
            row = []
            for h in layers[key].get("heads", []):
                broken = h.get("fused-no-rescale", {})
                row.append({"broken_passed": bool(broken.get("passed")),
                            "max_late": h.get("first_row_with_max_after_first_tile") is not None})
            grid.append(row)
        out["grid"] = grid
    return out
