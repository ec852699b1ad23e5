"""The held-out sentences in float16: which rows the float16 fused kernels lose.

The lab's float16 card runs fused-f16 and fused-f16-no-max
(kernels_wgsl/fused_f16.wgsl) on the held-out sentences, on the visitor's GPU where it
has shader-f16, and through their mirror (emulator/float16_mirrors.py, struct's "e" format) in
the page. This module computes, with numpy's float16 (a second, independent
implementation of the kernel's arithmetic in the kernel's order; numpy rounds each
float16 operation correctly, as the kernel does), for every head of every layer:

* the rows each kernel loses to inf or NaN (no max subtraction: a row with a base-2
  score t = s·log2 e ≥ 16, i.e. a score s of about ln 65,520 ≈ 11.09 or more);
* the scores that overflow float16 as the kernel forms them, beside the film's count
  (facts.compute: the float64 score from float32 Q and K, exp rounded to float16).

It ships the heads where either count is not zero ("the heads in question"): their held-out
Q, K and V rounded to float16, in facts/held_out_f16.json, for the card to load when the
learner asks, and a summary in facts.json (overflow.held_out.float16), which the card and
tests/test_float16.py read.

Held-out sentences are separate inputs: each is its own attention problem of N = its
tokens, full (non-causal) attention, as the bidirectional encoder computes it.
"""

from __future__ import annotations

import base64
import hashlib
import math

import numpy as np

from emulator.tiling import make_tiling

from . import forward, sentences

KERNELS = ("fused-f16", "fused-f16-no-max")
DATA_PATH = "facts/held_out_f16.json"


def exp2_16(t: np.ndarray) -> np.ndarray:
    """2^t for float16 t, rounded once to float16 (float64 exp2, then the cast)."""
    with np.errstate(over="ignore"):
        return np.exp2(t.astype(np.float64)).astype(np.float16)


def kernel_rows(q, k, v, block_cols: int, subtract_max: bool) -> np.ndarray:
    """fused_f16.wgsl on (H, N, d) float16 Q, K, V, full attention, in numpy float16.

    Returns O, (H, N, d) float16, inf and NaN kept. The order is the shader's: the score
    as a column-ordered float16 sum of float16 products times f16(log2(e)/sqrt(d)); per
    key tile the running max and the rescale 2^(m - m_new); per key p = 2^(t - m) (or
    2^t), l = l + p, acc = acc + p v; O = acc / l.
    """
    h, n, d = q.shape
    dot = np.zeros((h, n, n), np.float16)
    for c in range(d):
        dot = dot + q[:, :, None, c] * k[:, None, :, c]
    t = dot * np.float16(1.0 / math.log(2.0) / math.sqrt(d))
    m = np.zeros((h, n), np.float16)
    l = np.zeros((h, n), np.float16)
    acc = np.zeros((h, n, d), np.float16)
    with np.errstate(over="ignore", invalid="ignore"):
        for key0 in range(0, n, block_cols):
            keys = range(key0, min(n, key0 + block_cols))
            if subtract_max:
                top = t[:, :, keys.start:keys.stop].max(axis=-1)
                if key0:
                    m_new = np.maximum(m, top)
                    a = exp2_16(m - m_new)
                    l = l * a
                    acc = acc * a[:, :, None]
                    m = m_new
                else:
                    m = top
            for j in keys:
                p = exp2_16(t[:, :, j] - m if subtract_max else t[:, :, j])
                l = l + p
                acc = acc + p[:, :, None] * v[:, None, j, :]
        return acc / l[:, :, None]


def _overflowing_float32(q, k) -> np.ndarray:
    """Per head, the film's count: scores s = q·k/sqrt(d) in float64 from float32 Q and K
    whose exp rounds to inf in float16 (facts.compute's held-out figure)."""
    d = q.shape[-1]
    s = q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2) / math.sqrt(d)
    with np.errstate(over="ignore"):
        return np.isinf(np.exp(s).astype(np.float16)).sum(axis=(1, 2)), s.max(axis=(1, 2))


def per_head(m) -> dict:
    """Every (layer, head) on the held-out sentences: {(layer, head): {"rows_lost":
    {kernel: [global row indices]}, "overflowing_scores", "overflowing_scores_float32",
    "largest_score", "scores"}} plus the sentences' tokens and the float16 Q, K, V per layer.

    Global rows run over the sentences in facts.sentences order, each sentence's tokens in
    order ([CLS] and [SEP] included).
    """
    layers = tuple(range(m.n_layers))
    d = m.head_dim
    tile = make_tiling(KERNELS[0], 1, d)
    out = {(layer, h): {"rows_lost": {kern: [] for kern in KERNELS}, "overflowing_scores": 0,
                        "overflowing_scores_float32": 0, "largest_score": -math.inf, "scores": 0}
           for layer in layers for h in range(m.n_heads)}
    tokens, qkv16 = [], {layer: {x: [] for x in "QKV"} for layer in layers}
    row0 = 0
    for sent in sentences.HELD_OUT:
        toks, ids = m.encode(sent)
        tokens.append(toks)
        n = int(ids.shape[0])
        qkv = forward.qkv_per_layer(m, ids, layers)
        for layer in layers:
            q, k, v = (qkv[layer][x].astype(np.float16) for x in "QKV")
            for x, a in zip("QKV", (q, k, v), strict=True):
                qkv16[layer][x].append(a)
            over32, top = _overflowing_float32(qkv[layer]["Q"], qkv[layer]["K"])
            dot = np.zeros(q.shape[:2] + (n,), np.float16)
            for c in range(d):
                dot = dot + q[:, :, None, c] * k[:, None, :, c]
            t = dot * np.float16(1.0 / math.log(2.0) / math.sqrt(d))
            over16 = np.isinf(exp2_16(t)).sum(axis=(1, 2))
            lost = {kern: ~np.isfinite(kernel_rows(q, k, v, tile.block_cols, kern == "fused-f16")).all(axis=-1)
                    for kern in KERNELS}
            for h in range(m.n_heads):
                rec = out[(layer, h)]
                rec["overflowing_scores"] += int(over16[h])
                rec["overflowing_scores_float32"] += int(over32[h])
                rec["largest_score"] = max(rec["largest_score"], float(top[h]))
                rec["scores"] += n * n
                for kern in KERNELS:
                    rec["rows_lost"][kern].extend(row0 + int(i) for i in np.nonzero(lost[kern][h])[0])
        row0 += n
    return {"heads": out, "tokens": tokens, "qkv16": qkv16, "rows": row0, "d": d,
            "block_rows": tile.block_rows, "block_cols": tile.block_cols}


def _b64_f16(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f2").tobytes()).decode("ascii")


def summarise(m, provenance: dict) -> tuple[dict, dict]:
    """(facts.json's overflow.held_out.float16, the held_out_f16.json dict), from
    :func:`per_head`. The heads in question are those that lose a row or overflow a
    score, in (layer, head) order."""
    ph = per_head(m)
    heads = ph["heads"]
    chosen = [key for key, rec in heads.items()
              if rec["overflowing_scores"] or rec["overflowing_scores_float32"]
              or any(rec["rows_lost"].values())]
    others = [rec for key, rec in heads.items() if key not in chosen]
    rows = ph["rows"]
    shipped = []
    blobs = []
    for layer, h in chosen:
        rec = heads[(layer, h)]
        shipped.append({"layer": layer, "head": h, "rows": rows, "scores": rec["scores"],
                        "largest_score": rec["largest_score"],
                        "overflowing_scores": rec["overflowing_scores"],
                        "overflowing_scores_float32": rec["overflowing_scores_float32"],
                        "rows_lost": {kern: len(rec["rows_lost"][kern]) for kern in KERNELS}})
        mats = {x: np.concatenate([a[h] for a in ph["qkv16"][layer][x]], axis=0) for x in "QKV"}
        blob = {x: _b64_f16(mats[x]) for x in "QKV"}
        blob.update(layer=layer, head=h, rows_lost={kern: rec["rows_lost"][kern] for kern in KERNELS},
                    sha256={x: hashlib.sha256(base64.b64decode(blob[x])).hexdigest() for x in "QKV"})
        blobs.append(blob)
    lengths = [len(t) for t in ph["tokens"]]
    summary = {
        "path": DATA_PATH,
        "kernels": list(KERNELS),
        "d": ph["d"], "block_rows": ph["block_rows"], "block_cols": ph["block_cols"],
        "sentences": len(lengths), "rows_per_head": rows,
        "heads": shipped,
        "rows": rows * len(shipped),
        "rows_lost": {kern: sum(s["rows_lost"][kern] for s in shipped) for kern in KERNELS},
        "overflowing_scores": sum(s["overflowing_scores"] for s in shipped),
        "overflowing_scores_float32": sum(s["overflowing_scores_float32"] for s in shipped),
        "other_heads": len(others),
        "other_heads_rows_lost": {kern: sum(len(r["rows_lost"][kern]) for r in others) for kern in KERNELS},
        "other_heads_largest_score": max(r["largest_score"] for r in others) if others else None,
    }
    data = {
        "schema": 1,
        "model": provenance["model"],
        "weights_sha256": provenance["weights_sha256"],
        "source": "facts.sentences.HELD_OUT, written for Cannery by its authors",
        "dtype": "float16",
        "byte_order": "little",
        "encoding": "base64",
        "layout": ("per head, Q, K and V are each shape (rows, d), row-major: the sentences' rows one "
                   "after another, sentence s starting at row offsets[s]"),
        "d": ph["d"],
        "lengths": lengths,
        "offsets": [sum(lengths[:i]) for i in range(len(lengths))],
        "tokens": ph["tokens"],
        "heads": blobs,
    }
    return summary, data
