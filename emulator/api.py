"""JSON in, JSON out: the one entry point the page's Pyodide worker calls.

``handle(request)`` takes {"op": ..., "params": {...}} with the raw strings of
the lab's form and returns {"ok": True, "op": ..., "result": ...} or
{"ok": False, "op": ..., "errors": [{"field": ..., "message": ...}]}.
It never raises for bad input: every rule lives in emulator.tiling, and the
page only shows the messages.

ops
  count     bytes per tensor for the chosen kernel, plus plain and fused for
            comparison (and any timed kernel that tiles differently)
  check     float32 mirror against float64 on seeded random inputs, or on the
            model's own Q, K, V ("input": "model", "head": h)
  check_plan   how many rows a check visits ("rows_planned"), after every rule
  check_part   check rows [lo, hi) of that plan ("rows": [lo, hi]): a partial report
  check_merge  merge partial reports ("parts": [...]) into check's report, with
               "complete": false when some planned rows were never checked
  gpu_plan  whether the chosen size fits a GPU's limits ("limits": {...})
  inputs    the seeded random Q, K, V (flat, row-major) for a GPU run
  check_output  check a GPU's O ("outputs": N·d floats) on those inputs
  validate  the rules alone
"""
from __future__ import annotations

import json
import math
import os
import time

from . import check as _check
from . import traffic as _traffic
from .inputs import random_qkv
from .tiling import (BYTES, CHECK_MAX_N, COUNT_MAX_N, InputError, LESSON_KERNELS,
                     MANIFEST, parse_request)

MODEL_QKV_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              "facts", "probe_qkv.json")


def _errors(exc: InputError) -> list:
    return [{"field": e.field, "message": e.message} for e in getattr(exc, "all", [exc])]


def _count(p: dict) -> dict:
    n, d, causal, m = p["n"], p["d"], p["causal"], p["workgroup_bytes"]
    selected = _traffic.walk(p["tiling"])
    plain = _traffic.count("plain", n, d, causal, m)
    fused = _traffic.count("fused", n, d, causal, m)
    timed = {}
    for name, entry in MANIFEST["kernels"].items():
        if name in LESSON_KERNELS or not entry.get("timed"):
            continue
        try:
            timed[name] = _traffic.count(name, n, d, causal, m).as_dict()
            timed[name]["label"] = entry.get("label", name)
        except (KeyError, InputError):
            continue
    return {
        "selected": selected.as_dict(),
        "schedule": _traffic.one_tile_schedule(p["tiling"]),
        "plain": plain.as_dict(),
        "fused": fused.as_dict(),
        "ratio": plain.total_bytes / fused.total_bytes,
        "timed": timed,
        "label": MANIFEST["kernels"][p["kernel"]].get("label", p["kernel"]),
    }


def _load_model_qkv(path: str | None = None) -> dict:
    """The model's Q, K, V for the probe sentence (facts/probe_qkv.json).

    The file holds base64 little-endian float32 arrays of shape (heads, n, d);
    returns {"heads": [{"Q": rows, "K": rows, "V": rows}, ...], "tokens": [...],
    "n": n, "d": d}. Raises FileNotFoundError if the file is absent.
    """
    import base64
    import sys
    from array import array
    with open(path or MODEL_QKV_PATH, encoding="utf-8") as f:
        data = json.load(f)
    n, d, heads = int(data["n"]), int(data["d"]), int(data["heads"])
    mats = {}
    for name in ("Q", "K", "V"):
        values = array("f")
        values.frombytes(base64.b64decode(data[name]))
        if sys.byteorder != data.get("byte_order", "little"):
            values.byteswap()
        flat = values.tolist()
        mats[name] = [[flat[(h * n + i) * d:(h * n + i + 1) * d] for i in range(n)] for h in range(heads)]
    return {"heads": [{"Q": mats["Q"][h], "K": mats["K"][h], "V": mats["V"][h]} for h in range(heads)],
            "tokens": data.get("tokens"), "n": n, "d": d, "text": data.get("text")}


_PREPARED: dict = {}  # the last check's inputs, kept for its next chunk of rows


def _check_inputs(p: dict, raw: dict):
    """Q, K, V for a check request, their prepared form, and the report's
    input fields. The last input is kept, so a check split into chunks of
    rows (ops check_part) draws and prepares its inputs once per worker."""
    if p["kernel"] not in LESSON_KERNELS:
        raise InputError("kernel", f"Check runs the lesson's kernels only ({', '.join(LESSON_KERNELS)}).")
    model = raw.get("input", "random") == "model"
    if model:
        try:
            h = int(raw.get("head", 0))
        except (TypeError, ValueError):
            raise InputError("input", "Choose a head by number.") from None
        key = ("model", raw.get("model_path"), h, p["n"], p["d"])
    else:
        key = ("random", p["n"], p["d"], p["seed"])
    if _PREPARED.get("key") == key:
        return _PREPARED["value"]
    if model:
        data = _load_model_qkv(raw.get("model_path"))
        heads = data["heads"]
        if not 0 <= h < len(heads):
            raise InputError("input", f"The model has heads 0 to {len(heads) - 1}; head {h} does not exist.")
        head = heads[h]
        q, k, v = head["Q"], head["K"], head["V"]
        if len(q) != p["n"]:
            raise InputError("n", f"The model's sentence has N = {len(q)} tokens; set N to {len(q)}.")
        if len(q[0]) != p["d"]:
            raise InputError("d", f"The model's sentence has head dimension d = {len(q[0])}; choose d = {len(q[0])}.")
        fields = {"input": "model", "head": h, "tokens": len(data.get("tokens") or [])}
    else:
        q, k, v = random_qkv(p["n"], p["d"], p["seed"])
        fields = {"input": "random", "seed": p["seed"]}
    value = (q, k, v, _check.prepare(q, k, v), fields)
    _PREPARED.clear()
    _PREPARED.update(key=key, value=value)
    return value


def _check_op(p: dict, raw: dict) -> dict:
    start = time.perf_counter()
    q, k, v, prepared, fields = _check_inputs(p, raw)
    part = _check.check_rows(p["kernel"], q, k, v, p["causal"], p["workgroup_bytes"], prepared=prepared)
    report = _check.merge([part])
    report.update(fields)
    report["label"] = MANIFEST["kernels"][p["kernel"]].get("label", p["kernel"])
    report["seconds"] = time.perf_counter() - start
    return report


def _planned_rows(p: dict) -> list:
    return _check.rows_to_check(p["tiling"])


def _check_plan_op(p: dict, raw: dict) -> dict:
    """How many rows a check visits, after every input rule (and the model's
    sizes) has been applied: {"rows_planned": R, "rows_description": ...}."""
    _check_inputs(p, raw)
    rows = _planned_rows(p)
    return {"rows_planned": len(rows), "rows_description": _check.describe_rows(rows, p["tiling"])}


def _check_part_op(p: dict, raw: dict, span) -> dict:
    """Check rows [lo, hi) of the planned list (positions, not row numbers)."""
    rows = _planned_rows(p)
    try:
        lo, hi = (int(x) for x in span)
    except (TypeError, ValueError):
        raise InputError("op", "check_part needs \"rows\": [lo, hi], two whole numbers.") from None
    if not 0 <= lo < hi <= len(rows):
        raise InputError("op", f"check_part rows must satisfy 0 ≤ lo < hi ≤ {len(rows):,}; got [{lo}, {hi}).")
    start = time.perf_counter()
    q, k, v, prepared, _fields = _check_inputs(p, raw)
    part = _check.check_rows(p["kernel"], q, k, v, p["causal"], p["workgroup_bytes"],
                             rows=rows[lo:hi], prepared=prepared)
    part.update(rows_planned=len(rows), lo=lo, hi=hi, seconds=time.perf_counter() - start)
    return part


def _check_merge_op(p: dict, raw: dict, parts) -> dict:
    """Merge check_part answers (any order) into the report check gives;
    "complete": false when some planned rows were never checked."""
    if not isinstance(parts, list) or not parts or not all(isinstance(x, dict) for x in parts):
        raise InputError("op", "check_merge needs \"parts\": a list of check_part results.")
    try:
        report = _check.merge(parts, rows_planned=len(_planned_rows(p)))
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError("op", f"These check_part results cannot be merged: {exc}") from None
    if (report["kernel"], report["n"], report["d"], report["causal"]) != (p["kernel"], p["n"], p["d"], p["causal"]):
        raise InputError("op", "These check_part results belong to another check.")
    _q, _k, _v, _prepared, fields = _check_inputs(p, raw)
    report.update(fields)
    report["label"] = MANIFEST["kernels"][p["kernel"]].get("label", p["kernel"])
    report["seconds"] = math.fsum(float(x.get("seconds", 0.0)) for x in parts)
    return report


def _flat(rows: list) -> list:
    out = []
    for row in rows:
        out.extend(row)
    return out


def _check_output_op(p: dict, outputs) -> dict:
    """Check O computed elsewhere (a GPU) on the seeded inputs of ``inputs``.

    outputs: N·d floats, row-major (a Float32Array's values). The kernel named
    in the params may be any manifest kernel (its tiling sets the bound's
    tile count); the FlashAttention 2× rule compares with the plain mirror.
    """
    n, d = p["n"], p["d"]
    if not isinstance(outputs, list) or len(outputs) != n * d:
        raise InputError("op", f"Expected N·d = {n * d:,} output values from the GPU.")
    rows = [[float(x) if isinstance(x, (int, float)) else math.nan for x in outputs[i * d:(i + 1) * d]]
            for i in range(n)]
    q, k, v = random_qkv(n, d, p["seed"])
    report = _check.check_output(rows, q, k, v, p["causal"], p["kernel"], p["workgroup_bytes"])
    report["seed"] = p["seed"]
    report["label"] = MANIFEST["kernels"][p["kernel"]].get("label", p["kernel"])
    return report


def gpu_plan(p: dict, limits: dict) -> dict:
    """Whether the plain and fused kernels fit a GPU with these WebGPU limits.

    limits: {"maxStorageBufferBindingSize": bytes, "maxBufferSize": bytes,
    "maxComputeWorkgroupStorageSize": bytes} (the adapter's, WebGPU §3.6.2).
    Returns {"fits": bool, "needs": {...}, "required_limits": {...}}; raises
    InputError naming the field to change when a buffer or tile is too large.
    """
    n, d, m = p["n"], p["d"], p["workgroup_bytes"]
    score_bytes = n * n * BYTES      # S and P, one head: N²·4 B each
    row_bytes = n * d * BYTES        # Q, K, V, O: N·d·4 B each
    biggest = max(score_bytes, row_bytes)
    max_binding = int(limits.get("maxStorageBufferBindingSize", 134217728))
    max_buffer = int(limits.get("maxBufferSize", 268435456))
    max_wg = int(limits.get("maxComputeWorkgroupStorageSize", 16384))
    allowed = min(max_binding, max_buffer)
    if biggest > allowed:
        largest_n = math.isqrt(allowed // BYTES)
        raise InputError(
            "n",
            f"The plain kernel stores S and P in global memory: N²·4 = {score_bytes:,} B each at "
            f"N = {n:,}, but this GPU allows {allowed:,} B per buffer. Try N ≤ {largest_n:,}.")
    max_row = int(MANIFEST.get("limits", {}).get("softmax_max_row", 1 << 62))
    if n > max_row:  # Time always runs plain beside fused
        raise InputError(
            "n",
            f"The plain kernel's softmax pass holds one row of S ({n:,} scores) in registers; "
            f"the WGSL kernels stop at N = {max_row:,}. Count and Check still work at this size.")
    if m > max_wg:
        raise InputError(
            "workgroup_bytes",
            f"M = {m:,} B of workgroup memory, but this GPU offers {max_wg:,} B per workgroup. "
            f"Time the kernels with M ≤ {max_wg:,}.")
    required = {}
    if biggest > 134217728:
        required["maxStorageBufferBindingSize"] = biggest
    if biggest > 268435456:
        required["maxBufferSize"] = biggest
    if m > 16384:
        required["maxComputeWorkgroupStorageSize"] = m
    return {"fits": True, "needs": {"S_bytes": score_bytes, "row_bytes": row_bytes},
            "required_limits": required}


def handle(request: dict) -> dict:
    """Answer one request from the page (see module docstring). Never raises."""
    op = request.get("op") if isinstance(request, dict) else None
    raw = (request.get("params") or {}) if isinstance(request, dict) else {}
    try:
        if op == "count":
            result = _count(parse_request(raw, "count"))
        elif op == "check":
            result = _check_op(parse_request(raw, "check"), raw)
        elif op == "check_plan":
            result = _check_plan_op(parse_request(raw, "check"), raw)
        elif op == "check_part":
            result = _check_part_op(parse_request(raw, "check"), raw, request.get("rows"))
        elif op == "check_merge":
            result = _check_merge_op(parse_request(raw, "check"), raw, request.get("parts"))
        elif op == "gpu_plan":
            result = gpu_plan(parse_request(raw, "count"), request.get("limits") or {})
        elif op == "inputs":
            p = parse_request(raw, "check")
            q, k, v = random_qkv(p["n"], p["d"], p["seed"])
            result = {"n": p["n"], "d": p["d"], "seed": p["seed"],
                      "Q": _flat(q), "K": _flat(k), "V": _flat(v)}
        elif op == "check_output":
            result = _check_output_op(parse_request(raw, "check"), request.get("outputs"))
        elif op == "validate":
            p = parse_request(raw, raw.get("purpose", "count"))
            result = {k: v for k, v in p.items() if k != "tiling"}
        elif op == "limits":
            result = {"count_max_n": COUNT_MAX_N, "check_max_n": CHECK_MAX_N}
        else:
            return {"ok": False, "op": op, "errors": [{"field": "op", "message": f"Unknown request {op!r}."}]}
    except InputError as exc:
        return {"ok": False, "op": op, "errors": _errors(exc)}
    return {"ok": True, "op": op, "result": result}


def _clean(x):
    """Replace non-finite floats (inf, NaN) by strings so JSON.parse accepts them."""
    if isinstance(x, float) and not math.isfinite(x):
        return "inf" if x > 0 else ("-inf" if x < 0 else "nan")
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def handle_json(text: str) -> str:
    """String form of :func:`handle` for the worker: JSON text in and out.

    Non-finite floats come back as the strings "inf", "-inf" or "nan".
    """
    try:
        request = json.loads(text)
    except ValueError:
        request = None
    if not isinstance(request, dict):
        reply = {"ok": False, "op": None, "errors": [{"field": "op", "message": "Request is not a JSON object."}]}
    else:
        reply = handle(request)
    return json.dumps(_clean(reply), allow_nan=False, sort_keys=True)
