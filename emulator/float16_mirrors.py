"""float16 arithmetic, and the mirrors of the float16 fused kernels (fused-f16 and
fused-f16-no-max, kernels_wgsl/fused_f16.wgsl), which the manifest's "mirror" keys name.

IEEE 754 binary16 (IEEE 754-2019 §3.6): 11 significant bits, largest finite value
65,504, and round to nearest, ties to even, sends everything from 65,520 up to infinity.
Python has no float16 type, but ``struct``'s "e" format packs a float into binary16 with
exactly that rounding (and raises OverflowError past the edge), so :func:`f16s` rounds
through it: standard library only, the same in CPython and in the page's Pyodide.

A float16 operation is emulated as the float64 operation on float16 inputs, rounded once
to float16. For +, −, × and ÷ that is the correctly rounded float16 result: float64's 53
bits hold every product of two 11-bit significands exactly, every sum of two float16
values exactly, and a quotient rounded twice (53 bits, then 11) is still correctly rounded
(53 ≥ 2·11 + 2). The kernel keeps its scores in base 2 (t = s·log2 e for the score
s = q·k/√d, as fused.wgsl does), so its one exponential is exp2: :func:`exp2_16` is
2.0 ** t (exact in float64 for every float16 t) rounded to float16.

The mirrors follow the kernel's order operation by operation (fused_f16.wgsl's opening
comment): the base-2 score of row i and key j is the float16 sum, c = 0 … d−1 in order,
of the float16 products q_ic·k_jc, times f16(log2(e)/√d); then per key tile the running
max m, the rescale a = 2^(m − m_new) of l and of each accumulator, and per key
p = 2^(t − m), l = l + p, acc_c = acc_c + p·v_jc; at the end o_c = acc_c / l. Without
the max subtraction p = 2^t, which is inf for t ≥ 16 (2^16 = 65,536 is past 65,504; a
score s = t·ln 2 of about ln 65,520 ≈ 11.09 or more): l becomes inf and the row's
outputs NaN (inf/inf) or inf. A row with an inf or NaN output is "lost".

Every mirror is called as emulator.mirrors says; a float16 kernel's takes one head:
``mirror({"Q", "K", "V": (N, d) rows of floats, "causal": bool}, block_rows, block_cols)``
(the inputs are rounded to float16 first, as the kernel's float16 buffers hold them) and
returns ``{"O": (N, d) float16 values as floats, inf and NaN included, "lost": the
indices of the lost rows}``. The arithmetic is done for all the rows of a query tile at
once (one list per step), which gives the same numbers as row by row.

No built-in ``sum()`` of floats anywhere (the project's rule).
"""
from __future__ import annotations

import math
import struct
from itertools import chain, repeat
from operator import add, mul, sub, truediv

#: binary16's largest finite value, and where rounding goes to infinity (max + ulp/2).
MAX = struct.unpack("<e", b"\xff\x7b")[0]          # 65,504
OVERFLOW_FROM = MAX + (MAX - struct.unpack("<e", b"\xfe\x7b")[0]) / 2  # 65,520


def f16(x: float) -> float:
    """``x`` rounded to binary16 (nearest, ties to even): ±inf from ±65,520 on, NaN kept."""
    try:
        return struct.unpack("<e", struct.pack("<e", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def f16s(xs) -> list:
    """Each float of ``xs`` rounded to binary16 (see :func:`f16`), as a list."""
    xs = xs if isinstance(xs, list) else list(xs)
    fmt = f"<{len(xs)}e"
    try:
        return list(struct.unpack(fmt, struct.pack(fmt, *xs)))
    except OverflowError:  # some value is past the edge: those become ±inf, which "e" packs
        xs = [x if -OVERFLOW_FROM < x < OVERFLOW_FROM or x != x else math.copysign(math.inf, x) for x in xs]
        return list(struct.unpack(fmt, struct.pack(fmt, *xs)))


def from_bits(bits) -> list:
    """binary16 bit patterns (ints 0 … 65,535, as a GPU's array<f16> holds them) -> floats.

    Raises ValueError for a value that is not such a pattern.
    """
    bits = list(bits)
    try:
        raw = struct.pack(f"<{len(bits)}H", *bits)
    except struct.error as exc:
        raise ValueError(f"not float16 bit patterns: {exc}") from None
    return list(struct.unpack(f"<{len(bits)}e", raw))


def to_bits(xs) -> list:
    """floats -> binary16 bit patterns (ints), rounding as :func:`f16s`."""
    xs = f16s(xs)
    return list(struct.unpack(f"<{len(xs)}H", struct.pack(f"<{len(xs)}e", *xs)))


#: log2(e), for the kernel's base-2 scores.
LOG2E = 1.0 / math.log(2.0)
#: A base-2 score from which 2^t overflows float16: 2^16 = 65,536 > 65,520.
OVERFLOW_EXPONENT = 16.0


def exp2_16(t: float) -> float:
    """2^t rounded to binary16, for a float16 t (NaN gives NaN, −inf 0, inf inf)."""
    if t != t:
        return t
    return f16(2.0 ** t) if t < 1024.0 else math.inf


def finite(x: float) -> bool:
    return x - x == 0.0  # False for inf and NaN


def scale(d: int) -> float:
    """The kernel's score scale, f16(log2(e)/√d) (fused_f16.wgsl: f16(LOG2E / sqrt(f32(D))))."""
    return f16(LOG2E / math.sqrt(d))


def scores(q: list, k: list) -> list:
    """The kernel's float16 scores in base 2: row i, key j -> t_ij = f16(f16(Σ_c q_ic k_jc)
    · f16(log2(e)/√d)), the sum taken in column order with a rounding after every product
    and addition. t_ij·ln 2 is the score s_ij = q_i·k_j/√d, to float16 accuracy.

    q: (N_q, d), k: (N_k, d) float16 values. Returns N_q lists of N_k floats.
    """
    nq, nk = len(q), len(k)
    d = len(q[0]) if q else 0
    dot = [0.0] * (nq * nk)
    for c in range(d):
        qc = _each([row[c] for row in q], nk)
        kc = [row[c] for row in k] * nq
        dot = f16s(map(add, dot, f16s(map(mul, qc, kc))))
    s = f16s(map(mul, dot, repeat(scale(d))))
    return [s[i * nk:(i + 1) * nk] for i in range(nq)]


def _each(xs: list, times: int):
    """Each value of ``xs`` ``times`` times in a row: [a, a, b, b] for ([a, b], 2)."""
    return chain.from_iterable(map(repeat, xs, repeat(times)))


def _keep(mask: list, new: list, old: list, width: int) -> list:
    """new where mask (one flag per row, ``width`` values a row), else old."""
    if all(mask):
        return new
    out = []
    for r, on in enumerate(mask):
        out.extend((new if on else old)[r * width:(r + 1) * width])
    return out


def _tile_rows(s: list, v: list, rows: range, kend: int, block_cols: int, causal: bool,
               subtract_max: bool) -> list:
    """O for the query rows ``rows`` (one query tile) that visit keys [0, kend): the
    online softmax of fused_f16.wgsl, every step rounded to float16. s: the head's
    scores (:func:`scores`), v: (N, d) float16 values. Returns the rows' d outputs each."""
    d = len(v[0])
    nr = len(rows)
    m = [0.0] * nr
    l = [0.0] * nr
    acc = [0.0] * (nr * d)
    seen = [False] * nr
    for key0 in range(0, kend, block_cols):
        keys = min(block_cols, kend - key0)
        visible = [min(keys, max(0, i + 1 - key0)) if causal else keys for i in rows]
        active = [vis > 0 for vis in visible]
        if subtract_max:
            top = [max(s[i][key0:key0 + vis]) if vis else 0.0 for i, vis in zip(rows, visible, strict=True)]
            rescale = [on and was for on, was in zip(active, seen, strict=True)]
            m_new = [max(a, b) if r else b for a, b, r in zip(m, top, rescale, strict=True)]
            a = [exp2_16(f16(x - y)) if r else 1.0 for x, y, r in zip(m, m_new, rescale, strict=True)]
            l = _keep(rescale, f16s(map(mul, l, a)), l, 1)
            acc = _keep(rescale, f16s(map(mul, acc, _each(a, d))), acc, d)
            m = [new if on else old for new, old, on in zip(m_new, m, active, strict=True)]
            seen = [was or on for was, on in zip(seen, active, strict=True)]
        for kl in range(keys):
            j = key0 + kl
            on = [kl < vis for vis in visible]
            if not any(on):
                continue
            x = [s[i][j] for i in rows]
            if subtract_max:
                x = f16s(map(sub, x, m))
            p = [exp2_16(t) for t in x]
            l = _keep(on, f16s(map(add, l, p)), l, 1)
            pv = f16s(map(mul, _each(p, d), v[j] * nr))
            acc = _keep(on, f16s(map(add, acc, pv)), acc, d)
    out = []
    for r in range(nr):
        row = acc[r * d:(r + 1) * d]
        out.append(f16s(map(truediv, row, repeat(l[r]))) if l[r] != 0.0 else [0.0] * d)
    return out


def run(x: dict, block_rows: int, block_cols: int, subtract_max: bool = True) -> dict:
    """Either float16 kernel on one head (module docstring): query tiles of ``block_rows``
    rows, key tiles of ``block_cols`` keys, causal as ``x["causal"]`` says.

    ``x`` may carry "t", the head's :func:`scores` already formed (the two kernels share
    them). Returns {"O": N rows of d float16 values (inf and NaN kept), "lost": [row
    indices with an inf or NaN output]}. Raises ValueError for Q, K, V of other shapes.
    """
    q, k, v = ([f16s(row) for row in x[name]] for name in ("Q", "K", "V"))
    n = len(q)
    if not n or len(k) != n or len(v) != n or len({len(r) for r in q + k + v}) != 1:
        raise ValueError("Q, K and V must be (N, d) with the same N ≥ 1 and d")
    causal = bool(x.get("causal", False))
    s = x.get("t") or scores(q, k)
    out = []
    for row0 in range(0, n, block_rows):
        rows = range(row0, min(n, row0 + block_rows))
        last = rows[-1]
        kend = min(n, (last // block_cols + 1) * block_cols) if causal else n
        out.extend(_tile_rows(s, v, rows, kend, block_cols, causal, subtract_max))
    return {"O": out, "lost": lost_rows(out)}


def fused(x: dict, block_rows: int, block_cols: int) -> dict:
    """Mirror of fused-f16 (manifest "mirror": "float16_mirrors.fused"): :func:`run` with the max
    subtraction."""
    return run(x, block_rows, block_cols, True)


def fused_no_max(x: dict, block_rows: int, block_cols: int) -> dict:
    """Mirror of fused-f16-no-max (manifest "mirror": "float16_mirrors.fused_no_max"): :func:`run`
    without the max subtraction, p = exp(s)."""
    return run(x, block_rows, block_cols, False)


def lost_rows(o: list) -> list:
    """Indices of the rows of ``o`` ((N, d) floats) that hold an inf or a NaN."""
    return [i for i, row in enumerate(o) if not all(map(finite, row))]


def overflowing_scores(t: list, causal: bool = False) -> int:
    """How many base-2 scores t_ij (:func:`scores`; those a row sees) give 2^t = inf in
    float16, i.e. t ≥ 16: the scores that overflow without the max subtraction."""
    total = 0
    for i, row in enumerate(t):
        for x in row[:i + 1] if causal else row:
            total += not finite(exp2_16(x))
    return total


def _same(a: float, b: float) -> bool:
    return a == b or (a != a and b != b)  # NaN against NaN counts as the same


def compare(mirror: list, gpu: list) -> dict:
    """A GPU's O against the mirror's, (N, d) floats each: {"lost": the GPU's lost rows,
    "identical_rows": rows equal entry for entry (NaN matching NaN), "max_abs_diff": the
    largest |difference| over rows finite in both (0.0 if none)}."""
    identical = 0
    worst = 0.0
    for a, b in zip(mirror, gpu, strict=True):
        identical += all(map(_same, a, b))
        if all(map(finite, a)) and all(map(finite, b)):
            worst = max([worst, *map(abs, map(sub, a, b))])
    return {"lost": lost_rows(gpu), "identical_rows": identical, "max_abs_diff": worst}


def float16_kernels() -> list:
    """The manifest's float16 kernels ("dtype": "float16"), in its order."""
    from .tiling import MANIFEST

    return [name for name, e in MANIFEST["kernels"].items() if e.get("dtype") == "float16"]


# ---------------------------------------------------------------------------
# The held-out sentences (facts/held_out_f16.json), as the lab's float16 card runs them

def decode(text: str, count: int) -> list:
    """``count`` float16 values from base64 text of little-endian binary16."""
    import base64

    raw = base64.b64decode(text, validate=True)
    if len(raw) != 2 * count:
        raise ValueError(f"expected {count} float16 values ({2 * count} bytes), got {len(raw)} bytes")
    return list(struct.unpack(f"<{count}e", raw))


def held_out_inputs(data: dict) -> dict:
    """facts/held_out_f16.json (parsed) -> {"d", "lengths", "offsets", "tokens", "heads":
    [{"layer", "head", "Q", "K", "V": one (n_s, d) list of rows per sentence s,
    "rows_lost": the facts' own lists}]}.

    Raises ValueError (with what is wrong) for data of another shape.
    """
    try:
        d = int(data["d"])
        lengths = [int(n) for n in data["lengths"]]
        rows = 0
        for n in lengths:
            rows += n
        heads = []
        for h in data["heads"]:
            mats = {}
            for name in ("Q", "K", "V"):
                flat = decode(h[name], rows * d)
                whole = [flat[i * d:(i + 1) * d] for i in range(rows)]
                mats[name] = [whole[o:o + n] for o, n in zip(_offsets(lengths), lengths, strict=True)]
            heads.append({"layer": int(h["layer"]), "head": int(h["head"]), **mats,
                          "rows_lost": h.get("rows_lost", {})})
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not held-out float16 data: {exc!r}") from None
    return {"d": d, "lengths": lengths, "offsets": _offsets(lengths), "tokens": data.get("tokens"),
            "heads": heads}


def _offsets(lengths: list) -> list:
    out, at = [], 0
    for n in lengths:
        out.append(at)
        at += n
    return out


_INPUTS: dict = {}  # the last held-out data decoded, by its digests (the card asks head by head)


def _inputs(data: dict) -> dict:
    key = repr([h.get("sha256") for h in data.get("heads", [])]) if isinstance(data, dict) else None
    if key is None or _INPUTS.get("key") != key:
        value = held_out_inputs(data)
        _INPUTS.clear()
        _INPUTS.update(key=key, value=value)
    return _INPUTS["value"]


def _gpu_rows(bits, n: int, d: int) -> list:
    """One sentence of a GPU's O (n·d float16 bit patterns) -> n rows of floats."""
    if not isinstance(bits, list) or len(bits) != n * d:
        raise ValueError(f"expected {n * d} float16 bit patterns for a sentence of {n} rows")
    flat = from_bits(bits)
    return [flat[i * d:(i + 1) * d] for i in range(n)]


def held_out_report(data: dict, index: int, outputs: dict | None = None) -> dict:
    """Head ``index`` of the held-out data (facts/held_out_f16.json, parsed) through the
    mirror of each float16 kernel, sentence by sentence (full attention, each kernel's
    tiles at d), and, with ``outputs``, a GPU's O for the same runs against it.

    outputs: {kernel: one list per sentence of its n·d float16 bit patterns}, for some
    or all of the float16 kernels. Returns {"layer", "head", "rows", "largest_score",
    "overflowing_scores", "kernels": {kernel: {"label", "subtracts_max", "bytes", "bytes_float32",
    "lost", "nan_rows", "gpu": compare()'s dict summed over the sentences, or None}}, "rows_detail":
    [{"row", "sentence", "token", "text", "largest_score", "cause"} for every row a kernel
    loses]}: rows are global (the sentences one after another), largest_score is the row's
    largest score s = t·ln 2, cause "score" when some 2^t of the row overflows and "sum"
    when none does but its total l does. Bytes are the walk's (emulator.traffic) over the
    sentences. Raises ValueError for malformed data, an index past its heads, or outputs
    of the wrong shape.
    """
    from . import mirrors
    from .tiling import MANIFEST, make_tiling
    from .traffic import count

    inp = _inputs(data)
    if not 0 <= index < len(inp["heads"]):
        raise ValueError(f"head index {index} is not one of 0..{len(inp['heads']) - 1}")
    h = inp["heads"][index]
    d = inp["d"]
    kernels = float16_kernels()
    outputs = outputs or {}
    out = {name: {"label": MANIFEST["kernels"][name]["label"], "bytes": 0, "bytes_float32": 0, "lost": [],
                  "nan_rows": 0, "gpu": None,
                  "subtracts_max": bool(MANIFEST["kernels"][name]["wgsl"][0]["constants"]["SUBTRACT_MAX"])}
           for name in kernels}
    gpu = {name: {"lost": [], "identical_rows": 0, "max_abs_diff": 0.0} for name in kernels if name in outputs}
    largest, over, detail = -math.inf, 0, {}
    for s, (q, k, v) in enumerate(zip(h["Q"], h["K"], h["V"], strict=True)):
        n, at = len(q), inp["offsets"][s]
        t = scores(q, k)
        over += overflowing_scores(t)
        tops = [max(row) for row in t]
        largest = max(largest, max(tops) / LOG2E)
        for name in kernels:
            tiling = make_tiling(name, n, d)
            res = mirrors.run(name, {"Q": q, "K": k, "V": v, "t": t}, tiling.block_rows, tiling.block_cols)
            rec = out[name]
            rec["bytes"] += count(name, n, d).total_bytes
            rec["bytes_float32"] += count("fused", n, d).total_bytes
            rec["lost"].extend(at + i for i in res["lost"])
            rec["nan_rows"] += len([i for i in res["lost"] if any(x != x for x in res["O"][i])])
            for i in res["lost"]:
                detail[at + i] = {"row": at + i, "sentence": s, "token": i,
                                  "text": (inp["tokens"] or [[]] * (s + 1))[s][i:i + 1] or [""],
                                  "largest_score": tops[i] / LOG2E,
                                  "cause": "score" if tops[i] >= OVERFLOW_EXPONENT else "sum"}
            if name in gpu:
                per = outputs[name]
                if not isinstance(per, list) or len(per) != len(h["Q"]):
                    raise ValueError(f"{name}: expected one list of outputs per sentence ({len(h['Q'])})")
                c = compare(res["O"], _gpu_rows(per[s], n, d))
                g = gpu[name]
                g["lost"].extend(at + i for i in c["lost"])
                g["identical_rows"] += c["identical_rows"]
                g["max_abs_diff"] = max(g["max_abs_diff"], c["max_abs_diff"])
    for name, g in gpu.items():
        g["agree"] = g["lost"] == out[name]["lost"]
        out[name]["gpu"] = g
    for row in detail.values():
        row["text"] = row["text"][0]
    rows = 0
    for n in inp["lengths"]:
        rows += n
    return {"layer": h["layer"], "head": h["head"], "index": index, "heads": len(inp["heads"]), "rows": rows,
            "sentences": len(inp["lengths"]), "d": d, "largest_score": largest, "overflowing_scores": over,
            "kernels": out, "rows_detail": [detail[r] for r in sorted(detail)]}
