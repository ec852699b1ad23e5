"""One press of Time, two worker requests (lab_api/__init__.py ops "time" and "time_checks").

Op "time" answers what the lab's Time asked for in 4 requests before (gpu_plan at N,
count, gpu_plan at the check's N, inputs; the backward's count, gpu_plan twice and
backward_inputs) plus the roofline's probe_plan, and "time_checks" what it asked for in
one check_output (or check_backward_output) per kernel. Each test holds the merged reply
to the ops it replaces, figure for figure and message for message.
"""
from __future__ import annotations

import json
import math

import pytest

import lab_api as api
import planner
from emulator import backward as bwd
from emulator.inputs import random_qkv

# A SwiftShader-like adapter: 1 GiB per storage buffer, so S at N = 20,000 does not fit.
LIMITS = {"maxStorageBufferBindingSize": 1 << 30, "maxBufferSize": 1 << 30}


def form(n="1000", d="16", direction="forward", kernel=None, **over):
    kernel = kernel or ("fused-backward" if direction == "backward" else "fused")
    return {"direction": direction, "kernel": kernel, "n": str(n), "d": str(d), "causal": False,
            "workgroup_bytes": "16384", "seed": "3", "input": "random", "head": "0", **over}


def ask(op, params, **extra):
    """handle_json, as the worker calls it: the reply the page reads (non-finite floats as strings)."""
    return json.loads(api.handle_json(json.dumps({"op": op, "params": params, **extra})))


def time_reply(params, limits=LIMITS):
    return ask("time", params, limits=limits, subgroup_min_size=0)


@pytest.mark.parametrize("n", [40, 1000])
def test_the_forward_time_reply_is_what_its_four_requests_and_the_probes_plan_were(n):
    p = form(n)
    gpu = {"limits": LIMITS, "subgroup_min_size": 0, "instrumented": False}
    got = time_reply(p)
    assert got["ok"], got
    r = got["result"]
    plan = ask("gpu_plan", p, **gpu, optional="timed")["result"]
    assert r["plan"] == plan
    assert r["counts"] == ask("count", p)["result"]
    assert r["check_n"] == min(n, api.TIME_CHECK_N)
    small = dict(p, n=str(r["check_n"]))
    assert r["check_plan"] == ask("gpu_plan", small, **gpu, kernels=plan["kernels"])["result"]
    assert r["inputs"] == ask("inputs", small)["result"]
    assert r["probe_plan"] == {"ok": True, "result": ask("probe_plan", {}, limits=LIMITS)["result"]}
    # every kernel Time checks (the distinct runs of plain, fused and the tuned ones kept) is planned
    assert {"plain", "fused", *plan["optional"]} <= set(r["check_plan"]["plans"])


def test_the_backward_time_reply_is_what_its_four_requests_and_the_probes_plan_were():
    p = form(500, direction="backward", kernel="fused-backward-no-D")
    gpu = {"limits": LIMITS, "subgroup_min_size": 0, "instrumented": False}
    r = time_reply(p)["result"]
    counts = ask("count", p)["result"]
    assert r["counts"] == counts
    kernels = ["plain-backward", "fused-backward", "fused-backward-no-D"]  # the pair the count names, then the chosen
    assert [counts["plain"]["kernel"], counts["fused"]["kernel"], counts["selected"]["kernel"]] == kernels
    assert r["plan"] == ask("gpu_plan", p, **gpu, kernels=kernels)["result"]
    assert r["check_n"] == bwd.CHECK_MAX_N
    small = dict(p, n=str(bwd.CHECK_MAX_N))
    assert r["check_plan"] == ask("gpu_plan", small, **gpu, kernels=kernels)["result"]
    assert r["inputs"] == ask("backward_inputs", dict(small, kernel=counts["selected"]["kernel"]))["result"]
    assert r["probe_plan"]["ok"] and r["probe_plan"]["result"] == planner.probe_plan(LIMITS)


BAD = {"N = 0": {"n": "0"}, "N = -5": {"n": "-5"}, "N = 10⁹": {"n": "1e9"}, "N = text": {"n": "text"},
       "N empty": {"n": ""}, "d = 17": {"d": "17"}, "a bad seed": {"seed": "-1"},
       "S past the buffer limit": {"n": "20000"}, "M too small for d = 128": {"d": "128", "workgroup_bytes": "8192"}}


@pytest.mark.parametrize("change", BAD.values(), ids=list(BAD))
def test_bad_input_gets_the_forward_plans_errors_and_nothing_else(change):
    p = form(**change)
    got = time_reply(p)
    want = ask("gpu_plan", p, limits=LIMITS, subgroup_min_size=0, instrumented=False, optional="timed")
    assert not got["ok"] and not want["ok"]
    assert got["errors"] == want["errors"]
    assert "done" not in got and "result" not in got   # the page keeps what it shows


@pytest.mark.parametrize("change", [c for c in BAD.values() if c != {"n": "20000"}],
                         ids=[k for k in BAD if k != "S past the buffer limit"])
def test_bad_input_gets_the_backward_counts_errors_and_nothing_else(change):
    p = form(direction="backward", **change)
    got = time_reply(p)
    want = ask("count", p)
    assert not got["ok"] and not want["ok"]
    assert got["errors"] == want["errors"]
    assert "done" not in got


def test_a_backward_size_past_the_gpus_limits_brings_its_count_with_the_plans_refusal():
    """The backward Time always showed its count before planning; the refusal comes with it."""
    p = form(20000, direction="backward", kernel="fused-backward")
    got = time_reply(p)
    want = ask("gpu_plan", p, limits=LIMITS, subgroup_min_size=0, instrumented=False,
               kernels=["plain-backward", "fused-backward"])
    assert not got["ok"] and got["errors"] == want["errors"]
    assert "maxStorageBufferBindingSize" in got["errors"][0]["message"]
    assert got["done"] == {"counts": ask("count", p)["result"]}


def attention64(q, k, v):
    """softmax(Q Kᵀ / √d) V in float64, row by row (math.fsum)."""
    out = []
    for qi in q:
        s = [math.fsum(a * b for a, b in zip(qi, kj, strict=True)) / math.sqrt(len(qi)) for kj in k]
        top = max(s)
        e = [math.exp(x - top) for x in s]
        z = math.fsum(e)
        out.append([math.fsum(w * vj[c] for w, vj in zip(e, v, strict=True)) / z for c in range(len(v[0]))])
    return [x for row in out for x in row]


def test_time_checks_gives_each_kernel_the_check_output_report_or_its_refusal():
    n, d = 40, 16
    p = form(n, d)
    q, k, v = random_qkv(n, d, 3)
    good = attention64(q, k, v)
    bad = list(good)
    bad[7] += 0.25
    outputs = {"plain": good, "fused": bad, "fused-fast": good[:-1]}
    got = ask("time_checks", p, outputs=outputs)
    assert got["ok"], got
    r = got["result"]
    assert set(r) == set(outputs)
    for kernel, values in outputs.items():
        one = ask("check_output", dict(p, kernel=kernel, n=str(n)), outputs=values)
        assert r[kernel] == (one["result"] if one["ok"] else {"errors": one["errors"]}), kernel
    assert r["plain"]["passed"] is True and r["fused"]["passed"] is False
    assert r["fused"]["first_failing_row"] == 0
    assert r["fused-fast"]["errors"][0]["message"] == f"Expected N·d = {n * d:,} output values from the GPU."


def test_time_checks_checks_at_the_check_n_whatever_n_the_form_holds():
    """The form says N = 1,000; Time ran the checks at TIME_CHECK_N, and so does time_checks."""
    n = api.TIME_CHECK_N
    q, k, v = random_qkv(n, 16, 3)
    r = ask("time_checks", form(1000), outputs={"fused": attention64(q, k, v)})["result"]["fused"]
    assert r["n"] == n and r["passed"] is True


def test_backward_time_checks_are_check_backward_outputs():
    n, d = 40, 16
    p = form(n, d, direction="backward")
    q, k, v = random_qkv(n, d, 3)
    ref = bwd.reference(q, k, v, bwd.random_do(n, d, 3), False)
    flat = {t: [x for row in ref[t] for x in row] for t in ("dQ", "dK", "dV")}
    short = dict(flat, dV=flat["dV"][:-1])
    outputs = {"plain-backward": flat, "fused-backward": short}
    r = ask("time_checks", p, outputs=outputs)["result"]
    for kernel, values in outputs.items():
        one = ask("check_backward_output", dict(p, kernel=kernel, n=str(n)), outputs=values)
        assert r[kernel] == (one["result"] if one["ok"] else {"errors": one["errors"]}), kernel
    assert r["plain-backward"]["passed"] is True
    assert "dV" in r["fused-backward"]["errors"][0]["message"]


def test_time_checks_without_outputs_says_what_it_needs():
    got = ask("time_checks", form(), outputs={})
    assert not got["ok"] and got["errors"][0]["field"] == "op" and "outputs" in got["errors"][0]["message"]
