"""The roofline probes (kernels_wgsl/probes/) on a native WebGPU device through wgpu-py.

The same shaders, the same plan (planner.probe_plan, from the device's limits) and the
same sample rule as the page (site/static/js/gpu/probes.js): a warm-up run, one run timed to
size the work, then ``samples`` samples of at least ``sample_ms`` each (copy: that many
copies in one command buffer; fma: that many FMA steps a chain), median reported. GPU
timestamps where the device has them, else the wall clock until the work is done.

Units: bandwidth in bytes per second of bytes read plus written (the copy reads and writes
each byte once); arithmetic in FLOP per second, an FMA counting 2 FLOP. Sources: the
roofline model, Williams, Waterman and Patterson, CACM 52(4), 2009.
"""
from __future__ import annotations

import math
import struct
import time

import numpy as np

import planner as _plan
from planner.shaders import read_source

from .wgpu_runner import KernelError, Runner


def _pipeline(runner: Runner, spec: dict):
    dev = runner.device
    module = dev.create_shader_module(code=read_source(spec["file"]))
    msgs = [m for m in module.get_compilation_info_sync() if m.type == "error"]
    if msgs:
        raise KernelError(f"{spec['file']}: {msgs}")
    return dev.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": spec["entry_point"]})


def _params(runner: Runner, n4: int, iters: int, a: float, b: float):
    wgpu = runner.wgpu
    return runner.device.create_buffer_with_data(
        data=struct.pack("<IIff", n4, iters, a, b), usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST)


def _timer(runner: Runner, pipe, group, dispatch):
    """submit(reps) -> ms of GPU time for reps dispatches in one compute pass."""
    dev, wgpu = runner.device, runner.wgpu

    def submit(reps: int) -> float:
        enc = dev.create_command_encoder()
        qs = tw = None
        if runner.timestamps:
            qs = dev.create_query_set(type="timestamp", count=2)
            tw = {"query_set": qs, "beginning_of_pass_write_index": 0, "end_of_pass_write_index": 1}
        cpass = enc.begin_compute_pass(timestamp_writes=tw)
        cpass.set_pipeline(pipe)
        cpass.set_bind_group(0, group)
        for _ in range(reps):
            cpass.dispatch_workgroups(*dispatch)
        cpass.end()
        if qs is not None:
            rb = dev.create_buffer(size=16, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
            enc.resolve_query_set(qs, 0, 2, rb, 0)
        t0 = time.perf_counter()
        dev.queue.submit([enc.finish()])
        runner._wait()
        wall = (time.perf_counter() - t0) * 1e3
        if qs is None:
            return wall
        ts = np.frombuffer(dev.queue.read_buffer(rb), np.uint64)
        return float(ts[1] - ts[0]) / 1e6 if ts[1] > ts[0] else wall

    return submit


def calibrate(run, start: int, most: int, target_ms: float) -> tuple[int, float]:
    """The sample rule's first half (manifest "probes"): ``run(k)`` -> ms for k units of
    work; grow k eightfold from ``start`` until a run takes target_ms / 4 (or k reaches
    ``most``), then scale it to target_ms. Returns (k, ms of the last run)."""
    k = start
    t = run(k)
    while t < target_ms / 4 and k < most:
        k = min(most, k * 8)
        t = run(k)
    k = int(min(most, max(start, math.ceil(k * target_ms / max(t, 1e-6)))))
    return k, t


def samples_within(run, k: int, plan: dict, deadline: float) -> list[float]:
    """The sample rule's second half: up to plan["samples"] runs of k units while the
    deadline (time.perf_counter seconds) allows, at least one; ms per unit, sorted."""
    out = []
    while len(out) < plan["samples"]:
        t0 = time.perf_counter()
        out.append(run(k) / k)
        if time.perf_counter() + (time.perf_counter() - t0) > deadline:
            break
    return sorted(out)


def measure_copy(runner: Runner, plan: dict, deadline: float) -> dict:
    """The copy probe: {"bytes_per_second", "bytes_per_run", "ms_per_run", "samples" (ms per
    run), "reps" (runs a sample), "method"}."""
    spec = plan["copy"]
    dev = runner.device
    src = runner._storage(spec["buffers"]["src"], np.ones(spec["buffers"]["src"] // 4, np.float32))
    dst = runner._storage(spec["buffers"]["dst"])
    params = _params(runner, spec["n4"], 0, 0.0, 0.0)
    pipe = _pipeline(runner, spec)
    group = dev.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[
        {"binding": spec["bindings"]["params"], "resource": {"buffer": params}},
        {"binding": spec["bindings"]["src"], "resource": {"buffer": src}},
        {"binding": spec["bindings"]["dst"], "resource": {"buffer": dst}}])
    submit = _timer(runner, pipe, group, spec["dispatch"])
    submit(1)  # warm-up
    reps, _t = calibrate(submit, 1, 1 << 20, plan["sample_ms"])
    times = samples_within(submit, reps, plan, deadline)
    med = times[len(times) // 2]
    copied = np.frombuffer(dev.queue.read_buffer(dst, 0, 64), np.float32)
    if not np.all(copied == 1.0):
        raise KernelError(f"the copy probe copied {copied[:4]} where the source holds 1.0")
    src.destroy()
    dst.destroy()
    return {"bytes_per_second": spec["bytes_per_run"] / (med / 1e3), "bytes_per_run": spec["bytes_per_run"],
            "ms_per_run": med, "samples": times, "reps": reps,
            "method": "timestamp" if runner.timestamps else "wall"}


def measure_fma(runner: Runner, plan: dict, deadline: float) -> dict:
    """The arithmetic probe: {"flop_per_second", "flop_per_run", "iters", "ms_per_run",
    "samples" (ms), "method", "checksum" (the mean of the written sums, finite)}."""
    spec = plan["fma"]
    dev = runner.device
    out = runner._storage(spec["buffers"]["out"])
    pipe = _pipeline(runner, spec)

    def run(iters: int) -> float:
        params = _params(runner, 0, iters, spec["a"], spec["b"])
        group = dev.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[
            {"binding": spec["bindings"]["params"], "resource": {"buffer": params}},
            {"binding": spec["bindings"]["out"], "resource": {"buffer": out}}])
        return _timer(runner, pipe, group, spec["dispatch"])(1)

    run(spec["min_iters"])  # warm-up
    iters, _t = calibrate(run, spec["min_iters"], spec["max_iters"], plan["sample_ms"])
    per_step = samples_within(run, iters, plan, deadline)
    med = per_step[len(per_step) // 2] * iters
    sums = np.frombuffer(dev.queue.read_buffer(out), np.float32)
    checksum = float(np.mean(sums, dtype=np.float64))
    if not math.isfinite(checksum):
        raise KernelError("the arithmetic probe's chains did not stay finite")
    out.destroy()
    flop = spec["invocations"] * spec["flop_per_step"] * iters
    return {"flop_per_second": flop / (med / 1e3), "flop_per_run": flop, "iters": iters, "ms_per_run": med,
            "samples": [x * iters for x in per_step], "method": "timestamp" if runner.timestamps else "wall",
            "checksum": checksum}


def measure(runner: Runner) -> dict:
    """Both probes on ``runner``'s device, planned from its limits (planner.probe_plan),
    within the plan's budget_ms where the device allows: {"plan", "copy", "fma", "ridge"
    (FLOP per byte where the roofs meet), "elapsed_ms"}."""
    t0 = time.perf_counter()
    plan = _plan.probe_plan(runner.limits)
    deadline = t0 + plan["budget_ms"] / 1e3
    copy = measure_copy(runner, plan, t0 + plan["budget_ms"] / 2e3)
    fma = measure_fma(runner, plan, deadline)
    return {"plan": plan, "copy": copy, "fma": fma,
            "ridge": fma["flop_per_second"] / copy["bytes_per_second"],
            "elapsed_ms": (time.perf_counter() - t0) * 1e3}
