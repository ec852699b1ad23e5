"""Compute the lesson's facts from the model's weights: facts/facts.json and facts/probe_qkv.json.

What is computed (every figure from the weights, none typed):

* **check**: for every head of the chosen layers, the probe sentence's Q, K
  and V (float32, shape (N, d), N = tokens incl. [CLS] and [SEP], d = 32) go
  through the emulator's float32 mirrors of ``plain``, ``fused`` and
  ``fused-no-rescale`` and are compared with the float64 reference
  (``emulator.accuracy.check_arrays``). The encoder is bidirectional, so the check
  uses full (non-causal) attention, as the model itself does.
* **when the broken control must fail**: a row's running maximum changes
  after its first key tile exactly when the row's largest score lies outside
  the first B_c keys; counted per head in float64 from the same Q and K.
* **overflow**: scaled scores s = q·k / sqrt(d) (float64 from the float32
  Q, K). fp16 overflows to infinity for values from 65,520 up (IEEE 754-2019
  §4.3.1 round-to-nearest-even at the top of binary16's range), so a score
  overflows fp16 as exp(s) when s >= ln 65,520.

Outputs are deterministic: sorted keys, floats printed to 6 significant
digits, float32 arrays as little-endian base64.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from pathlib import Path

import numpy as np

from emulator.tiling import LESSON_KERNELS, M_DEFAULT

from . import forward, sentences
from . import model as model_mod

HERE = Path(__file__).resolve().parent
FACTS_PATH = HERE / "facts.json"
PROBE_QKV_PATH = HERE / "probe_qkv.json"
HELD_OUT_F16_PATH = HERE / "held_out_f16.json"  # the float16 card's inputs (facts/held_out_f16.py)

SCHEMA = 1
#: Layers whose every head is checked. Layer 0 has the largest scores of the
#: six (so it tells the overflow story) and its Q, K, V ship to the lab.
CHECK_LAYERS = (0, 1, 2, 3, 4, 5)
LAB_LAYER = 0
#: Workgroup memory of the check: the lesson default (the manifest's
#: lesson.workgroup_bytes_default; at 16,384 B and d = 32, B_r = 64, B_c = 32).
WORKGROUP_BYTES = M_DEFAULT
KERNELS = LESSON_KERNELS  # the manifest's "lesson": true kernels, in its order
SIG_DIGITS = 6


# --------------------------------------------------------------------------
# fp16 arithmetic, computed from numpy's description of binary16


def fp16_overflow_threshold() -> dict:
    """Where fp16 rounding goes to infinity, derived from np.finfo(np.float16).

    binary16 has 10 fraction bits; its largest finite value is
    (2 - 2^-10)·2^15 = 65,504 and the spacing there is 2^(15-10) = 32. Under
    round-to-nearest-even, values from 65,504 + 32/2 = 65,520 up round to
    infinity (65,520 is a tie and 65,504's last bit is odd). Returns
    {"fp16_max": 65504.0, "ulp_at_max": 32.0, "overflow_from": 65520.0,
     "ln_overflow_from": ln 65,520 (float64)}.
    """
    fi = np.finfo(np.float16)
    fp16_max = float(fi.max)
    ulp = float(2.0 ** (int(fi.maxexp) - 1 - int(fi.nmant)))
    overflow_from = fp16_max + ulp / 2.0
    return {
        "fp16_max": fp16_max,
        "ulp_at_max": ulp,
        "overflow_from": overflow_from,
        "ln_overflow_from": math.log(overflow_from),
    }


def fp16_value(x: float):
    """np.float16(x) as a float, or the string "inf" when it overflows."""
    with np.errstate(over="ignore"):
        h = float(np.float16(x))
    return "inf" if math.isinf(h) else h


# --------------------------------------------------------------------------
# formatting


def _round(x):
    """Round floats to SIG_DIGITS significant digits, recursively; leave the rest."""
    if isinstance(x, bool) or x is None or isinstance(x, (int, str)):
        return x
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if math.isnan(x) or math.isinf(x):
            return str(x)
        return float(f"{x:.{SIG_DIGITS}g}")
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, dict):
        return {str(k): _round(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_round(v) for v in x]
    raise TypeError(f"cannot serialise {type(x).__name__}")


def dumps(obj: dict) -> str:
    """Deterministic JSON text: sorted keys, 1-space indent, trailing newline."""
    return json.dumps(_round(obj), sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def _b64_f32(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f4").tobytes()).decode("ascii")


# --------------------------------------------------------------------------
# the computations


def scaled_scores(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """S = Q K^T / sqrt(d) in float64. q, k: (..., N, d) float32 -> (..., N, N)."""
    d = q.shape[-1]
    return q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2) / math.sqrt(d)


def rows_max_after_first_tile(s: np.ndarray, block_cols: int) -> list[int]:
    """Rows whose largest score lies past the first key tile (keys >= B_c).

    s: (N, N) scores of one head. For exactly these rows the running maximum
    m changes after the first tile, so leaving out the rescale (multiplying l
    and O by exp(m_old - m_new)) changes their answer.
    """
    if s.shape[1] <= block_cols:
        return []
    first = s[:, :block_cols].max(axis=1)
    rest = s[:, block_cols:].max(axis=1)
    return [int(r) for r in np.nonzero(rest > first)[0]]


def _rows(a: np.ndarray) -> list[list[float]]:
    """float32 (N, d) -> list of rows of Python floats holding float32 values exactly."""
    return [[float(v) for v in row] for row in a.astype(np.float32)]


def check_head(q: np.ndarray, k: np.ndarray, v: np.ndarray, block_cols: int) -> dict:
    """Run the three lesson kernels' float32 mirrors on one head against float64.

    q, k, v: (N, d) float32. Returns {kernel: report} with the emulator's
    check report for each kernel, trimmed to the figures the lesson uses, plus
    the rows whose largest score arrives after the first key tile.
    """
    from emulator import accuracy as echeck

    Q, K, V = _rows(q), _rows(k), _rows(v)
    out = {}
    for kernel in KERNELS:
        rep = echeck.check_arrays(kernel, Q, K, V, causal=False, workgroup_bytes=WORKGROUP_BYTES)
        keep = {
            "passed": bool(rep["passed"]),
            "max_abs_error": float(rep["max_abs_error"]),
            "bound": float(rep["bound"]),
            "rows_checked": int(rep["rows_checked"]),
        }
        if kernel == "fused-no-rescale":
            keep["bound_passed"] = bool(rep["bound_passed"])
            keep["fa_rule_passed"] = bool(rep["fa_rule_passed"])
            keep["first_failing_row"] = rep["first_failing_row"]
            keep["first_failing_tile"] = rep["first_failing_tile"]
            keep["first_failing_error"] = rep["first_failing_error"]
            keep["first_failing_bound"] = rep["first_failing_bound"]
        out[kernel] = keep
    late = rows_max_after_first_tile(scaled_scores(q, k), block_cols)
    out["rows_with_max_after_first_tile"] = len(late)
    out["first_row_with_max_after_first_tile"] = late[0] if late else None
    return out


def check_layers(qkv: dict, heads: int, block_cols: int) -> tuple[dict, dict, dict]:
    """Check every head of CHECK_LAYERS (:func:`check_head`).

    qkv: {layer: {"Q"|"K"|"V": (heads, N, d) float32}}. Returns (layers,
    totals, worst): per layer its heads' reports and pass counts; the counts
    over all heads, including how often the broken kernel failed where its
    largest score comes late (when it must); and the largest max_abs_error of
    plain and fused.
    """
    layers = {}
    totals = {k: 0 for k in ("heads", "plain_passed", "fused_passed",
                             "broken_failed", "broken_should_fail",
                             "broken_failed_where_it_should")}
    worst = {"plain": 0.0, "fused": 0.0}
    for layer in CHECK_LAYERS:
        reports = []
        for head in range(heads):
            q, k, v = (qkv[layer][x][head] for x in "QKV")
            r = check_head(q, k, v, block_cols)
            r["head"] = head
            should = r["rows_with_max_after_first_tile"] > 0
            failed = not r["fused-no-rescale"]["passed"]
            totals["heads"] += 1
            totals["plain_passed"] += r["plain"]["passed"]
            totals["fused_passed"] += r["fused"]["passed"]
            totals["broken_failed"] += failed
            totals["broken_should_fail"] += should
            totals["broken_failed_where_it_should"] += failed and should
            for kern in worst:
                worst[kern] = max(worst[kern], r[kern]["max_abs_error"])
            reports.append(r)
        layers[str(layer)] = {
            "heads": reports,
            "plain_passed": sum(1 for r in reports if r["plain"]["passed"]),
            "fused_passed": sum(1 for r in reports if r["fused"]["passed"]),
            "broken_failed": sum(1 for r in reports if not r["fused-no-rescale"]["passed"]),
        }
    return layers, totals, worst


def probe_last_row(qkv: dict, tokens: list[str], n: int, threshold: float) -> dict:
    """Overflow facts on the probe's last row, lab layer: each head's largest
    scaled score there, e to that score in float64 and in fp16, and the largest
    that still fits fp16 (a "fits" example). threshold: ln of fp16's overflow
    value (:func:`fp16_overflow_threshold`); n: the probe's token count."""
    s_probe = scaled_scores(qkv[LAB_LAYER]["Q"], qkv[LAB_LAYER]["K"])  # (H, N, N)
    last = s_probe[:, n - 1, :]  # (H, N)
    per_head_last = [float(x) for x in last.max(axis=1)]
    best_head = int(np.argmax(per_head_last))
    top = per_head_last[best_head]
    probe_last = {
        "layer": LAB_LAYER,
        "row": n - 1,
        "token": tokens[n - 1],
        "head": best_head,
        "largest_score": top,
        "exp": math.exp(top),
        "exp_fp16": fp16_value(math.exp(top)),
        "overflows_fp16": bool(top >= threshold),
        "largest_score_per_head": per_head_last,
        "exp_fp16_per_head": [fp16_value(math.exp(x)) for x in per_head_last],
    }
    fitting = [(x, i) for i, x in enumerate(per_head_last) if x < threshold]
    if fitting:
        x, i = max(fitting)
        probe_last["largest_fitting"] = {
            "head": i, "score": x, "exp": math.exp(x), "exp_fp16": fp16_value(math.exp(x))}
    return probe_last


def held_out_overflow(m, heads: int) -> dict:
    """Over the held-out sentences, per layer of CHECK_LAYERS: the largest
    scaled score (and its head), how many scores there are and how many
    overflow fp16 as e^s, exactly as binary16 rounding sees it."""
    held_rows = 0
    per_layer = {}
    for layer in CHECK_LAYERS:
        per_layer[str(layer)] = {"largest_score": -math.inf, "head": None,
                                 "scores": 0, "overflowing": 0}
    for sent in sentences.HELD_OUT:
        _, hid = m.encode(sent)
        held_rows += int(hid.shape[0])
        hq = forward.qkv_per_layer(m, hid, CHECK_LAYERS)
        for layer in CHECK_LAYERS:
            s = scaled_scores(hq[layer]["Q"], hq[layer]["K"])  # (H, N, N)
            rec = per_layer[str(layer)]
            mx = float(s.max())
            if mx > rec["largest_score"]:
                rec["largest_score"] = mx
                rec["head"] = int(np.unravel_index(np.argmax(s), s.shape)[0])
            rec["scores"] += int(s.size)
            # Overflow exactly as fp16 would see it: round exp(s) to binary16.
            with np.errstate(over="ignore"):
                rec["overflowing"] += int(np.isinf(np.exp(s).astype(np.float16)).sum())
    for rec in per_layer.values():
        rec["largest_exp_fp16"] = fp16_value(math.exp(rec["largest_score"]))
    lab = per_layer[str(LAB_LAYER)]
    return {
        "source": "written for Cannery by its authors (facts/sentences.py); not quoted from any text",
        "sentences": len(sentences.HELD_OUT),
        "query_rows": held_rows,
        "layer": LAB_LAYER,
        "heads": heads,
        "scores": lab["scores"],
        "largest_score": lab["largest_score"],
        "largest_score_head": lab["head"],
        "overflowing": lab["overflowing"],
        "per_layer": per_layer,
        "all_layers": {
            "scores": sum(r["scores"] for r in per_layer.values()),
            "overflowing": sum(r["overflowing"] for r in per_layer.values()),
            "largest_score": max(r["largest_score"] for r in per_layer.values()),
        },
    }


def lab_qkv(m, qkv: dict, tokens: list[str], n: int) -> dict:
    """facts/probe_qkv.json: the lab layer's Q, K and V of the probe sentence,
    each (heads, n, d) float32 as little-endian base64, with their sha256."""
    lab_q, lab_k, lab_v = (qkv[LAB_LAYER][x] for x in "QKV")
    blobs = {x: _b64_f32(a) for x, a in (("Q", lab_q), ("K", lab_k), ("V", lab_v))}
    return {
        "schema": SCHEMA,
        "model": m.provenance["model"],
        "weights_sha256": m.provenance["weights_sha256"],
        "text": sentences.PROBE,
        "tokens": tokens,
        "layer": LAB_LAYER,
        "heads": m.n_heads,
        "n": n,
        "d": m.head_dim,
        "dtype": "float32",
        "byte_order": "little",
        "encoding": "base64",
        "layout": "Q, K and V are each shape (heads, n, d), row-major: element [h][i][j] at index (h*n + i)*d + j",
        "Q": blobs["Q"],
        "K": blobs["K"],
        "V": blobs["V"],
        "sha256": {x: hashlib.sha256(base64.b64decode(b)).hexdigest() for x, b in blobs.items()},
    }


def compute(m=None) -> tuple[dict, dict]:
    """Compute (facts, probe_qkv) as plain dicts. Needs the model (see facts.model.load)."""
    if m is None:
        m = model_mod.load()
    d = m.head_dim
    h = m.n_heads

    # Tiling of the check, from the emulator's own rules.
    from emulator import tiling as etiling

    t = etiling.make_tiling("fused", 1, d, causal=False, workgroup_bytes=WORKGROUP_BYTES)
    block_rows, block_cols = t.block_rows, t.block_cols
    fp16 = fp16_overflow_threshold()
    thr = fp16["ln_overflow_from"]

    tokens, ids = m.encode(sentences.PROBE)
    n = int(ids.shape[0])
    qkv = forward.qkv_per_layer(m, ids, CHECK_LAYERS)
    layers, totals, worst = check_layers(qkv, h, block_cols)
    facts = {
        "schema": SCHEMA,
        "generated_by": "python -m facts",
        "model": m.provenance,
        "probe": {"text": sentences.PROBE, "tokens": tokens, "n": n},
        "check": {
            "causal": False,
            "why_not_causal": "the model is a bidirectional encoder: every token attends to every token",
            "d": d,
            "n": n,
            "workgroup_bytes": WORKGROUP_BYTES,
            "block_rows": block_rows,
            "block_cols": block_cols,
            "query_tiles": -(-n // block_rows),
            "key_tiles": -(-n // block_cols),
            "kernels": list(KERNELS),
            "layers_checked": list(CHECK_LAYERS),
            "layers": layers,
            "totals": totals,
            "worst_max_abs_error": worst,
        },
        "overflow": {
            "fp16_max": fp16["fp16_max"],
            "fp16_ulp_at_max": fp16["ulp_at_max"],
            "fp16_overflow_from": fp16["overflow_from"],
            "threshold": thr,
            "probe_last_row": probe_last_row(qkv, tokens, n, thr),
            "held_out": held_out_overflow(m, h),
        },
        "lab": {
            "path": "facts/probe_qkv.json",
            "layer": LAB_LAYER,
            "heads": h,
            "n": n,
            "d": d,
        },
    }
    return facts, lab_qkv(m, qkv, tokens, n)


def with_float16(facts: dict, m) -> dict:
    """The held-out float16 figures (facts/held_out_f16.py), added to ``facts`` under
    overflow.held_out.float16; returns the held_out_f16.json dict."""
    from . import held_out_f16

    summary, data = held_out_f16.summarise(m, facts["model"])
    facts["overflow"]["held_out"]["float16"] = summary
    return data


def render(m=None) -> dict[Path, str]:
    """{path: text} for the three output files."""
    if m is None:
        m = model_mod.load()
    facts, probe = compute(m)
    held = with_float16(facts, m)
    return {FACTS_PATH: dumps(facts), PROBE_QKV_PATH: dumps(probe), HELD_OUT_F16_PATH: dumps(held)}
