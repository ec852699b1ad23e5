"""The WGSL kernels in headless Chromium on SwiftShader WebGPU, through site/static/js/gpu/.

What is held here:
* every run follows a plan planner/__init__.py made (here in CPython, as the page's worker
  makes it): the page asks its device for the plan's limits and reads them back;
* every shader, plain and instrumented build, compiles in Chromium (Tint) with
  getCompilationInfo() reporting no errors, and every pipeline the adapter has the
  workgroup memory for builds;
* the instrumented build's byte counts equal emulator.traffic.count (computed here
  in CPython) for ragged N, causal, d = 16 and 64, and each kernel;
* O read back from the page passes the float64 checker for plain and fused and
  fails it for fused-no-rescale; no NaN or inf in O;
* every kernel the lab's Time may run (planner.TIMED) runs at every d in the shader this
  adapter's subgroups get it, with the counted bytes and an O that passes float64.
"""
from __future__ import annotations

import math

import pytest

import planner
from emulator.accuracy import check_output
from emulator.inputs import random_qkv
from emulator.tiling import HEAD_DIMS
from emulator.traffic import count

pytestmark = [pytest.mark.browser, pytest.mark.gpu]

RUN_JS = """
async ({plan, kernel, q, k, v, instrumented, chunks}) => {
  const g = await import('./static/js/gpu/index.js');
  try {
    const r = await g.runAttention({plan, kernel, instrumented, chunks,
      Q: new Float32Array(q), K: new Float32Array(k), V: new Float32Array(v)});
    return {ok: true, O: Array.from(r.O), counts: r.counts || null, tiling: r.tiling, shaders: r.shaders};
  } catch (e) {
    return {ok: false, kind: e.kind || e.name, message: e.message};
  }
}
"""

PROBE_JS = """async () => {
  const g = await import('./static/js/gpu/index.js');
  const p = await g.probeGpu();
  return {...p, subgroupMin: g.subgroupMinOf(p)};
}"""


@pytest.fixture(scope="module")
def gpu_page(browser, server_url):
    """One page on the built site with a WebGPU adapter, or a skip saying why not."""
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(server_url)
    probe = page.evaluate(PROBE_JS)
    if not probe["ok"]:
        ctx.close()
        pytest.skip(f"no WebGPU adapter in Chromium: {probe['reason']}")
    page.probe = probe
    yield page
    ctx.close()


def plan_for(page, kernels, n, d, causal=False, instrumented=False, m=16384):
    """planner's plan of these kernels on this page's adapter, as the worker makes it."""
    return planner.gpu_plan({"n": n, "d": d, "causal": causal, "workgroup_bytes": m}, page.probe["limits"],
                            list(kernels), page.probe["subgroupMin"], instrumented=instrumented)


def _counted(r, kind, expected):
    """The page's counts of one kind (read or write) for the tensors the emulator counts; every
    other tensor the manifest's slots name must have moved nothing."""
    others = {t: c[kind] for t, c in r["counts"].items() if t not in expected and c[kind]}
    assert others == {}, others
    return {t: c[kind] for t, c in r["counts"].items() if t in expected}


def _flat(rows):
    return [x for row in rows for x in row]


def _run(page, kernel, n, d, causal, instrumented=False, seed=0, chunks=1):
    q, k, v = random_qkv(n, d, seed)
    plan = plan_for(page, [kernel], n, d, causal, instrumented)
    r = page.evaluate(RUN_JS, {"plan": plan, "kernel": kernel, "chunks": chunks,
                               "q": _flat(q), "k": _flat(k), "v": _flat(v), "instrumented": instrumented})
    assert r["ok"], r
    O = [r["O"][i * d:(i + 1) * d] for i in range(n)]
    return (q, k, v), O, r


def _cases(kernels, configs):
    return [pytest.param(kern, n, d, c, id=f"{kern}-{n=}-{d=}-causal={c}")
            for kern in kernels for (n, d, c) in configs]


def test_the_probe_reports_the_adapter_its_limits_and_features(gpu_page):
    """The adapter is the one cannery_host/browser.py asks Chromium for (SwiftShader, on the
    CPU), and the page says so; every limit the planner reads is reported, at least
    WebGPU's default (WebGPU §3.6.2: an adapter offers the defaults or better)."""
    p = gpu_page.probe
    assert p["adapterInfo"]["vendor"] == "google" and p["adapterInfo"]["architecture"] == "swiftshader", p
    assert p["software"] == "SwiftShader"
    assert set(p["limits"]) == {name for name, _key, _what, _field in planner.LIMITS}
    assert all(value >= planner.DEFAULT_LIMITS[name] for name, value in p["limits"].items()), p["limits"]
    assert set(p["features"]) == {"timestamp", "subgroups", "f16"}
    assert p["subgroupMin"] == (p["adapterInfo"]["subgroupMinSize"] if p["features"]["subgroups"] else 0)


def test_the_device_asks_for_the_plan_python_made_and_reads_back_those_limits(gpu_page):
    """plain at N = 8,192 keeps S and P of 256 MiB each: past WebGPU's 128 MiB default binding,
    so the plan asks for it. The device the page opens asks for exactly the plan's
    required_limits, and reads them back; a limit not asked for stays at WebGPU's default."""
    plan = plan_for(gpu_page, ["plain"], 8192, 16)
    assert plan["required_limits"] == {"maxStorageBufferBindingSize": 8192 * 8192 * 4}
    got = gpu_page.evaluate("""async (plan) => {
        const g = await import('./static/js/gpu/index.js');
        g.resetDevice();
        await g.openDevice(plan);
        const s = g.currentState();
        const read = {};
        for (const name of Object.keys(plan.needs)) read[name] = s.device.limits[name];
        return {asked: s.asked, read};
    }""", plan)
    assert got["asked"] == plan["required_limits"]
    for name, value in got["read"].items():
        assert value == plan["required_limits"].get(name, planner.DEFAULT_LIMITS[name]), name
    assert all(got["read"][name] >= need for name, need in plan["needs"].items())


def test_every_shader_compiles_in_chromium_with_no_errors(gpu_page):
    # Every file compiles as a module in both builds. Pipelines are built at d = 128 (the
    # largest workgroup arrays) for the build the page runs, without counters; the run tests
    # below build every other d (16, 32, 64), and the counted build's pipelines, through the
    # same path. (SwiftShader takes 2 to 6 s to compile each pipeline at d = 128.)
    from emulator.tiling import MANIFEST
    plans = [planner.kernel_plan(k, 1, 128, subgroup_min=gpu_page.probe["subgroupMin"], instrumented=False)
             for k in MANIFEST["kernels"]]
    report = gpu_page.evaluate(
        "async (plans) => (await import('./static/js/gpu/index.js')).compileAll({plans})", plans)
    files = {r["file"] for r in report}
    declared = {spec["file"] for k in MANIFEST["kernels"].values() for spec in k["wgsl"]}
    lanes = {f for k in MANIFEST["kernels"].values() for spec in k["wgsl"]
             for f in (spec.get("with_subgroups") or {}).get("file_by_d", {}).values()}
    assert {"fused_lanes.wgsl", "bwd_fast_dkv_lanes.wgsl", "bwd_fast_dq_lanes.wgsl"} <= lanes
    if gpu_page.probe["adapterInfo"]["subgroupMinSize"] < 4:
        lanes = set()
    assert {"fused.wgsl", "plain_scores.wgsl", "plain_softmax.wgsl", "plain_pv.wgsl"} <= declared
    # the backward's passes are in the manifest's list, so compileAll builds them too
    assert {"bwd_fast_pre.wgsl", "bwd_fast_dkv.wgsl", "bwd_fast_dq.wgsl", "bwd_fast_pdkv.wgsl"} <= declared
    assert files == declared | lanes
    modules = [r for r in report if r["d"] is None]
    assert len(modules) == 2 * len(files)  # plain and instrumented build of each file
    pipelines = [r for r in report if r["d"] is not None]
    assert {r["d"] for r in pipelines} == {128} and not any(r["instrumented"] for r in pipelines)
    built = {(r["kernel"], r["file"]) for r in pipelines if "skipped" not in r}
    # every kernel this adapter can run has each of its passes built
    runnable = {k for k in MANIFEST["kernels"] if not any(r["kernel"] == k and "skipped" in r for r in pipelines)}
    assert {"plain", "fused", "fused-no-rescale", "fused-fast-16k", "fused-backward-fast"} <= runnable
    assert {k for k, _f in built} == runnable
    assert len(built) >= 6
    bad = [r for r in report if r["errors"]]
    assert bad == []


COUNTED = [(100, 16, False), (100, 16, True), (65, 64, True), (77, 64, False), (1, 16, True), (130, 32, True)]


# The lesson's kernels here; Time's tuned ones at every d below (TIMED).
@pytest.mark.parametrize("kernel,n,d,causal", _cases(["plain", "fused", "fused-no-rescale"], COUNTED))
def test_instrumented_bytes_in_chromium_equal_the_emulator_count(gpu_page, kernel, n, d, causal):
    _, O, r = _run(gpu_page, kernel, n, d, causal, instrumented=True)
    expected = count(kernel, n, d, causal)
    assert _counted(r, "read", expected.reads) == expected.reads
    assert _counted(r, "write", expected.writes) == expected.writes
    assert all(math.isfinite(x) for x in r["O"])


@pytest.mark.parametrize("kernel,n,d,causal", _cases(
    ["plain", "fused"], [(100, 16, False), (65, 64, True), (100, 32, True), (65, 128, False)]))
def test_output_read_back_in_chromium_passes_the_float64_check(gpu_page, kernel, n, d, causal):
    (q, k, v), O, _ = _run(gpu_page, kernel, n, d, causal, seed=1)
    assert all(math.isfinite(x) for row in O for x in row)
    report = check_output(O, q, k, v, causal, kernel=kernel)
    assert report["passed"], report
    assert report["rows_checked"] == n


@pytest.mark.parametrize("kernel,n,d,causal", _cases(["fused-no-rescale"], [(100, 16, False), (65, 64, True)]))
def test_fused_without_rescale_in_chromium_fails_the_check(gpu_page, kernel, n, d, causal):
    (q, k, v), O, _ = _run(gpu_page, kernel, n, d, causal, seed=1)
    assert all(math.isfinite(x) for row in O for x in row)
    report = check_output(O, q, k, v, causal, kernel=kernel)
    assert not report["passed"]
    assert report["max_abs_error"] > 100 * report["bound"]


PLAIN_REG = [(77, 16, True), (100, 32, False), (65, 64, True), (100, 64, False)]


@pytest.mark.parametrize("n,d,causal", [pytest.param(n, d, c, id=f"{n=}-{d=}-causal={c}") for n, d, c in PLAIN_REG])
def test_the_register_tiled_plain_in_chromium_moves_the_counted_bytes_and_passes_float64(gpu_page, n, d, causal):
    """plain-reg's three shaders through Tint and the page's loader: the instrumented counts
    equal the manifest walk's at its tiles, and O passes the float64 check with plain's rules;
    skipped where this adapter has less workgroup memory than its tiles declare at d."""
    from emulator.tiling import make_tiling

    need = make_tiling("plain-reg", n, d).workgroup_bytes
    if need > gpu_page.probe["limits"]["maxComputeWorkgroupStorageSize"]:
        pytest.skip(f"plain-reg at d = {d} declares {need:,} B; this adapter offers "
                    f"{gpu_page.probe['limits']['maxComputeWorkgroupStorageSize']:,} B")
    (q, k, v), O, r = _run(gpu_page, "plain-reg", n, d, causal, instrumented=True, seed=2)
    assert r["shaders"] == ["plain_reg_scores.wgsl", "plain_reg_softmax.wgsl", "plain_reg_pv.wgsl"], r["shaders"]
    expected = count("plain-reg", n, d, causal)
    assert _counted(r, "read", expected.reads) == expected.reads
    assert _counted(r, "write", expected.writes) == expected.writes
    assert all(math.isfinite(x) for row in O for x in row)
    report = check_output(O, q, k, v, causal, kernel="plain-reg")
    assert report["passed"], report
    assert report["rows_checked"] == n


def test_inputs_that_do_not_match_the_plan_come_back_as_a_typed_error_not_zeros(gpu_page):
    """The plan sizes every buffer (N = 4, d = 16: 64 floats); d = 48 is Python's to refuse."""
    with pytest.raises(planner.InputError, match="Head dimension d must be one of 16, 32, 64, 128; 48 is not."):
        plan_for(gpu_page, ["fused"], 4, 48)
    plan = plan_for(gpu_page, ["fused"], 4, 16)
    r = gpu_page.evaluate("""async (plan) => {
      const g = await import('./static/js/gpu/index.js');
      const run = (kernel, q, instrumented) => g.runAttention({plan, kernel, instrumented, Q: new Float32Array(q),
        K: new Float32Array(64), V: new Float32Array(64)}).then(() => ({ok: true}),
        (e) => ({ok: false, kind: e.kind, message: e.message}));
      return [await run('fused', 192, false), await run('plain', 64, false), await run('fused', 64, true)];
    }""", plan)
    assert r == [
        {"ok": False, "kind": "input", "message": "Q must be a Float32Array of 64 numbers, as the plan sizes it."},
        {"ok": False, "kind": "input", "message": "No GPU plan was made for plain."},
        {"ok": False, "kind": "input", "message": "The plan for fused was made for the build without counters."},
    ]


def test_timing_returns_a_positive_median_and_a_method(gpu_page):
    r = gpu_page.evaluate("""async (plan) => {
      const g = await import('./static/js/gpu/index.js');
      const t = await g.timeKernels({plan, minSampleMs: 2, minSamples: 3});
      return {plain: t.kernels.plain, fused: t.kernels.fused, method: t.method, line: g.formatTiming(t)};
    }""", plan_for(gpu_page, ["plain", "fused"], 64, 16))
    for name in ("plain", "fused"):
        k = r[name]
        assert k["medianMs"] > 0 and k["samples"] >= 3
        assert k["method"] in ("timestamp", "wall")
        assert k["medianMs"] * k["reps"] >= 0.5 * 2  # each sample held about 2 ms of work or more
    assert "ms" in r["line"]


@pytest.mark.parametrize("kernel,n,d,causal", _cases(["plain", "fused"], [(300, 32, True)]))
def test_a_run_split_into_several_dispatches_gives_the_same_answer_and_bytes(gpu_page, kernel, n, d, causal):
    """Long runs are split along x (x_base) so no submission passes about 1 s."""
    (q, k, v), O, r = _run(gpu_page, kernel, n, d, causal, instrumented=True, chunks=3)
    report = check_output(O, q, k, v, causal, kernel=kernel)
    assert report["passed"], report
    reads = count(kernel, n, d, causal).reads
    assert _counted(r, "read", reads) == reads


def test_timing_splits_a_run_when_it_would_pass_the_submission_limit(gpu_page):
    r = gpu_page.evaluate("""async (plan) => {
      const g = await import('./static/js/gpu/index.js');
      const t = await g.timeKernels({plan, minSampleMs: 1, minSamples: 3, maxSubmitMs: 0.01});
      return t.kernels.plain;
    }""", plan_for(gpu_page, ["plain"], 128, 16))
    assert r["submissionsPerSample"] >= 3 * 2  # each pass in >= 2 dispatches, one submission each
    assert r["medianMs"] > 0 and r["samples"] >= 3


def test_the_page_runs_the_tiles_and_shaders_of_the_plan(gpu_page):
    """The tiles and shaders a run reports are the plan's, for every kernel (tuned ones
    with their own tiles): the page derives none."""
    from emulator.tiling import MANIFEST, InputError
    ran = []
    for kernel, entry in MANIFEST["kernels"].items():
        if entry.get("direction") == "backward" or entry.get("dtype", "float32") != "float32":
            continue  # the backward and float16 kernels have their own runs (test_browser_float16.py)
        try:
            plan = plan_for(gpu_page, [kernel], 40, 64)
        except InputError as exc:  # past this adapter's limits: the plan refuses it, naming the limit
            assert "maxComputeWorkgroupStorageSize" in str(exc), (kernel, str(exc))
            continue
        _, _, r = _run(gpu_page, kernel, 40, 64, False)
        kp = plan["plans"][kernel]
        assert r["tiling"] == kp["tiling"], kernel
        assert r["shaders"] == list(dict.fromkeys(pp["file"] for pp in kp["passes"])), kernel
        ran.append(kernel)
    assert {"plain", "fused"} <= set(ran), ran


def _subgroups(page):
    """The adapter's smallest subgroup, or a skip: the lanes kernel needs d / 16 of them."""
    p = page.probe
    if not p["features"]["subgroups"] or p["adapterInfo"]["subgroupMinSize"] < 4:
        pytest.skip(f"this adapter has no subgroups of 4 or more: {p['adapterInfo']}")
    return p["adapterInfo"]["subgroupMinSize"]


@pytest.mark.parametrize("kernel,n,d,causal", _cases(["fused-fast-16k", "fused-fast"],
                                                     [(65, 64, True), (77, 64, False), (1, 64, False)]))
def test_with_subgroups_the_tuned_kernels_run_the_lanes_shader_with_the_same_bytes(gpu_page, kernel, n, d, causal):
    """d = 64 on an adapter with subgroups: the plan picks fused_lanes.wgsl (the manifest's
    with_subgroups), its instrumented bytes equal the emulator's count for the kernel's
    tiles, and its output passes the float64 check."""
    _subgroups(gpu_page)
    (q, k, v), O, r = _run(gpu_page, kernel, n, d, causal, instrumented=True, seed=2)
    assert r["shaders"] == ["fused_lanes.wgsl"]
    expected = count(kernel, n, d, causal)
    assert _counted(r, "read", expected.reads) == expected.reads
    assert _counted(r, "write", expected.writes) == expected.writes
    report = check_output(O, q, k, v, causal, kernel="fused")
    assert report["passed"], report


# Every kernel the lab's Time may run beside the lesson's (planner.TIMED: the manifest's "timed"
# forward kernels), at every d: a ragged N, causal at d = 16 and 64, full at d = 32 and 128.
TIMED = [pytest.param(kernel, 65 if d in (16, 64) else 77, d, d in (16, 64), id=f"{kernel}-{d=}")
         for kernel in planner.TIMED for d in HEAD_DIMS]


@pytest.mark.parametrize("kernel,n,d,causal", TIMED)
def test_every_timed_kernel_runs_the_shader_this_adapter_gets_with_the_counted_bytes(gpu_page, kernel, n, d, causal):
    """Time's tuned kernels through Tint and the page's loader, each at every d, in the shader
    its plan picks on this adapter: a pass's with_subgroups file where the adapter's smallest
    subgroup holds the manifest's min_subgroup_size_by_d at d, its own file elsewhere
    (SwiftShader's subgroups of 4: fused-rows runs fused_rows_lanes.wgsl at d = 64, which asks
    for 2, and fused_rows.wgsl at d = 128, which asks for 32). The instrumented counts equal
    the emulator's walk at the kernel's tiles and O passes the float64 check, as Time checks
    it before timing; skipped where the adapter has less workgroup memory than the plan needs."""
    from emulator.tiling import MANIFEST, InputError

    try:
        plan = plan_for(gpu_page, [kernel], n, d, causal, instrumented=True)
    except InputError as exc:
        pytest.skip(f"{kernel} at d = {d} does not fit this adapter: {exc}")
    sub = gpu_page.probe["subgroupMin"]
    want = []
    for spec in MANIFEST["kernels"][kernel]["wgsl"]:
        alt = spec.get("with_subgroups") or {}
        lanes = str(d) in alt.get("file_by_d", {}) and sub >= alt["min_subgroup_size_by_d"][str(d)]
        want.append(alt["file_by_d"][str(d)] if lanes else spec.get("file_by_d", {}).get(str(d), spec["file"]))
    assert [pp["file"] for pp in plan["plans"][kernel]["passes"]] == want
    (q, k, v), O, r = _run(gpu_page, kernel, n, d, causal, instrumented=True, seed=4)
    assert r["shaders"] == list(dict.fromkeys(want)), r["shaders"]
    expected = count(kernel, n, d, causal)
    assert _counted(r, "read", expected.reads) == expected.reads
    assert _counted(r, "write", expected.writes) == expected.writes
    assert all(math.isfinite(x) for row in O for x in row)
    report = check_output(O, q, k, v, causal, kernel=kernel)
    assert report["passed"], report
    assert report["rows_checked"] == n


def test_without_a_lanes_shader_at_this_d_the_tuned_kernel_keeps_its_own(gpu_page):
    _subgroups(gpu_page)
    _, _, r = _run(gpu_page, "fused-fast-16k", 40, 16, False)
    assert r["shaders"] == ["fused.wgsl"]


@pytest.mark.parametrize("kernel,n,d,causal", _cases(["fused", "fused-no-rescale"],
                                                     [(65, 64, True), (130, 32, True), (77, 128, False)]))
def test_the_lesson_fused_pair_runs_lanes_where_the_subgroups_are_large_enough(gpu_page, kernel, n, d, causal):
    """The lesson's fused kernel and its broken control: fused_lanes.wgsl where the adapter's
    smallest subgroup holds d / 16 lanes (SwiftShader: 4, so d = 32 and 64), fused.wgsl
    otherwise (d = 128 here); the emulator's bytes either way; the control still fails."""
    size = _subgroups(gpu_page)
    (q, k, v), O, r = _run(gpu_page, kernel, n, d, causal, instrumented=True, seed=3)
    assert r["shaders"] == ["fused_lanes.wgsl" if size >= d // 16 else "fused.wgsl"]
    expected = count(kernel, n, d, causal)
    assert _counted(r, "read", expected.reads) == expected.reads
    assert _counted(r, "write", expected.writes) == expected.writes
    report = check_output(O, q, k, v, causal, kernel=kernel)
    assert report["passed"] == (kernel == "fused"), report
