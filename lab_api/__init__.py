"""JSON in, JSON out: the one entry point the page's Pyodide worker calls.

``handle(request)`` takes {"op": ..., "params": {...}} with the raw strings of
the lab's form and returns {"ok": True, "op": ..., "result": ...} or
{"ok": False, "op": ..., "errors": [{"field": ..., "message": ...}]}.
It never raises for bad input: every input rule lives in emulator.tiling, every
GPU plan in planner, and the page only shows the messages. The float
figures of a check's reply are given to 6 significant digits, the ones every
platform's exp and log agree on (see :func:`exact_digits`).

ops
  count     bytes per tensor for the chosen kernel, plus plain and fused for
            comparison (and any timed kernel that tiles differently);
            "direction": "backward" counts the backward kernels instead
            (emulator.backward), with backward ÷ forward traffic
  check     float32 mirror against float64 on seeded random inputs, or on the
            model's own Q, K, V ("input": "model", "head": h); "direction":
            "backward" checks dQ, dK, dV (random inputs only)
  check_plan   how many rows a check visits ("rows_planned"), after every rule
  check_part   check rows [lo, hi) of that plan ("rows": [lo, hi]): a partial report
  check_merge  merge partial reports ("parts": [...]) into check's report, with
               "complete": false when some planned rows were never checked
  gpu_plan  whether the chosen size fits a GPU's limits ("limits": {...}), and the
            plan of each kernel's run (planner.gpu_plan)
  probe_plan  the roofline probes' buffers and dispatches within a GPU's limits
            ("limits": {...}; planner.probe_plan)
  inputs    the seeded random Q, K, V (flat, row-major) for a GPU run
  check_output  check a GPU's O ("outputs": N·d floats) on those inputs
  backward_inputs  Q, K, V, dO and the float32 forward's O and L (flat) for a
            GPU backward run (N ≤ the backward check's limit)
  check_backward_output  check a GPU's dQ, dK, dV ("outputs": {name: N·d
            floats}) against float64 on those inputs
  time      all one press of Time needs before the GPU runs: the count, the GPU
            plans at N and at the check's N, the check's inputs and the roofline
            probes' plan ("limits", "subgroup_min_size"; "direction" as for count)
  time_checks  every kernel that Time ran at the check's N, checked in one request
            ("outputs": {kernel: what check_output, or check_backward_output, takes})
  float16   one head of the held-out sentences (facts/held_out_f16.json, or "data")
            through the float16 kernels' mirrors ("head": its index), and a GPU's O
            for the same runs ("outputs") against them (emulator.float16_mirrors)
  float16_plan  the float16 kernels' GPU plans for the held-out sentences ("lengths",
            "d", "heads", "limits", "subgroup_min_size"; planner.float16_plans)
  walk      the steps Count adds up, in marks the lab's picture draws
            (emulator.walk.picture); "direction" as for count
  validate  the rules alone
"""
from __future__ import annotations

import json
import math
import os
import time

import planner as _plan
from emulator import accuracy as _check
from emulator import backward as _backward
from emulator import mirrors as _mirrors
from emulator import traffic as _traffic
from emulator import walk as _walk
from emulator.i18n import _, group
from emulator.inputs import random_qkv
from emulator.tiling import (
    CHECK_MAX_N,
    COUNT_MAX_N,
    LESSON_KERNELS,
    MANIFEST,
    InputError,
    parse_bool,
    parse_int,
    parse_request,
)

MODEL_QKV_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              "facts", "probe_qkv.json")
HELD_OUT_F16_PATH = os.path.join(os.path.dirname(MODEL_QKV_PATH), "held_out_f16.json")


def _errors(exc: InputError) -> list:
    return [{"field": e.field, "message": e.message} for e in getattr(exc, "all", [exc])]


def _count(p: dict) -> dict:
    n, d, causal, m = p["n"], p["d"], p["causal"], p["workgroup_bytes"]
    selected = _traffic.walk(p["tiling"])
    plain = _traffic.count("plain", n, d, causal, m)
    fused = _traffic.count("fused", n, d, causal, m)
    timed = {}
    for name, entry in MANIFEST["kernels"].items():
        if name in LESSON_KERNELS or not entry.get("timed") or entry.get("direction", "forward") != "forward":
            continue  # the forward Time card times forward kernels only
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
        raise InputError("kernel", _("Check runs the lesson's kernels only ({names}).").format(
            names=", ".join(LESSON_KERNELS)))
    _mirrors.mirror_of(p["kernel"])  # a kernel without a float32 mirror is refused, saying so
    model = raw.get("input", "random") == "model"
    if model:
        h = parse_int("input", raw.get("head", 0), _("The model's head"))
        key = ("model", raw.get("model_path"), h, p["n"], p["d"])
    else:
        key = ("random", p["n"], p["d"], p["seed"])
    if _PREPARED.get("key") == key:
        return _PREPARED["value"]
    if model:
        data = _load_model_qkv(raw.get("model_path"))
        heads = data["heads"]
        if not 0 <= h < len(heads):
            raise InputError("input", _("The model has heads 0 to {last}; head {h} does not exist.").format(
                last=len(heads) - 1, h=h))
        head = heads[h]
        q, k, v = head["Q"], head["K"], head["V"]
        if len(q) != p["n"]:
            raise InputError("n", _("The model's sentence has N = {n} tokens; set N to {n}.").format(n=group(len(q))))
        if len(q[0]) != p["d"]:
            raise InputError("d", _("The model's sentence has head dimension d = {d}; choose d = {d}.").format(
                d=len(q[0])))
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
        raise InputError("op", _("check_part needs \"rows\": [lo, hi], two whole numbers.")) from None
    if not 0 <= lo < hi <= len(rows):
        raise InputError("op", _("check_part rows must satisfy 0 ≤ lo < hi ≤ {count}; got [{lo}, {hi}).").format(
            count=group(len(rows)), lo=lo, hi=hi))
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
        raise InputError("op", _("check_merge needs \"parts\": a list of check_part results."))
    try:
        report = _check.merge(parts, rows_planned=len(_planned_rows(p)))
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError("op", _("These check_part results cannot be merged: {error}").format(error=exc)) from None
    if (report["kernel"], report["n"], report["d"], report["causal"]) != (p["kernel"], p["n"], p["d"], p["causal"]):
        raise InputError("op", _("These check_part results belong to another check."))
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
        raise InputError("op", _("Expected N·d = {count} output values from the GPU.").format(count=group(n * d)))
    rows = [[float(x) if isinstance(x, (int, float)) else math.nan for x in outputs[i * d:(i + 1) * d]]
            for i in range(n)]
    q, k, v = random_qkv(n, d, p["seed"])
    report = _check.check_output(rows, q, k, v, p["causal"], p["kernel"], p["workgroup_bytes"])
    report["seed"] = p["seed"]
    report["label"] = MANIFEST["kernels"][p["kernel"]].get("label", p["kernel"])
    return report


def _kernel_list(raw):
    """The request's optional "kernels" (a list of manifest names), or None."""
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(k, str) for k in raw):
        raise InputError("kernel", _("kernels must be a list of kernel names."))
    return raw


def _gpu_plan_op(request: dict, raw: dict) -> dict:
    """planner.gpu_plan for the page: "limits" (the adapter's, WebGPU names),
    "kernels" (default: the chosen kernel, plain and fused), "optional" ("timed" or a
    list), "subgroup_min_size", "instrumented" (default true)."""
    optional = request.get("optional")
    if optional != "timed":
        optional = _kernel_list(optional) or ()
    return _plan.gpu_plan(
        parse_request(raw, "count"), request.get("limits") or {}, _kernel_list(request.get("kernels")),
        parse_int("limits", request.get("subgroup_min_size", 0), "subgroup_min_size"),
        instrumented=parse_bool("instrumented", request.get("instrumented", True), "instrumented"),
        optional=optional)


def _direction(raw: dict) -> str:
    """"forward" (the default) or "backward" (asked for, or a kernel the manifest
    declares backward); raises InputError (field "direction") otherwise."""
    direction = str(raw.get("direction") or "forward").strip().lower()
    if direction not in ("forward", "backward"):
        raise InputError("direction", _("Direction must be forward or backward, not {direction}.").format(
            direction=repr(direction)))
    declared = MANIFEST["kernels"].get(str(raw.get("kernel", "")), {}).get("direction")
    return "backward" if declared == "backward" else direction


def _backward_request(raw: dict, purpose: str) -> dict:
    """parse_request for a backward kernel, named as in the lab ("fused") or the manifest."""
    return parse_request(dict(raw, kernel=_backward.kernel_name(str(raw.get("kernel", "fused")))), purpose)


def _backward_count(p: dict) -> dict:
    """Bytes per tensor of a backward kernel (the manifest walk), its forward's, and the ratio."""
    n, d, causal, m = p["n"], p["d"], p["causal"], p["workgroup_bytes"]
    selected = _traffic.walk(p["tiling"])
    forward = _traffic.count(_backward.forward_of(p["kernel"]), n, d, causal, m)
    plain = _traffic.count(_backward.kernel_name("plain"), n, d, causal, m)
    fused = _traffic.count(_backward.kernel_name("fused"), n, d, causal, m)
    return {
        "direction": "backward",
        "selected": selected.as_dict(),
        "schedule": _traffic.one_tile_schedule(p["tiling"]),
        "forward": forward.as_dict(),
        "backward_to_forward_ratio": selected.total_bytes / forward.total_bytes,
        "plain": plain.as_dict(),
        "fused": fused.as_dict(),
        "ratio": plain.total_bytes / fused.total_bytes,
        "label": MANIFEST["kernels"][p["kernel"]]["label"],
    }


def _backward_check(p: dict, raw: dict) -> dict:
    if raw.get("input", "random") != "random":
        raise InputError("input", _("The backward check runs on random inputs only."))
    start = time.perf_counter()
    report = _backward.check(p["kernel"], p["n"], p["d"], p["causal"], p["seed"], p["workgroup_bytes"])
    report["input"] = "random"
    report["label"] = MANIFEST["kernels"][p["kernel"]]["label"]
    report["seconds"] = time.perf_counter() - start
    return report


def _backward_inputs_op(p: dict, raw: dict) -> dict:
    """The inputs of a backward run on a GPU: seeded Q, K, V (emulator.inputs), dO
    (emulator.backward.random_do), and the float32 fused forward's O and L
    (emulator.backward.forward32, key tiles of the lesson's B_c), flat row-major
    float32 values; N ≤ emulator.backward.CHECK_MAX_N, as the check that follows needs.
    """
    n, d = p["n"], p["d"]
    _backward_limit(n)
    q, k, v = random_qkv(n, d, p["seed"])
    do = _backward.random_do(n, d, p["seed"])
    o, lse = _backward.forward32(q, k, v, p["causal"], block_cols=p["tiling"].block_cols)
    return {"n": n, "d": d, "seed": p["seed"], "causal": p["causal"], "kernel": p["kernel"],
            "block_rows": p["tiling"].block_rows, "block_cols": p["tiling"].block_cols,
            "Q": _flat(q), "K": _flat(k), "V": _flat(v), "dO": _flat(do), "O": _flat(o), "L": list(lse)}


def _backward_limit(n: int) -> None:
    if n > _backward.CHECK_MAX_N:
        raise InputError("n", _backward.too_large_message(n))


def _check_backward_output_op(p: dict, outputs) -> dict:
    """Hold dQ, dK, dV computed elsewhere (a GPU) to float64, on the seeded inputs of
    ``backward_inputs``, within emulator.backward.bounds (first-order float32, per entry).

    outputs: {"dQ": [...], "dK": [...], "dV": [...]}, N·d floats each, row-major.
    Returns the shape of emulator.backward.check_arrays's report (no mirror is run:
    "tensors" compares the GPU's gradients) plus "seed" and "label".
    """
    n, d, causal = p["n"], p["d"], p["causal"]
    _backward_limit(n)
    if not isinstance(outputs, dict):
        raise InputError("op", _("check_backward_output needs \"outputs\": {dQ, dK, dV}."))
    got = {}
    for name in ("dQ", "dK", "dV"):
        flat = outputs.get(name)
        if not isinstance(flat, list) or len(flat) != n * d:
            raise InputError("op", _("Expected N·d = {count} values of {name} from the GPU.").format(
                count=group(n * d), name=name))
        got[name] = [[float(x) if isinstance(x, (int, float)) else math.nan for x in flat[i * d:(i + 1) * d]]
                     for i in range(n)]
    q, k, v = random_qkv(n, d, p["seed"])
    do = _backward.random_do(n, d, p["seed"])
    ref = _backward.reference(q, k, v, do, causal)
    bnd = _backward.bounds(q, k, v, do, ref, causal, None, p["tiling"].block_cols)
    tensors = {t: _backward.compare(got[t], ref[t], bnd[t]) for t in ("dQ", "dK", "dV")}
    return {"kernel": p["kernel"], "direction": "backward", "n": n, "d": d, "causal": causal,
            "workgroup_bytes": p["workgroup_bytes"], "seed": p["seed"],
            "passed": all(t["passed"] for t in tensors.values()), "tensors": tensors,
            "identity_residual": ref["identity_residual"],
            "label": MANIFEST["kernels"][p["kernel"]]["label"]}


#: The forward Time's check: each kernel's O at N ≤ this many rows goes through float64
#: before it is timed (the backward's is emulator.backward.CHECK_MAX_N).
TIME_CHECK_N = 300


class _Partly(InputError):
    """An InputError raised after some of a Time request's answer was made: ``done``
    holds that part ({"counts": ...}), which the page shows before the message."""

    def __init__(self, exc: InputError, done: dict):
        super().__init__(exc.field, exc.message)
        self.all = getattr(exc, "all", [exc])
        self.done = done


def _time_kernels(direction: str, counts: dict) -> list:
    """The kernels a backward Time plans: the plain and fused backward kernels the count
    compares with (their names come with it), then the chosen one."""
    pair = [counts["plain"]["kernel"], counts["fused"]["kernel"]]
    chosen = counts["selected"]["kernel"]
    return pair if chosen in pair else [*pair, chosen]


def _probe_plan_reply(limits: dict) -> dict:
    """planner.probe_plan as a reply of its own: the roofline after Time may fail alone."""
    try:
        return {"ok": True, "result": _plan.probe_plan(limits)}
    except InputError as exc:
        return {"ok": False, "errors": _errors(exc)}


def _time_op(request: dict, raw: dict) -> dict:
    """Everything one press of Time needs before the GPU runs, in one reply.

    request: "params" (the form), "limits" (the adapter's, WebGPU names) and
    "subgroup_min_size"; "direction" in the params picks the forward or backward Time.
    Time runs the build without counters. Returns {"direction", "counts" (op count's
    result), "plan" (op gpu_plan's at N: forward, the lesson's kernels plus the timed ones
    that fit, "optional"; backward, the plain, fused and chosen backward kernels),
    "check_n" (the check's N: min(N, TIME_CHECK_N), or the backward check's limit),
    "check_plan" (the same kernels planned at check_n), "inputs" (op inputs's, or
    backward_inputs's, at check_n) and "probe_plan" (op probe_plan's reply, {ok, result |
    errors})}. Raises InputError as those ops do, in their order; an error after the
    count carries it (``done``: {"counts"}), since the page shows it before the message.
    """
    backward = _direction(raw) == "backward"
    gpu = {"limits": request.get("limits") or {}, "subgroup_min_size": request.get("subgroup_min_size", 0),
           "instrumented": False}
    if backward:  # as the lab's backward Time always did: the count first, shown above any refusal
        p = _backward_request(raw, "count")
        counts = _backward_count(p)
        try:
            plan = _gpu_plan_op({**gpu, "kernels": _time_kernels("backward", counts)}, raw)
        except InputError as exc:
            raise _Partly(exc, {"counts": counts}) from None
    else:  # the plan first: its refusal (this GPU's limits) is the message for a size
        plan = _gpu_plan_op({**gpu, "optional": "timed"}, raw)
        p = parse_request(raw, "count")
        counts = _count(p)
    check_n = _time_check_n(p["n"], backward)
    small = dict(raw, n=str(check_n))
    try:
        check_plan = _gpu_plan_op({**gpu, "kernels": plan["kernels"]}, small)
        if backward:
            inputs = _backward_inputs_op(_backward_request(small, "count"), small)
        else:
            inputs = _inputs_op(parse_request(small, "check"))
    except InputError as exc:
        raise _Partly(exc, {"counts": counts}) from None
    return {"direction": "backward" if backward else "forward", "counts": counts, "plan": plan,
            "check_n": check_n, "check_plan": check_plan, "inputs": inputs,
            "probe_plan": _probe_plan_reply(gpu["limits"])}


def _time_check_n(n: int, backward: bool) -> int:
    """The N a Time checks its kernels at: N, at most TIME_CHECK_N (forward) or the
    backward check's limit (emulator.backward.CHECK_MAX_N)."""
    return min(n, _backward.CHECK_MAX_N if backward else TIME_CHECK_N)


def _time_checks_op(raw: dict, outputs) -> dict:
    """Check every kernel a Time ran at its check size, in one request.

    raw: the form (as op time's "params"); outputs: {kernel: what op check_output (forward)
    or check_backward_output (backward) takes as "outputs" for it}. The check's N is op
    time's check_n. Returns {kernel: that op's result, or {"errors": [{field, message}]}
    where it refused}, in the order of ``outputs``.
    """
    if not isinstance(outputs, dict) or not outputs:
        raise InputError("op", _("time_checks needs \"outputs\": each kernel's values, by its name."))
    backward = _direction(raw) == "backward"
    p = _backward_request(raw, "count") if backward else parse_request(raw, "count")
    check_n = _time_check_n(p["n"], backward)
    reports = {}
    for kernel, values in outputs.items():
        small = dict(raw, kernel=kernel, n=str(check_n))
        try:
            if backward:
                reports[kernel] = _check_backward_output_op(_backward_request(small, "count"), values)
            else:
                reports[kernel] = _check_output_op(parse_request(small, "check"), values)
        except InputError as exc:
            reports[kernel] = {"errors": _errors(exc)}
    return reports


def _inputs_op(p: dict) -> dict:
    """The seeded random Q, K, V of a GPU run (emulator.inputs), flat row-major."""
    q, k, v = random_qkv(p["n"], p["d"], p["seed"])
    return {"n": p["n"], "d": p["d"], "seed": p["seed"], "Q": _flat(q), "K": _flat(k), "V": _flat(v)}


def _float16_op(request: dict) -> dict:
    """emulator.float16_mirrors.held_out_report for the request's "head" (an index), on its "data"
    (facts/held_out_f16.json parsed; read from the file when absent) and "outputs"."""
    from emulator import float16_mirrors as _f16

    index = parse_int("op", request.get("head", 0), _("The float16 card's head"))
    data = request.get("data")
    try:
        if data is None:
            with open(HELD_OUT_F16_PATH, encoding="utf-8") as f:
                data = json.load(f)
        return _f16.held_out_report(data, index, request.get("outputs"))
    except (OSError, ValueError) as exc:
        raise InputError("op", _("The float16 card could not run: {error}").format(error=exc)) from None


def _float16_plan_op(request: dict) -> dict:
    """planner.float16_plans for the float16 card: the request's "lengths" (the
    sentences' N), "d", "heads", "limits" and "subgroup_min_size"."""
    d = parse_int("d", request.get("d"), _("Head dimension d"))
    heads = parse_int("op", request.get("heads", 1), _("The float16 card's heads"))
    sub = parse_int("limits", request.get("subgroup_min_size", 0), "subgroup_min_size")
    try:
        return _plan.float16_plans(request.get("lengths") or [], d, heads, request.get("limits") or {}, sub)
    except ValueError as exc:
        raise InputError("op", _("The float16 card could not run: {error}").format(error=exc)) from None


def handle(request: dict) -> dict:
    """Answer one request from the page (see module docstring). Never raises."""
    op = request.get("op") if isinstance(request, dict) else None
    raw = (request.get("params") or {}) if isinstance(request, dict) else {}
    try:
        if op == "count" and _direction(raw) == "backward":
            result = _backward_count(_backward_request(raw, "count"))
        elif op == "count":
            result = _count(parse_request(raw, "count"))
        elif op == "check" and _direction(raw) == "backward":
            result = _backward_check(_backward_request(raw, "check"), raw)
        elif op == "check":
            result = _check_op(parse_request(raw, "check"), raw)
        elif op == "check_plan":
            result = _check_plan_op(parse_request(raw, "check"), raw)
        elif op == "check_part":
            result = _check_part_op(parse_request(raw, "check"), raw, request.get("rows"))
        elif op == "check_merge":
            result = _check_merge_op(parse_request(raw, "check"), raw, request.get("parts"))
        elif op == "gpu_plan":
            result = _gpu_plan_op(request, raw)
        elif op == "probe_plan":
            result = _plan.probe_plan(request.get("limits") or {})
        elif op == "inputs":
            result = _inputs_op(parse_request(raw, "check"))
        elif op == "time":
            result = _time_op(request, raw)
        elif op == "time_checks":
            result = _time_checks_op(raw, request.get("outputs"))
        elif op == "backward_inputs":
            result = _backward_inputs_op(_backward_request(raw, "count"), raw)
        elif op == "check_backward_output":
            result = _check_backward_output_op(_backward_request(raw, "count"), request.get("outputs"))
        elif op == "check_output":
            result = _check_output_op(parse_request(raw, "check"), request.get("outputs"))
        elif op == "float16":
            result = _float16_op(request)
        elif op == "float16_plan":
            result = _float16_plan_op(request)
        elif op == "walk":
            p = _backward_request(raw, "count") if _direction(raw) == "backward" else parse_request(raw, "count")
            result = _walk.picture(p["tiling"])
        elif op == "validate":
            p = parse_request(raw, raw.get("purpose", "count"))
            result = {k: v for k, v in p.items() if k != "tiling"}
        elif op == "limits":
            result = {"count_max_n": COUNT_MAX_N, "check_max_n": CHECK_MAX_N,
                      "backward_check_max_n": _backward.CHECK_MAX_N}
        else:
            message = _("Unknown request {op}.").format(op=repr(op))
            return {"ok": False, "op": op, "errors": [{"field": "op", "message": message}]}
    except _Partly as exc:
        return {"ok": False, "op": op, "errors": _errors(exc), "done": exc.done}
    except InputError as exc:
        return {"ok": False, "op": op, "errors": _errors(exc)}
    if op in FIGURE_OPS:
        result = exact_digits(result)
    return {"ok": True, "op": op, "result": result}


EXACT_DIGITS = 6  # significant digits of a check's float figures that every platform agrees on
FIGURE_OPS = ("check", "check_merge", "check_output", "check_backward_output", "time_checks")  # replies a learner reads


def exact_digits(x):
    """``x`` with every finite float rounded to :data:`EXACT_DIGITS` significant digits.

    The float64 references call the platform's exp and log: glibc's in CPython,
    musl's in the page's Pyodide. Neither is correctly rounded, so the two can
    differ in the last bit, and a figure such as fused-no-rescale's largest error
    at N = 256, d = 64, seed 1 ended …77404 in the CLI and …77401 in the page.
    An error is a difference of values near 1, so that bit moves it by about
    1e-17 in absolute terms (a float32 mirror's error of 3e-8 moved in its 10th
    digit); six significant digits of any error above 1e-10
    sit 10,000 times above that, so the page, the CLI and its --json give the
    same figures. Verdicts are decided before rounding; the page shows three
    digits; "seconds" is a timing, not a figure.
    """
    if isinstance(x, float) and math.isfinite(x) and x != 0.0:
        return float(f"{x:.{EXACT_DIGITS}g}")
    if isinstance(x, dict):
        return {k: exact_digits(v) for k, v in x.items()}
    if isinstance(x, list):
        return [exact_digits(v) for v in x]
    if isinstance(x, tuple):
        return tuple(exact_digits(v) for v in x)
    return x


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
        reply = {"ok": False, "op": None, "errors": [{"field": "op", "message": _("Request is not a JSON object.")}]}
    else:
        reply = handle(request)
    return json.dumps(_clean(reply), allow_nan=False, sort_keys=True)
