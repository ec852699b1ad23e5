"""The WGSL kernels of kernels_wgsl/, run natively through wgpu-py (lavapipe on CI).

What is held here:
* O read back from plain and fused passes emulator.accuracy.check_output (float64
  reference, first-order float32 bound, FlashAttention's 2x rule); fused-no-rescale,
  the same shader with the override RESCALE = false, fails it.
* No NaN or inf anywhere in O, checked on the CPU after readback.
* The instrumented build's byte counts (one atomicAdd per element loaded or stored)
  equal emulator.traffic.count for every tensor, ragged N and causal included.
* Where a kernel has a subgroup shader (manifest "with_subgroups", fused_lanes.wgsl at
  d = 32, 64, 128), both shaders are held to that: the one a device with subgroups runs
  and the one a device without them runs (fused.wgsl), with the same tiles and so the
  same bytes.

Skipped, with the reason, where wgpu-py finds no adapter.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest

import planner
from emulator.accuracy import check, check_output
from emulator.inputs import random_qkv
from emulator.tiling import MANIFEST, dtype_of
from emulator.traffic import count

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def runner():
    """One wgpu-py device at WebGPU's default limits, or a skip saying why not."""
    try:
        from cannery_host.wgpu_runner import KernelError, Runner
    except ImportError as e:  # wgpu not installed
        pytest.skip(f"wgpu-py is not importable: {e}")
    try:
        return Runner(limits="default")
    except (KernelError, RuntimeError) as e:
        pytest.skip(f"no WebGPU adapter for wgpu-py: {e}")


@pytest.fixture(scope="module")
def runner_max(runner):
    """A second device with the adapter's maximum limits (for fused-fast's larger tiles)."""
    from cannery_host.wgpu_runner import Runner

    return Runner(limits="max")


def _runner_for(kernel, d, runner, runner_max):
    """The default-limits device, or the max-limits one; skip if neither has the memory,
    or the device lacks the feature the kernel's dtype needs (float16: shader-f16)."""
    from emulator.tiling import DTYPES, dtype_of, make_tiling

    feature = DTYPES[dtype_of(kernel)]["feature"]
    if feature and feature not in runner.features:
        pytest.skip(f"{kernel} needs {feature}, which this adapter does not offer")
    need = make_tiling(kernel, 1, d).workgroup_bytes
    for r in (runner, runner_max):
        if need <= r.max_wg_bytes:
            return r
    pytest.skip(f"{kernel} at d={d} needs {need:,} B of workgroup memory; "
                f"this adapter offers {runner_max.max_wg_bytes:,} B")


def _run(runner, kernel, n, d, causal, seed=0, instrumented=False):
    q, k, v = random_qkv(n, d, seed)
    O, counts = runner.run(kernel, np.array(q, np.float32), np.array(k, np.float32),
                           np.array(v, np.float32), causal, instrumented=instrumented)
    return (q, k, v), O, counts


PASSING = [
    (1, 16, False), (1, 64, True),
    (65, 64, True),    # last key tile holds 1 valid key, 15 idle lanes
    (100, 16, False), (100, 16, True),
    (100, 32, False),  # B_r = 64: rows 64-99 are the ragged second query tile
    (65, 128, False), (77, 32, True),
]


def _cases(kernels, configs):
    """pytest params with ids that read as sentences: fused-n=65-d=64-causal=True."""
    return [pytest.param(kern, n, d, c, id=f"{kern}-{n=}-{d=}-causal={c}")
            for kern in kernels for (n, d, c) in configs]


# Every float32 forward kernel of the manifest whose float32 mirror passes the float64 check
# (emulator.accuracy at N = 100, d = 16): all but the broken controls, read from the manifest.
CHECKED = [name for name, entry in MANIFEST["kernels"].items()
           if entry["direction"] == "forward" and dtype_of(name) == "float32" and check(name, 100, 16)["passed"]]


def test_the_checked_kernels_are_the_seeds_and_leave_out_the_broken_control():
    """The seed's figures, pinned: its four correct float32 forward kernels, and not fused-no-rescale."""
    assert {"plain", "fused", "fused-fast", "fused-fast-16k"} <= set(CHECKED)
    assert "fused-no-rescale" not in CHECKED


@pytest.mark.parametrize("kernel,n,d,causal", _cases(CHECKED, PASSING))
def test_output_read_back_passes_the_float64_check(runner, runner_max, kernel, n, d, causal):
    (q, k, v), O, _ = _run(_runner_for(kernel, d, runner, runner_max), kernel, n, d, causal)
    assert O.shape == (n, d)
    assert np.isfinite(O).all(), f"NaN or inf in O at rows {np.unique(np.argwhere(~np.isfinite(O))[:, 0])}"
    # Each kernel is checked with its own mirror's rules (the fast kernels: fused's arithmetic, their tiles).
    report = check_output(O.astype(np.float64).tolist(), q, k, v, causal, kernel=kernel)
    assert report["passed"], report
    assert report["rows_checked"] == n


def test_ragged_second_query_tile_rows_64_to_99_are_right(runner):
    """N = 100 with a 64-row query tile (d = 32): the last 36 rows, checked alone."""
    (q, k, v), O, _ = _run(runner, "fused", 100, 32, False, seed=3)
    report = check_output(O.astype(np.float64).tolist(), q, k, v, False, kernel="fused",
                          rows=list(range(64, 100)))
    assert report["passed"], report
    assert report["rows_checked"] == 36


@pytest.mark.parametrize("kernel,n,d,causal", _cases(
    ["fused-no-rescale"], [(100, 16, False), (65, 64, True), (65, 128, False)]))
def test_fused_without_rescale_fails_the_check(runner, kernel, n, d, causal):
    (q, k, v), O, _ = _run(runner, "fused-no-rescale", n, d, causal)
    assert np.isfinite(O).all()
    report = check_output(O.astype(np.float64).tolist(), q, k, v, causal, kernel="fused-no-rescale")
    assert not report["passed"]
    # The first query tile's rows see several key tiles, so the error starts there.
    assert report["max_abs_error"] > 100 * report["bound"], report


COUNTED = [(1, 16, True), (100, 16, False), (100, 16, True), (65, 64, True),
           (77, 64, False), (300, 32, True), (65, 128, True)]


# Every forward kernel the manifest declares, so a new one is counted without editing this file.
FORWARD = [name for name, entry in MANIFEST["kernels"].items() if entry["direction"] == "forward"]


@pytest.mark.parametrize("kernel,n,d,causal", _cases(FORWARD, COUNTED))
def test_instrumented_bytes_equal_the_emulator_count(runner, runner_max, kernel, n, d, causal):
    r = _runner_for(kernel, d, runner, runner_max)
    _, O, counts = _run(r, kernel, n, d, causal, instrumented=True)
    expected = count(kernel, n, d, causal)
    got_reads = {t: c["read"] for t, c in counts.items()}
    got_writes = {t: c["write"] for t, c in counts.items()}
    assert got_reads == expected.reads
    assert got_writes == expected.writes
    assert np.isfinite(O).all()


def test_instrumented_build_differs_only_in_uncommented_lines():
    from cannery_host.wgpu_runner import KERNEL_DIR, MANIFEST, instrument
    from planner.shaders import read_source

    marker = MANIFEST["instrument"]["marker"]
    for path in sorted(KERNEL_DIR.glob("*.wgsl")):
        src = read_source(path.name)  # as the host compiles it, parts joined
        out = instrument(src)
        assert len(src.splitlines()) == len(out.splitlines())
        changed = [(a, b) for a, b in zip(src.splitlines(), out.splitlines(), strict=True) if a != b]
        assert changed, f"{path.name} has no instrument lines"
        for a, b in changed:
            assert a.strip() == marker + b.strip()
        assert "atomicAdd(&counters" in out
        assert all("atomic" not in line or line.strip().startswith(marker) for line in src.splitlines())


def test_a_size_past_the_storage_limit_is_refused_with_the_numbers(runner):
    """The host plans through planner: the page's refusal, word for word."""
    from cannery_host.wgpu_runner import KernelError
    from emulator.tiling import InputError
    from planner import gpu_plan

    with pytest.raises(KernelError, match=r"binds S as one storage buffer of 268,435,456 B, but this GPU allows "
                                          r"134,217,728 B \(maxStorageBufferBindingSize\)\. Try N ≤ 5,792\.") as err:
        runner.plan("plain", 8192, 64, 1)
    with pytest.raises(InputError) as page:
        gpu_plan({"n": 8192, "d": 64}, runner.limits, ["plain"], runner.subgroup_min, instrumented=False)
    assert str(err.value) == page.value.message
    with pytest.raises(KernelError, match=r"declares 32,768 B of workgroup memory, but this GPU allows 16,384 B "
                                          r"\(maxComputeWorkgroupStorageSize\)\. Choose another kernel"):
        runner.plan("fused-fast", 1024, 128, 1)


def test_the_host_runs_the_plan_the_page_gets(runner):
    """Tiles, shaders, dispatches and buffers of a run: planner's, for this device."""
    from planner import kernel_plan

    p = runner.plan("plain", 300, 32, 2, causal=True)
    assert p == kernel_plan("plain", 300, 32, True, 16384, heads=2, subgroup_min=runner.subgroup_min,
                            instrumented=False, limits=runner.limits)
    assert p["tiling"] == {"block_rows": 64, "block_cols": 32, "workgroup_bytes": 16384}
    assert [pp["dispatch"] for pp in p["passes"]] == [[5, 2, 1], [300, 2, 1], [5, 2, 1]]  # ceil(300/64), N rows
    assert p["buffers"]["S"] == 2 * 300 * 300 * 4 and p["buffers"]["Q"] == 2 * 300 * 32 * 4


@pytest.fixture(scope="module")
def runner_no_subgroups(runner):
    """A device opened without the subgroup feature: the shaders every browser can run."""
    from cannery_host.wgpu_runner import Runner

    return Runner(limits="default", subgroups=False)


@pytest.fixture(scope="module")
def runner_max_no_subgroups(runner):
    """Without subgroups at the adapter's largest limits: fused_rows.wgsl at d = 128 sums a
    row's lanes in 4,096 B past its 16,384 B of tiles."""
    from cannery_host.wgpu_runner import Runner

    return Runner(limits="max", subgroups=False)


LANES = [(65, 64, True), (77, 64, False), (1, 64, False), (300, 64, True)]


@pytest.mark.parametrize("n,causal", [(65, True), (77, False), (300, True)])
def test_the_lanes_shader_at_d128_passes_and_counts_the_same(runner, n, causal):
    """d = 128 splits a row over 8 lanes, so it needs subgroups of 8. wgpu-native reports a
    generic minimum of 4; the host measures the size its pipelines get (8 on lavapipe,
    32 on NVIDIA) and picks fused_lanes.wgsl at d = 128 when it is 8 or more."""
    size = runner.measure_subgroup_size()
    if size < 8:
        pytest.skip(f"this device's subgroups hold {size} invocations; d = 128 needs 8")
    assert runner.subgroup_min == size
    assert runner.shader("fused-fast-16k", 128) == "fused_lanes.wgsl"
    (q, k, v), O, counts = _run(runner, "fused-fast-16k", n, 128, causal, seed=6, instrumented=True)
    expected = count("fused-fast-16k", n, 128, causal)
    assert {t: c["read"] for t, c in counts.items()} == expected.reads
    assert {t: c["write"] for t, c in counts.items()} == expected.writes
    report = check_output(O.astype(np.float64).tolist(), q, k, v, causal, kernel="fused")
    assert report["passed"], report


@pytest.mark.parametrize("subgroups", [True, False], ids=["with-subgroups", "without-subgroups"])
@pytest.mark.parametrize("kernel,n,d,causal", _cases(["fused-fast-16k", "fused-fast"], LANES))
def test_both_shaders_of_a_kernel_with_a_subgroup_variant_pass_and_count_the_same(
        runner, runner_no_subgroups, kernel, n, d, causal, subgroups):
    r = runner if subgroups else runner_no_subgroups
    if subgroups and r.subgroup_min < 4:
        pytest.skip(f"this adapter has no subgroups of 4 or more ({r.subgroup_min})")
    assert r.shader(kernel, d) == ("fused_lanes.wgsl" if subgroups else "fused.wgsl")
    (q, k, v), O, counts = _run(r, kernel, n, d, causal, seed=5, instrumented=True)
    expected = count(kernel, n, d, causal)
    assert {t: c["read"] for t, c in counts.items()} == expected.reads
    assert {t: c["write"] for t, c in counts.items()} == expected.writes
    report = check_output(O.astype(np.float64).tolist(), q, k, v, causal, kernel="fused")
    assert report["passed"], report
    assert report["rows_checked"] == n


def _lanes_defaults(d, br):
    """R and TX as fused.wgsl and fused_lanes.wgsl derive them when the manifest gives none."""
    big = (d // 16) * br > 256
    return (4 if big and br % 4 == 0 else 2), (1 if big and br % 4 else 2)


def test_every_lanes_variant_has_tiles_the_shader_supports():
    """fused_lanes.wgsl (see fused.wgsl's opening comment): TD = d / 16 lanes a row group,
    R in {1, 2, 4} rows an invocation, B_r <= 4 B_c, TD TX B_r / R <= min(256, B_c d / 4),
    at most 4 vec4s of K per invocation, 16 B_c d bytes within the kernel's workgroup memory,
    and a subgroup of at least TD; the kernel's tiles are those of its other shader. The
    lesson kernels are checked at every M from 4,096 to 65,536 in steps of 4 bytes."""
    from cannery_host.wgpu_runner import MANIFEST
    from emulator.tiling import InputError, lesson_blocks

    seen = 0
    for name, spec in MANIFEST["kernels"].items():
        if spec["direction"] != "forward":
            continue  # the backward's subgroup shaders: tests/test_wgsl_native_backward.py
        for pass_spec in spec["wgsl"]:
            alt = pass_spec.get("with_subgroups")
            if not alt or pass_spec["file"] != "fused.wgsl":
                continue  # fused_reg.wgsl's twin: test_the_register_tiled_kernel_...
            for key, file in alt["file_by_d"].items():
                assert file == "fused_lanes.wgsl"
                d = int(key)
                c = alt["constants_by_d"][key]
                if spec["tiling"] == "lesson":
                    assert set(c) == {"RESCALE"} and c["RESCALE"] == (name != "fused-no-rescale")
                    configs = []
                    for m in range(4096, 65536 + 1, 4):
                        try:
                            br, bc = lesson_blocks(d, m)
                        except InputError:
                            continue
                        configs.append((br, bc, *_lanes_defaults(d, br), m))
                else:
                    br, bc = spec["tiling"]["block_rows"][key], spec["tiling"]["block_cols"][key]
                    r0, tx0 = _lanes_defaults(d, br)
                    configs = [(br, bc, c.get("R", r0), c.get("TX", tx0), spec["workgroup_bytes"][key])]
                    # Without subgroups, fused.wgsl sums the lanes in the K/V tiles' other half.
                    assert (d // 16) * configs[0][3] * br <= bc * d // 2, (name, d)
                    assert spec["workgroup_bytes"][key] == 16 * bc * d
                for br, bc, r, tx, m in configs:
                    td = d // 16
                    threads = td * tx * br // r
                    assert r in (1, 2, 4) and br % r == 0 and br <= 4 * bc, (name, d, br, bc)
                    assert threads <= min(256, bc * d // 4) and -(-(bc * d // 4) // threads) <= 4, (name, d, br, bc)
                    assert 16 * bc * d <= m, (name, d, m)
                assert alt["min_subgroup_size_by_d"][key] == d // 16
                seen += 1
    assert seen >= 9


def test_only_the_lanes_shader_uses_subgroups():
    """fused.wgsl and fused_lanes.wgsl share their body (parts/fused_body.wgsl); only the
    lanes shader's own lane sum uses subgroup built-ins, behind `enable subgroups;`."""
    from planner.shaders import read_source

    def code(name):
        return [line for line in read_source(name).splitlines() if not line.lstrip().startswith("//")]

    assert not any("subgroup" in line for line in code("fused.wgsl"))
    lanes = code("fused_lanes.wgsl")
    assert [line for line in lanes if line.strip()][0] == "enable subgroups;"  # directives come first
    assert sum("subgroupShuffleXor" in line for line in lanes) == 3


@pytest.mark.parametrize("subgroups", [True, False], ids=["with-subgroups", "without-subgroups"])
@pytest.mark.parametrize("kernel,n,d,causal", _cases(["fused", "fused-no-rescale"],
                                                     [(65, 64, True), (77, 128, False), (130, 32, True)]))
def test_the_lesson_fused_pair_runs_its_subgroup_or_plain_shader_with_the_same_bytes(
        runner, runner_no_subgroups, kernel, n, d, causal, subgroups):
    r = runner if subgroups else runner_no_subgroups
    if subgroups and r.subgroup_min < d // 16:
        pytest.skip(f"this adapter's subgroups hold {r.subgroup_min}; d = {d} needs {d // 16}")
    assert r.shader(kernel, d) == ("fused_lanes.wgsl" if subgroups else "fused.wgsl")
    (q, k, v), O, counts = _run(r, kernel, n, d, causal, seed=8, instrumented=True)
    expected = count(kernel, n, d, causal)
    assert {t: c["read"] for t, c in counts.items()} == expected.reads
    assert {t: c["write"] for t, c in counts.items()} == expected.writes
    report = check_output(O.astype(np.float64).tolist(), q, k, v, causal, kernel=kernel)
    assert report["passed"] == (kernel == "fused"), report


REG = [(65, 64, True), (77, 64, False), (1, 16, False), (300, 64, True), (100, 16, True), (130, 32, True),
       (77, 128, False), (65, 128, True)]


@pytest.mark.parametrize("subgroups", [True, False], ids=["with-subgroups", "without-subgroups"])
@pytest.mark.parametrize("kernel,n,d,causal", _cases(["fused-reg"], REG))
def test_the_register_tiled_kernel_passes_and_counts_the_fused_bytes_with_either_shader(
        runner, runner_no_subgroups, runner_max, kernel, n, d, causal, subgroups):
    """fused_reg.wgsl and fused_reg_lanes.wgsl (row maxima and sums through workgroup memory,
    or with subgroupShuffleXor among the B_c / 4 invocations of a row group): the float64
    check, and the instrumented count equal to the manifest walk's at the kernel's tiles,
    the same formulas as the lesson's fused kernel (Q once, K and V once per query tile)."""
    from cannery_host.wgpu_runner import Runner
    from emulator.tiling import make_tiling

    tiles = make_tiling(kernel, n, d, causal)
    if tiles.workgroup_bytes > runner_max.max_wg_bytes:
        pytest.skip(f"{kernel} at d={d} declares {tiles.workgroup_bytes:,} B; this adapter offers "
                    f"{runner_max.max_wg_bytes:,} B")
    r = runner_max if subgroups else Runner(limits="max", subgroups=False)
    need = MANIFEST["kernels"][kernel]["wgsl"][0]["with_subgroups"]["min_subgroup_size_by_d"][str(d)]
    if subgroups and r.subgroup_min < need:
        pytest.skip(f"this adapter's subgroups hold {r.subgroup_min}; d = {d} needs {need}")
    assert r.shader(kernel, d) == ("fused_reg_lanes.wgsl" if subgroups else "fused_reg.wgsl")
    (q, k, v), O, counts = _run(r, kernel, n, d, causal, seed=9, instrumented=True)
    expected = count(kernel, n, d, causal)
    assert {t: c["read"] for t, c in counts.items()} == expected.reads
    assert {t: c["write"] for t, c in counts.items()} == expected.writes
    if not causal:  # K and V read once per query tile, all N keys: ceil(N / B_r) N d floats
        assert counts["K"]["read"] == counts["V"]["read"] == -(-n // tiles.block_rows) * n * d * 4
    report = check_output(O.astype(np.float64).tolist(), q, k, v, causal, kernel="fused")
    assert report["passed"], report
    assert report["rows_checked"] == n


ROWS = [(65, 64, True), (77, 64, False), (1, 64, False), (130, 128, True), (77, 128, False), (300, 16, True),
        (100, 32, False)]


@pytest.mark.parametrize("subgroups", [True, False], ids=["with-subgroups", "without-subgroups"])
@pytest.mark.parametrize("kernel,n,d,causal", _cases(["fused-rows"], ROWS))
def test_the_row_tiled_kernel_passes_and_counts_the_fused_bytes_with_either_shader(
        runner, runner_max_no_subgroups, kernel, n, d, causal, subgroups):
    """fused_rows.wgsl and fused_rows_lanes.wgsl (a row's lanes summing their partial scores
    through workgroup memory, or with subgroupShuffleXor: two lanes at d = 64, four lanes 8
    invocations apart at d = 128, which needs subgroups of 32): the float64 check, and the
    instrumented count equal to the manifest walk's at the kernel's tiles, the fused formulas
    (Q once, K and V once per query tile). At d = 16 and 32 there is one shader."""
    from emulator.tiling import make_tiling

    spec = MANIFEST["kernels"][kernel]["wgsl"][0]
    lanes = spec["with_subgroups"]["file_by_d"].get(str(d))
    if subgroups and lanes is None:
        pytest.skip(f"{kernel} has one shader at d = {d}")
    r = runner if subgroups else runner_max_no_subgroups
    if subgroups:
        need = spec["with_subgroups"]["min_subgroup_size_by_d"][str(d)]
        if r.subgroup_min < need:
            pytest.skip(f"this adapter's subgroups hold {r.subgroup_min}; d = {d} needs {need}")
    assert r.shader(kernel, d) == (lanes if subgroups else spec["file"])
    (q, k, v), O, counts = _run(r, kernel, n, d, causal, seed=13, instrumented=True)
    expected = count(kernel, n, d, causal)
    assert {t: c["read"] for t, c in counts.items()} == expected.reads
    assert {t: c["write"] for t, c in counts.items()} == expected.writes
    if not causal:  # K and V read once per query tile, all N keys: ceil(N / B_r) N d floats
        tiles = make_tiling(kernel, n, d, causal)
        assert counts["K"]["read"] == counts["V"]["read"] == -(-n // tiles.block_rows) * n * d * 4
    report = check_output(O.astype(np.float64).tolist(), q, k, v, causal, kernel="fused")
    assert report["passed"], report
    assert report["rows_checked"] == n


# The options of fused_rows' body that bench/sweep_forward.py timed, on the shader any device
# runs (lanes through workgroup memory): four lanes 8 invocations apart with two rows (the
# manifest's choice at d = 128 with subgroups), one row, two lanes at d = 64, no prefetch.
ROWS_OPTIONS = [
    (128, (128, 16), {"TD": 4, "R": 2, "LS": 8}),
    (128, (64, 16), {"TD": 2, "R": 1, "LS": 8}),
    (64, (128, 32), {"TD": 2, "R": 2}),
    (64, (64, 32), {"TD": 4, "R": 2, "LS": 8}),
    (64, (128, 32), {"PREFETCH": False}),
]


@pytest.mark.parametrize("d,tiles,constants", ROWS_OPTIONS,
                         ids=[f"d={d}-{t[0]}x{t[1]}-{c}" for d, t, c in ROWS_OPTIONS])
@pytest.mark.parametrize("n,causal", [(77, False), (130, True)])
def test_every_option_of_the_row_tiled_body_passes_and_counts_the_same(
        runner_max_no_subgroups, monkeypatch, d, tiles, constants, n, causal):
    entry = copy.deepcopy(MANIFEST["kernels"]["fused-rows"])
    entry["workgroup_bytes"][str(d)] = 32768
    entry["tiling"]["block_rows"][str(d)], entry["tiling"]["block_cols"][str(d)] = tiles
    entry["wgsl"][0]["constants_by_d"][str(d)] = constants
    monkeypatch.setitem(MANIFEST["kernels"], "fused-rows", entry)
    r = runner_max_no_subgroups
    r._pipelines.clear()
    try:
        assert r.shader("fused-rows", d) == "fused_rows.wgsl"
        (q, k, v), O, counts = _run(r, "fused-rows", n, d, causal, seed=17, instrumented=True)
    finally:
        r._pipelines.clear()
    expected = count("fused-rows", n, d, causal)
    assert {t: c["read"] for t, c in counts.items()} == expected.reads
    assert {t: c["write"] for t, c in counts.items()} == expected.writes
    report = check_output(O.astype(np.float64).tolist(), q, k, v, causal, kernel="fused")
    assert report["passed"], report


# The options of fused_reg's body (parts/fused_reg_body.wgsl) that the manifest's own tiles
# take at d = 64 and 128, at tiles small enough for any adapter's 32 KB: V in K's place
# (SHARE), unpadded tiles with the K and V bank swizzle, 8 rows an invocation, no prefetch.
REG_OPTIONS = [
    ((64, 16), {"SHARE": True}),
    ((64, 32), {"SHARE": True, "QPAD": 0, "KPAD": 0, "KSWZ": 7, "PPAD": 0}),
    ((64, 16), {"TM": 8}),
    ((64, 32), {"SHARE": True, "TM": 8, "QPAD": 0, "KPAD": 0, "KSWZ": 7, "PPAD": 0}),
    ((32, 32), {"SHARE": True, "PREFETCH": False}),
]


@pytest.mark.parametrize("subgroups", [True, False], ids=["with-subgroups", "without-subgroups"])
@pytest.mark.parametrize("tiles,constants", REG_OPTIONS, ids=[f"{t[0]}x{t[1]}-{c}" for t, c in REG_OPTIONS])
@pytest.mark.parametrize("n,causal", [(77, False), (130, True)])
def test_every_option_of_the_register_tiled_body_passes_and_counts_the_same(
        runner_max, monkeypatch, tiles, constants, n, causal, subgroups):

    from cannery_host.wgpu_runner import Runner

    entry = copy.deepcopy(MANIFEST["kernels"]["fused-reg"])
    entry["tiling"]["block_rows"]["64"], entry["tiling"]["block_cols"]["64"] = tiles
    entry["workgroup_bytes"]["64"] = runner_max.max_wg_bytes
    spec = entry["wgsl"][0]
    spec["constants_by_d"]["64"] = dict(constants)
    spec["with_subgroups"]["constants_by_d"]["64"] = dict(constants)
    spec["with_subgroups"]["min_subgroup_size_by_d"]["64"] = tiles[1] // 4
    monkeypatch.setitem(MANIFEST["kernels"], "fused-reg", entry)
    r = runner_max if subgroups else Runner(limits="max", subgroups=False)
    if subgroups and r.subgroup_min < tiles[1] // 4:
        pytest.skip(f"this adapter's subgroups hold {r.subgroup_min}; B_c = {tiles[1]} needs {tiles[1] // 4}")
    try:
        assert r.shader("fused-reg", 64) == ("fused_reg_lanes.wgsl" if subgroups else "fused_reg.wgsl")
        (q, k, v), O, counts = _run(r, "fused-reg", n, 64, causal, seed=11, instrumented=True)
    except Exception as e:  # noqa: BLE001 - a refusal by workgroup memory only
        if "maxComputeWorkgroupStorageSize" in str(e):
            pytest.skip(str(e))
        raise
    expected = count("fused-reg", n, 64, causal)
    assert {t: c["read"] for t, c in counts.items()} == expected.reads
    assert {t: c["write"] for t, c in counts.items()} == expected.writes
    report = check_output(O.astype(np.float64).tolist(), q, k, v, causal, kernel="fused")
    assert report["passed"], report
    assert report["rows_checked"] == n


# The register-tiled plain (manifest "plain-reg", kernels_wgsl/plain_reg_*.wgsl), at every d:
# ragged and whole-vec4 N (the softmax and P V passes read vec4s only where N and kend are
# multiples of 4), a row past 1,024 keys (the softmax's fifth register at the 64 invocations a
# row the manifest gives rows of up to 4,096 keys), full and causal. The softmax holds a row in
# 16 registers of WG vec4s each: with WG = 8 (the last two cases) its last register holds keys
# from 480 up, so every register is checked at a small N; the manifest's WG fills the last one
# from 3,840 keys (64) or 7,680 (128).
PLAIN_REG = [(1, 16, False, None), (65, 16, True, None), (100, 16, False, None), (1100, 16, False, None),
             (1104, 16, True, None), (77, 32, True, None), (128, 32, False, None), (65, 64, True, None),
             (77, 64, False, None), (256, 64, True, None), (130, 128, False, None), (65, 128, True, None),
             (192, 128, False, None), (509, 16, False, 8), (512, 16, True, 8)]


@pytest.mark.parametrize("n,d,causal,wg", [
    pytest.param(n, d, c, wg, id=f"{n=}-{d=}-causal={c}" + (f"-WG={wg}" if wg else "")) for n, d, c, wg in PLAIN_REG])
def test_the_register_tiled_plain_passes_float64_and_moves_plains_bytes_at_its_tiles(
        runner_max, monkeypatch, n, d, causal, wg):
    """Its three passes: the float64 check of O (plain's mirror's rules), and the instrumented
    count of every tensor equal to the manifest walk's at the kernel's tiles, which are plain's
    formulas: Q read once, K and V once per query tile over the visited keys, S written and
    read and P written and read r x kend per query tile, O written once. Where this adapter
    offers less workgroup memory than the manifest's tiles declare at d (lavapipe: 32,768 B
    against 49,152 B at d = 128), the same shaders run at 32 x 32 tiles, and the count is the
    walk's at those."""

    from emulator.tiling import make_tiling

    kernel = "plain-reg"
    tiles = make_tiling(kernel, n, d, causal)
    if tiles.workgroup_bytes > runner_max.max_wg_bytes:
        entry = copy.deepcopy(MANIFEST["kernels"][kernel])
        entry["tiling"]["block_rows"][str(d)] = entry["tiling"]["block_cols"][str(d)] = 32
        entry["workgroup_bytes"][str(d)] = runner_max.max_wg_bytes
        monkeypatch.setitem(MANIFEST["kernels"], kernel, entry)
        tiles = make_tiling(kernel, n, d, causal)
    if wg:  # constants_by_d wins over constants and constants_by_n (planner/shaders.py)
        entry = copy.deepcopy(MANIFEST["kernels"][kernel])
        softmax = next(spec for spec in entry["wgsl"] if spec["pass"] == "softmax")
        softmax.setdefault("constants_by_d", {})[str(d)] = {"WG": wg}
        monkeypatch.setitem(MANIFEST["kernels"], kernel, entry)
        assert planner.kernel_plan(kernel, n, d, causal)["passes"][1]["constants"]["WG"] == wg
        assert n <= 64 * wg
    assert runner_max.shaders(kernel, d) == ["plain_reg_scores.wgsl", "plain_reg_softmax.wgsl", "plain_reg_pv.wgsl"]
    (q, k, v), O, counts = _run(runner_max, kernel, n, d, causal, seed=13, instrumented=True)
    expected = count(kernel, n, d, causal)
    assert {t: c["read"] for t, c in counts.items()} == expected.reads
    assert {t: c["write"] for t, c in counts.items()} == expected.writes
    br = tiles.block_rows
    spans = [(i, min(n, i + br)) for i in range(0, n, br)]
    kends = [tiles.keys_visited(stop) for _start, stop in spans]
    table = sum((stop - start) * kv for (start, stop), kv in zip(spans, kends, strict=True)) * 4
    assert counts["S"]["write"] == counts["S"]["read"] == counts["P"]["write"] == counts["P"]["read"] == table
    assert counts["K"]["read"] == counts["V"]["read"] == sum(kends) * d * 4
    assert counts["Q"]["read"] == counts["O"]["write"] == n * d * 4
    if not causal:
        assert table == n * n * 4
    assert np.isfinite(O).all()
    report = check_output(O.astype(np.float64).tolist(), q, k, v, causal, kernel=kernel, rows=list(range(n)))
    assert report["passed"], report
    assert report["rows_checked"] == n
