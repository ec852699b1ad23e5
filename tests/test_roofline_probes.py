"""The roofline probes (kernels_wgsl/probes/): planned within an adapter's
limits by planner.probe_plan, and run natively through wgpu-py (lavapipe here) by
cannery_host.probes, the code behind `python -m bench.bench_roofline`."""
from __future__ import annotations

import json
import math
import shutil

import pytest

import planner
from course import measured
from planner.shaders import DEFAULT_LIMITS, Shader, read_source


def test_probe_plan_sizes_fit_the_limits_they_are_given():
    p = planner.probe_plan({})
    copy, fma = p["copy"], p["fma"]
    # The default limits: a 64 MiB source and destination, one invocation per vec4.
    assert copy["buffers"] == {"src": 64 * 2**20, "dst": 64 * 2**20}
    assert copy["n4"] == 64 * 2**20 // 16 and copy["bytes_per_run"] == 2 * 64 * 2**20
    assert copy["dispatch"] == [copy["n4"] // 256, 1, 1] and copy["workgroup_size"] == [256, 1, 1]
    assert fma["invocations"] == 2**20 and fma["dispatch"] == [4096, 1, 1]
    assert fma["flop_per_step"] == 8 * 4 * 2  # eight vec4 FMA chains, 2 FLOP an FMA
    # A small adapter: buffers shrink to whole workgroups of vec4s, dispatches fold into y.
    small = planner.probe_plan({"maxStorageBufferBindingSize": 1_000_000, "maxComputeWorkgroupsPerDimension": 1000})
    assert small["copy"]["buffers"]["src"] == 1_000_000 // 4096 * 4096
    assert small["copy"]["dispatch"] == [small["copy"]["n4"] // 256, 1, 1]
    assert small["fma"]["dispatch"] == [1000, 5, 1] and small["fma"]["invocations"] == 5000 * 256
    for spec in (copy, fma):
        assert max(spec["dispatch"]) <= DEFAULT_LIMITS["maxComputeWorkgroupsPerDimension"]
        assert max(spec["buffers"].values()) <= DEFAULT_LIMITS["maxStorageBufferBindingSize"]
        shader = Shader(read_source(spec["file"]))
        assert list(shader.workgroup_size()) == spec["workgroup_size"]
        assert shader.storage_buffers() == len(spec["bindings"]) - 1  # the params are a uniform
    with pytest.raises(planner.InputError):
        planner.probe_plan({"maxStorageBufferBindingSize": 1000})


def test_the_worker_op_answers_the_same_plan():
    from lab_api import handle_json

    reply = json.loads(handle_json(json.dumps({"op": "probe_plan", "params": {}, "limits": {}})))
    assert reply["ok"] and reply["result"] == json.loads(json.dumps(planner.probe_plan({})))


@pytest.mark.gpu
def test_probes_on_wgpu_measure_positive_plausible_roofs(tmp_path):
    try:
        from cannery_host.wgpu_runner import KernelError, Runner
    except ImportError as e:
        pytest.skip(f"wgpu-py is not importable: {e}")
    try:
        Runner()
    except KernelError as e:
        pytest.skip(f"no WebGPU adapter for wgpu-py: {e}")
    from bench import bench_roofline

    out = tmp_path / "roofline-h200.json"
    assert bench_roofline.main(["--json", str(out)]) == 0
    r = json.loads(out.read_text())
    bw, fl = r["bytes_per_second"], r["flop_per_second"]
    assert bw > 0 and fl > 0 and math.isfinite(bw) and math.isfinite(fl)
    # A CPU or a GPU: float32 FMA per byte copied lies between 0.5 and 1,000 on any
    # device we know (the H200's SGEMM and copy peaks give about 12).
    assert 0.5 < fl / bw < 1000
    assert r["ridge_flop_per_byte"] == pytest.approx(fl / bw)
    p = r["probes"]
    assert p["copy"]["bytes_per_run"] == p["plan"]["copy"]["bytes_per_run"]
    assert p["fma"]["flop_per_run"] == p["plan"]["fma"]["invocations"] * 64 * p["fma"]["iters"]
    assert math.isfinite(p["fma"]["checksum"]) and p["fma"]["checksum"] > 0
    assert r["date"] == r["started"][:10] and r["command"].startswith("python3 -m bench.bench_roofline")
    assert r["cpu_adapter"] == ("llvmpipe" in r["adapter"]["device"].lower())

    # The build's table takes a roofline file where it exists (here lavapipe's, in a copy
    # of bench/results/), with its date and command.
    for name in (measured.FORWARD, measured.BACKWARD):
        shutil.copyfile(measured.RESULTS / name, tmp_path / name)
    t = measured.table(tmp_path)
    assert t["roofline"]["bytes_per_second"] == bw and t["roofline"]["flop_per_second"] == fl
    assert t["roofline"]["date"] == r["date"]
    assert t["roofline"]["command"] == "python3 -m bench.bench_roofline --json bench/results/roofline-h200.json"
    assert t["roofline"]["file"] == "bench/results/roofline-h200.json"


def test_the_h200_table_names_dates_and_commands_its_sources(tmp_path):
    for name in (measured.FORWARD, measured.BACKWARD):
        shutil.copyfile(measured.RESULTS / name, tmp_path / name)
    t = measured.table(tmp_path)
    assert t["roofline"] is None  # not measured here: the page says so and draws no H200 roof
    fwd, bwd = t["forward"], t["backward"]
    assert (fwd["date"], bwd["date"]) == ("2026-12-04", "2026-12-01")  # the runs' "started" fields
    assert fwd["device"] == bwd["device"] == "NVIDIA H200"
    assert fwd["command"].startswith("python3 -m bench.bench_wgsl --n 1024 2048 4096 8192 ")
    assert fwd["command"].endswith("--json bench/results/h200-forward-rows-table.json "
                                   "--md bench/results/h200-forward-rows-table.md")
    assert bwd["command"].startswith("python3 -m bench.bench_wgsl_backward ")
    assert "--json bench/results/wgsl-backward-h200-final.json" in bwd["command"]
    # Forward: the rows a page would get (default limits, subgroups), with plain's passes.
    raw = json.loads((tmp_path / measured.FORWARD).read_text())
    d64 = next(s for s in fwd["sizes"] if s["d"] == 64 and s["n"] == 4096)
    want = [r for r in raw["rows"] if r["d"] == 64 and r["n"] == 4096 and r["limits"] == "default"
            and r["subgroups"] and "medianMs" in r]
    # one row per distinct run: those the plan folds are named in "same" instead
    folded = {x["kernel"] for x in d64["same"]}
    assert [k["kernel"] for k in d64["kernels"]] == [r["kernel"] for r in want if r["kernel"] not in folded]
    assert d64["kernels"][0]["medianMs"] == pytest.approx(want[0]["medianMs"], rel=1e-5)
    assert [p["pass"] for p in d64["passes"]] == ["scores", "softmax", "pv"]
    assert d64["kernels"][0]["intensity"] == pytest.approx(want[0]["intensity"], rel=1e-5)
    assert {(s["d"], s["causal"]) for s in bwd["sizes"]} == {(d, c) for d in (16, 64, 128) for c in (False, True)}
    assert t["conventions"]["softmax_flop_per_score"] == 5
    # A result file without a date of its own takes the commit that added it.
    undated = {k: v for k, v in raw.items() if k != "started"}
    (tmp_path / measured.FORWARD).write_text(json.dumps(undated))
    assert measured._date(undated, measured.RESULTS / measured.FORWARD) == "2026-12-04"


def test_the_build_writes_that_table(built_site):
    assert json.loads((built_site / "data" / "measured-h200.json").read_text()) == json.loads(
        json.dumps(measured.table()))


def test_the_h200_arithmetic_roof_is_the_higher_of_the_fma_probe_and_the_sgemm_and_says_which():
    """The FMA probe's 44.6 TFLOP/s sat under the 50 TFLOP/s SGEMM the forward bench
    recorded on the same H200: the roof drawn is the SGEMM's."""
    roof = json.loads((measured.RESULTS / measured.ROOFLINE).read_text())
    fwd = json.loads((measured.RESULTS / measured.FORWARD).read_text())
    sgemm = fwd["ceilings"]["sgemm_gflops"] * 1e9
    r = measured.table()["roofline"]
    assert sgemm > roof["flop_per_second"]  # the case the issue found
    assert r["flop_per_second"] == sgemm and r["flop_roof"] == "sgemm"
    assert r["fma_flop_per_second"] == roof["flop_per_second"]
    assert r["ridge_flop_per_byte"] == pytest.approx(sgemm / roof["bytes_per_second"])
    # another device's SGEMM is no roof for this one; a probe above the SGEMM stays the roof
    other = {**fwd, "ceilings": {**fwd["ceilings"], "device": "llvmpipe"}}
    assert measured.arithmetic_roof(roof, other)["flop_roof"] == "fma"
    high = {**roof, "flop_per_second": 2 * sgemm}
    assert measured.arithmetic_roof(high, fwd)["flop_per_second"] == 2 * sgemm


def test_the_h200_table_lists_each_distinct_run_once_as_the_visitors_time_does():
    """fused, fused-fast and fused-fast-16k were three rows where two were the same shader at
    the same tiles and the same counted bytes: every size now keeps one
    row per distinct run (plan.same_runs) and names the others."""
    from emulator.tiling import M_DEFAULT

    folded = 0
    for direction in ("forward", "backward"):
        for s in measured.table()[direction]["sizes"]:
            names = [k["kernel"] for k in s["kernels"]]
            plans = {}
            for k in names:
                try:
                    plans[k] = planner.kernel_plan(k, s["n"], s["d"], s["causal"], M_DEFAULT, s["heads"], 32)
                except Exception:  # a kernel the planner cannot plan here is never folded
                    continue
            bytes_of = {k["kernel"]: k.get("bytes") for k in s["kernels"]}
            repeats = {k: a for k, a in planner.same_runs(plans).items() if bytes_of[k] == bytes_of[a]}
            assert repeats == {}, (direction, s["n"], s["d"], s["causal"], repeats)
            for x in s["same"]:
                assert x["as"] in names and x["kernel"] not in names
            folded += len(s["same"])
            if direction == "forward" and s["d"] == 16 and not s["causal"] and s["n"] == 1024:
                assert {x["kernel"] for x in s["same"]} == {"fused-fast", "fused-fast-16k"}
    assert folded > 0


def test_the_fair_plain_baseline_is_read_from_its_run_with_the_fastest_fused_of_that_run():
    """The Time card's H200 figures set the lesson's plain beside plain-reg (plain's bytes at
    fused-reg's register tiling): per size, plain-reg's median and the fastest fused kernel
    of the same run at any limits, read from the run's rows (docs/BENCHMARKS.md, "A plain
    baseline as well made as the fused one": 2.40×, 1.34×, 0.97× at d = 16, 64, 128)."""
    raw = json.loads((measured.RESULTS / measured.FAIR_PLAIN).read_text(encoding="utf-8"))
    fair = measured.table()["fair_plain"]
    assert fair["file"] == f"bench/results/{measured.FAIR_PLAIN}" and fair["kernel"] == "plain-reg"
    assert fair["device"] == "NVIDIA H200" and fair["date"] == "2026-12-02" and "plain-reg" in fair["command"]
    timed = [r for r in raw["rows"] if r.get("medianMs") is not None]
    assert [(f["n"], f["d"], f["causal"]) for f in fair["sizes"]] == [(4096, 16, False), (4096, 64, False),
                                                                      (4096, 128, False)]
    for f in fair["sizes"]:
        here = [r for r in timed if (r["n"], r["d"], r["causal"], r["heads"]) == (f["n"], f["d"], f["causal"], 32)]
        fastest = min((r for r in here if r["kernel"].startswith("fused")), key=lambda r: r["medianMs"])
        assert f["fused"]["kernel"] == fastest["kernel"]
        assert f["fused"]["medianMs"] == pytest.approx(fastest["medianMs"], rel=1e-5)
        reg = next(r for r in here if r["kernel"] == "plain-reg")
        assert f["plain_reg_ms"] == pytest.approx(reg["medianMs"], rel=1e-5)
    ratios = [round(f["plain_reg_ms"] / f["fused"]["medianMs"], 2) for f in fair["sizes"]]
    assert ratios == [2.40, 1.34, 0.97]
    assert measured.fair_plain([r for r in raw["rows"] if r["kernel"] != "plain-reg"]) == []


@pytest.mark.gpu
def test_the_backward_bench_holds_passes_to_the_roofline_copy_probe_and_no_other():
    """The backward bench once reported its own WGSL copy kernel's 1,725 GB/s beside the
    roofline probe's 3,979 GB/s on the same H200: one copy ceiling,
    measured one way. Its ceiling is probes.measure_copy over probe_plan's copy."""
    from bench import bench_wgsl_backward as bwd
    from cannery_host.wgpu_runner import KernelError, Runner

    assert not hasattr(bwd, "wgsl_copy_ceiling") and not hasattr(bwd, "COPY_SHADER")
    # a run's ceiling is the probe's, never PyTorch's or another kernel's
    run = {"ceilings": {"probe": {"copy_gbps": 3979.0}, "torch": {"copy_gbps": 4127.7}}}
    assert bwd.copy_gbps(run) == (3979.0, "the roofline's copy probe")
    assert bwd.copy_gbps({"ceilings": {"torch": {"copy_gbps": 4127.7}}}) == (None, None)
    try:
        runner = Runner()
    except KernelError as e:
        pytest.skip(f"no WebGPU adapter for wgpu-py: {e}")
    c = bwd.copy_ceiling(runner)
    plan = planner.probe_plan(runner.limits)
    assert c["copy_bytes"] == plan["copy"]["bytes_per_run"]
    assert c["copy_gbps"] == pytest.approx(c["copy_bytes"] / (c["copy_ms"] / 1e3) / 1e9)
    assert c["shader"].startswith("probes/copy.wgsl")
