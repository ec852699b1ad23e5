"""Exercise 4 (wgsl-kernel): the skeletons, the reference solution, the typical wrong
shaders and the static checks of exercises/wgsl_judge.py; then the reference solution and
the wrong shaders run natively through wgpu-py (lavapipe here), judged by the
emulator's float64 checker, with instrumented byte counts equal to
emulator.traffic.count("fused", ...).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import wgsl_answers
import wrong_expected

from emulator.tiling import MANIFEST
from exercises import content, wgsl_judge
from planner.shaders import instrument, read_source

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "site" / "content" / "exercises" / "wgsl-kernel"
FUSED = read_source("fused.wgsl")  # as the hosts compile it, parts joined
HEADER = (ROOT / "kernels_wgsl" / "parts" / "header.wgsl").read_text()


def _src(rel: str) -> str:
    """A file of the exercise, ``STEP/NAME``; a wrong shader, ``STEP/wrong/NAME``, as
    exercises.content gives it (stored whole or as a patch against the solution)."""
    step, _, name = rel.partition("/wrong/")
    if name:
        return content.wrong_answer(content.step("wgsl-kernel", step), name)
    return (EX / rel).read_text()


# ---- files and static checks -----------------------------------------------------

@pytest.mark.parametrize("rel", ["scratch/starter.wgsl", "scratch/solution.wgsl", "harden/starter.wgsl",
                                 "harden/solution.wgsl"])
def test_every_skeleton_and_solution_has_the_shared_header_byte_for_byte(rel):
    """The exercise's shaders are whole files, with no include: the learner reads and edits
    one in the page, which compiles it as typed. Their header is the shared part's."""
    block = wgsl_judge.header_block(_src(rel))
    assert block is not None and block == wgsl_judge.header_block(HEADER) == wgsl_judge.header_block(FUSED)
    assert "atomicAdd(&counters[slot], elems);" in block
    assert "#include" not in _src(rel)


def test_a_changed_byte_in_the_header_is_a_static_problem():
    good = _src("harden/solution.wgsl")
    bad = good.replace("atomicAdd(&counters[slot], elems);", "atomicAdd(&counters[slot], elems );")
    assert bad != good
    assert wgsl_judge.static_problems(good, []) == []
    assert wgsl_judge.static_problems(good, [], reference=HEADER) == []
    problems = wgsl_judge.static_problems(bad, [], reference=HEADER)
    assert len(problems) == 1 and "instrument header" in problems[0]


def test_the_exercise_declares_both_steps_with_cases_that_cover_the_harden_list():
    ex = content.load("wgsl-kernel")
    assert [s["id"] for s in ex["steps"]] == ["scratch", "harden"]
    harden = wgsl_judge.step_entry("harden")
    ds = {case[1] for case in harden["cases"]}
    assert ds == {16, 32, 64}
    assert any(case[2] for case in harden["cases"])  # causal
    for n, d, *_ in harden["cases"]:
        br = wgsl_judge.tiling(d, harden["workgroup_bytes"])["BR"]
        if n % br:
            break
    else:
        pytest.fail("no ragged N among Harden's cases")


@pytest.mark.parametrize("step", ["scratch", "harden"])
def test_the_solution_passes_every_static_check(step):
    assert wgsl_judge.static_problems(_src(f"{step}/solution.wgsl"), list(wgsl_judge.STATIC_CHECKS)) == []


def test_the_project_fused_kernel_passes_the_static_checks_too():
    for check in wgsl_judge.STATIC_CHECKS.values():
        assert check(FUSED) == []


# What each typical wrong shader is expected to do, from its step's wrong/expected.toml
# (tests/wrong_expected.py, WGSL_KEYS): {"STEP/wrong/NAME": its entry}.
WGSL_STEPS = [st["id"] for st in content.load("wgsl-kernel")["steps"] if st.get("kind") == "wgsl"]
EXPECTED = {f"{step}/wrong/{name}": e for step in WGSL_STEPS
            for name, e in wrong_expected.load(content.step("wgsl-kernel", step))[1].items()}
STATIC = sorted(rel for rel, e in EXPECTED.items() if "static" in e)
RUN = sorted(rel for rel, e in EXPECTED.items() if "static" not in e)


@pytest.mark.parametrize("step", WGSL_STEPS)
def test_every_wrong_shader_has_its_expectation_beside_it(step):
    entry = content.step("wgsl-kernel", step)
    mine = {rel.split("/")[-1]: e for rel, e in EXPECTED.items() if rel.startswith(f"{step}/")}
    assert sorted(mine) == sorted(content.wrong_answers(entry, ".wgsl")), wrong_expected.path(entry)
    for name, e in mine.items():
        assert set(e) <= wrong_expected.WGSL_KEYS and e.get("says"), (name, e)
        assert e.get("static") in (None, *entry["static"]), (name, e)


@pytest.mark.parametrize("rel", STATIC)
def test_each_wrong_shader_with_a_source_fault_fails_its_intended_static_check(rel):
    e = EXPECTED[rel]
    problems = wgsl_judge.STATIC_CHECKS[e["static"]](_src(rel))
    assert any(e["says"] in p for p in problems), problems


def test_reading_k_straight_from_global_memory_is_refused_at_its_line():
    src = _src("scratch/wrong/row_max_from_global_memory.wgsl")
    problems = wgsl_judge.static_problems(src, wgsl_judge.step_entry("scratch")["static"])
    line = next(i for i, text in enumerate(src.splitlines(), 1) if "k[base + j * D + c]" in text)
    assert problems == [
        f"line {line}: main reads k[...] straight from global memory, not through load_k: the counters cannot "
        "see those reads, and a tiled kernel reads k only into its tile in workgroup memory",
        f"line {line}: main reads q[...] straight from global memory, not through load_q: the counters cannot "
        "see those reads, and a tiled kernel reads q only into its tile in workgroup memory"]
    for step in ("scratch", "harden"):
        assert "counted_loads" in wgsl_judge.step_entry(step)["static"]


_BUFFERS = """
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(4) var<storage, read_write> o: array<f32>;
fn tally(slot: u32, elems: u32) {}
fn load_k(i: u32) -> f32 { tally(2u, 1u); return k[i]; }
fn main() {
  BODY
}
"""


@pytest.mark.parametrize("body,says", [
    ("let x = load_k(3u);", None),                                   # through the counted helper
    ("let x = k[3u];", "main reads k[...] straight from global memory"),
    ("o[0u] = 1.0;", "main writes o[...] straight to global memory"),
    ("o[k[0u]] += 1.0;", "main writes o[...]"),
    ("var k: array<f32, 4>; let x = k[1u];", None),                  # a local of the same name
    ("let x = arr.k[0u];", None),                                    # a member, not the buffer
    ("// k[3u] in a comment", None),
])
def test_counted_loads_on_small_shapes(body, says):
    problems = wgsl_judge.check_counted_loads(_BUFFERS.replace("BODY", body))
    if says is None:
        assert problems == []
    else:
        assert any(says in p and p.startswith("line 7:") for p in problems), problems


def test_the_harden_starter_fails_both_static_checks_at_the_right_lines():
    src = _src("harden/starter.wgsl")
    lines = src.splitlines()
    inf = wgsl_judge.check_no_infinity(src)
    bar = wgsl_judge.check_uniform_barriers(src)
    inf_line = int(inf[0].split(":")[0].split()[1])
    bar_line = int(bar[0].split(":")[0].split()[1])
    assert "0xff800000u" in lines[inf_line - 1]
    assert "return" in lines[bar_line - 1]


@pytest.mark.parametrize("snippet,says", [
    ("let m = -1e39;", "beyond f32's largest"),
    ("let m = -3.5e38;", "beyond f32's largest"),
    ("let m = -1.0 / 0.0;", "division by the literal zero"),
    ("let m = bitcast<f32>(0x7f800000u);", "bitcast"),
    ("let m = -infinity;", "says infinity"),
])
def test_no_infinity_catches_each_way_of_writing_one(snippet, says):
    problems = wgsl_judge.check_no_infinity(f"fn f() {{\n  {snippet}\n}}\n")
    assert any(says in p and p.startswith("line 2:") for p in problems), problems


@pytest.mark.parametrize("snippet", ["let m = -3.0e38;", "let x = 1.0e-38;", "let x = 10.0 / 3.0;",
                                     "let x = bitcast<f32>(0x3f800000u);  // 1.0", "// -inf in a comment"])
def test_no_infinity_lets_finite_values_and_comments_through(snippet):
    assert wgsl_judge.check_no_infinity(f"fn f() {{\n  {snippet}\n}}\n") == []


_BARRIER_SHAPES = """
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) li: u32, @builtin(workgroup_id) wg: vec3<u32>) {
  let row = wg.x * 64u + li;
  let tile = wg.x;
  BODY
}
"""


@pytest.mark.parametrize("body,ok", [
    ("if (tile > 2u) { workgroupBarrier(); }", True),                       # uniform: workgroup id
    ("if (row < params.n) { workgroupBarrier(); }", False),                 # varying through row
    ("var t = 0u; if (li == 0u) { t = 1u; } if (t > 0u) { workgroupBarrier(); }", False),  # via assignment
    ("for (var j = li; j < 64u; j += 64u) { storageBarrier(); }", False),   # varying loop start
    ("for (var j = 0u; j < 4u; j++) { workgroupBarrier(); }", True),
    ("if (li > 3u) { let x = 1u; } else { workgroupBarrier(); }", False),   # else of a varying if
    ("if (li > 3u) { return; }\n  workgroupBarrier();", False),           # early return
    ("workgroupBarrier();\n  if (li > 3u) { return; }", True),             # return after the last barrier
])
def test_uniform_barriers_on_small_shapes(body, ok):
    problems = wgsl_judge.check_uniform_barriers(_BARRIER_SHAPES.replace("BODY", body))
    assert (problems == []) == ok, problems


# ---- native runs through wgpu-py -------------------------------------------------

@pytest.fixture(scope="module")
def device():
    """A wgpu-py device at WebGPU's default limits, or a skip saying why not."""
    try:
        from cannery_host.wgpu_runner import KernelError, Runner
    except ImportError as e:
        pytest.skip(f"wgpu-py is not importable: {e}")
    try:
        return Runner(limits="default")
    except (KernelError, RuntimeError) as e:
        pytest.skip(f"no WebGPU adapter for wgpu-py: {e}")


def run_source(runner, source: str, n: int, d: int, causal: bool, workgroup_bytes: int, scale: float = 1.0,
               offsets: tuple = ()):
    """Compile ``source`` (instrumented) with D, BR, BC from the declared M, run it on
    seeded inputs (Q times ``scale``, rows shifted by ``offsets``, as
    exercises.wgsl_judge.case_inputs draws them), return (q, k, v, O rows, counted
    {tensor: {read, write}} bytes)."""
    import numpy as np

    *_, q, k, v = wgsl_judge.case_inputs([n, d, causal, scale, list(offsets)])
    consts = wgsl_judge.tiling(d, workgroup_bytes)
    dev, gpu = runner.device, runner.wgpu
    module = dev.create_shader_module(code=instrument(source))
    errors = [m for m in module.get_compilation_info_sync() if m.type == "error"]
    if errors:
        raise RuntimeError(f"compile: {errors}")
    pipe = dev.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main",
                                                               "constants": consts})
    bufs = {name: runner._storage(0, np.array(x, np.float32)) for name, x in (("Q", q), ("K", k), ("V", v))}
    bufs["O"] = runner._storage(n * d * 4)
    slots = MANIFEST["instrument"]["slots"]
    bufs["counters"] = runner._storage(len(slots) * 4)
    params = dev.create_buffer_with_data(data=np.array([n, int(causal), 0, 0], np.uint32),
                                         usage=gpu.BufferUsage.UNIFORM)
    binding = {"params": 0, "Q": 1, "K": 2, "V": 3, "O": 4, "counters": MANIFEST["instrument"]["binding"]}
    entries = [{"binding": binding[name], "resource": {"buffer": buf, "offset": 0, "size": buf.size}}
               for name, buf in dict(bufs, params=params).items()]
    group = dev.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=entries)
    enc = dev.create_command_encoder()
    enc.clear_buffer(bufs["O"])
    enc.clear_buffer(bufs["counters"])
    cpass = enc.begin_compute_pass()
    cpass.set_pipeline(pipe)
    cpass.set_bind_group(0, group)
    cpass.dispatch_workgroups((n + consts["BR"] - 1) // consts["BR"], 1, 1)
    cpass.end()
    dev.queue.submit([enc.finish()])
    out = np.frombuffer(dev.queue.read_buffer(bufs["O"]), np.float32).reshape(n, d)
    raw = np.frombuffer(dev.queue.read_buffer(bufs["counters"]), np.uint32)
    counted = {}
    for i, slot in enumerate(slots):
        tensor, kind = slot.split(".")
        counted.setdefault(tensor, {"read": 0, "write": 0})[kind] = int(raw[i]) * MANIFEST["bytes_per_element"]
    return q, k, v, out.astype(float).tolist(), counted


def _cases(step):
    entry = wgsl_judge.step_entry(step)
    out = []
    for case in entry["cases"]:
        n, d, c, scale = wgsl_judge.case_inputs(case)[:4]
        offsets = wgsl_judge.case_offsets(case)
        out.append(pytest.param(step, n, d, c, scale, offsets, entry["workgroup_bytes"],
                                id=f"{step}-{n=}-{d=}-causal={c}" + (f"-{scale=}" if scale != 1.0 else "")
                                + (f"-offsets={'/'.join(f'{x:g}' for x in offsets)}" if offsets else "")))
    return out


def _verdicts(runner, rel, source=None):
    """The judge's verdict on each case of the shader's step (the shader at ``rel``, or
    ``source`` for that step)."""
    step = rel.split("/")[0]
    entry = wgsl_judge.step_entry(step)
    verdicts = []
    for case in entry["cases"]:
        n, d, causal, scale = wgsl_judge.case_inputs(case)[:4]
        offsets = wgsl_judge.case_offsets(case)
        q, k, v, out, counted = run_source(runner, source or _src(rel), n, d, causal, entry["workgroup_bytes"],
                                           scale, offsets)
        verdicts.append(wgsl_judge.judge(out, q, k, v, causal, entry["workgroup_bytes"], counted, scale, offsets))
    return verdicts


@pytest.mark.gpu
@pytest.mark.parametrize("step,n,d,causal,scale,offsets,m", _cases("scratch") + _cases("harden"))
def test_the_reference_solution_passes_every_case_with_the_emulators_byte_count(device, step, n, d, causal, scale,
                                                                                offsets, m):
    q, k, v, out, counted = run_source(device, _src(f"{step}/solution.wgsl"), n, d, causal, m, scale, offsets)
    verdict = wgsl_judge.judge(out, q, k, v, causal, m, counted, scale, offsets)
    assert verdict["passed"], verdict["message"]
    assert verdict["counted_bytes"] == verdict["expected_bytes"] > 0
    assert verdict["check"]["rows_checked"] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("rel", RUN)
def test_each_wrong_shader_passes_the_source_checks_and_fails_a_case_saying_what_went_wrong(device, rel):
    # The page checks the source first: a shader its expectation lets through must pass the
    # step's static checks, then fail a case, the first failure's message with the entry's words.
    says = EXPECTED[rel]["says"]
    step = rel.split("/")[0]
    assert wgsl_judge.static_problems(_src(rel), wgsl_judge.step_entry(step)["static"]) == []
    failed = [x for x in _verdicts(device, rel) if not x["passed"]]
    assert failed, f"{rel} passed every case"
    assert says in failed[0]["message"], failed[0]["message"]
    if says == "beyond the bound":
        report = failed[0]["check"]
        assert f"row {report['first_failing_row']} (query tile {report['first_failing_tile']})" in failed[0]["message"]


@pytest.mark.gpu
@pytest.mark.parametrize("rel", sorted(rel for rel, e in EXPECTED.items() if e.get("skill_less")))
def test_the_skill_less_shaders_get_o_and_the_bytes_right_where_scores_are_small(device, rel):
    # What the instruments are for: on lavapipe these shaders match float64 and the
    # counters on every case of scores about 1. The case with Q x 30 (exp past f32's
    # 88.7 without the max) catches one that never subtracts a max; a source check
    # catches one that reads K around the counters.
    e, step = EXPECTED[rel], rel.split("/")[0]
    cases = wgsl_judge.step_entry(step)["cases"]
    verdicts = _verdicts(device, rel)
    scales = [wgsl_judge.case_inputs(c)[3] for c in cases]
    plain = [(v, s) for v, s, c in zip(verdicts, scales, cases, strict=True) if not wgsl_judge.case_offsets(c)]
    small = [v for v, s in plain if s == 1.0]
    assert small and all(v["passed"] and v["counted_bytes"] == v["expected_bytes"] for v in small)
    [large] = [v for v, s in plain if s != 1.0]
    if "static" in e:
        assert large["passed"]  # right numbers: only the source check sees the reads
        problems = wgsl_judge.static_problems(_src(rel), wgsl_judge.step_entry(step)["static"])
        assert any(e["says"] in p for p in problems), problems
    else:
        assert not large["passed"]
        assert large["message"].startswith("N = 128, d = 64, full, Q × 30, largest score ")
        assert e["says"] in large["message"]


@pytest.mark.gpu
def test_the_scratch_skeleton_compiles_and_fails_with_o_all_zero(device):
    entry = wgsl_judge.step_entry("scratch")
    n, d, causal = entry["cases"][0][:3]
    q, k, v, out, counted = run_source(device, _src("scratch/starter.wgsl"), n, d, causal, entry["workgroup_bytes"])
    assert all(x == 0.0 for row in out for x in row)
    verdict = wgsl_judge.judge(out, q, k, v, causal, entry["workgroup_bytes"], counted)
    assert not verdict["passed"] and "row 0 (query tile 0)" in verdict["message"]
    # The loads and the store are in place already: the bytes are right from the start.
    assert verdict["counted_bytes"] == verdict["expected_bytes"]


@pytest.mark.gpu
def test_the_harden_starter_with_only_its_static_faults_fixed_still_fails_ragged_or_causal(device):
    src = _src("harden/starter.wgsl")
    assert "const NEG_INF: f32 = bitcast<f32>(0xff800000u);" in src and "if (row >= n) { return; }" in src
    src = src.replace("bitcast<f32>(0xff800000u)", "-3.0e38").replace("  if (row >= n) { return; }\n", "")
    src = src.replace("NEG_INF", "NEG_BIG_TOO")
    assert wgsl_judge.static_problems(src, ["no_infinity", "uniform_barriers"]) == []
    entry = wgsl_judge.step_entry("harden")
    messages = []
    for case in entry["cases"]:
        n, d, causal, scale = wgsl_judge.case_inputs(case)[:4]
        q, k, v, out, counted = run_source(device, src, n, d, causal, entry["workgroup_bytes"], scale)
        verdict = wgsl_judge.judge(out, q, k, v, causal, entry["workgroup_bytes"], counted, scale)
        if not verdict["passed"]:
            messages.append(verdict["message"])
    assert any("causal" in m for m in messages), messages
    assert len(messages) >= 3, messages


# ---- inf and NaN in O; rows whose scores lie far apart ----------------------------

def _solution_o(step, index):
    """(case, float64 O) of a step's case: the exact reference, as a correct GPU would give it."""
    from emulator.attention import reference

    case = wgsl_judge.step_entry(step)["cases"][index]
    n, d, causal, scale, q, k, v = wgsl_judge.case_inputs(case)
    vt = [[row[c] for row in v] for c in range(d)]
    out = []
    for i in range(n):
        keys = k[:i + 1] if causal else k
        dots = [math.fsum(a * b for a, b in zip(q[i], kj, strict=True)) for kj in keys]
        out.append(reference(dots, [col[:len(keys)] for col in vt], d)[0])
    return case, out


def _strict_json(text):
    def refuse(name):
        raise ValueError(f"{name} is not JSON: the page's JSON.parse cannot read it")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("bad,says", [(float("inf"), "holds inf"), (float("-inf"), "holds -inf"),
                                      (float("nan"), "holds NaN")])
def test_inf_or_nan_in_o_through_the_pages_json_is_a_test_failure_naming_its_row_and_column(bad, says):
    # The page sends O as JSON (site/static/js/worker.js writes a non-finite number as
    # "inf", "-inf" or "nan"); before, NaN became null and the judge raised a TypeError.
    from exercises import runner

    case, out = _solution_o("scratch", 0)
    n, d = case[0], case[1]
    flat = [x for row in out for x in row]
    flat[5 * d + 3] = bad
    sent = [x if math.isfinite(x) else repr(x) for x in flat]  # as worker.js's nonFinite writes them
    request = {"op": "wgsl-judge", "step": "scratch", "index": 0, "o": sent, "counts": None}
    reply = _strict_json(runner.handle_json(json.dumps(request)))
    assert reply["ok"], reply
    verdict = reply["result"]
    assert verdict["passed"] is False
    assert verdict["message"] == f"N = {n}, d = {d}, full: row 5, column 3 (query tile 0) {says}"
    # A value lost on the way (null, as JSON.stringify writes NaN) is NaN, not a crash.
    sent[5 * d + 3] = None
    request["o"] = sent
    verdict = _strict_json(runner.handle_json(json.dumps(request)))["result"]
    assert verdict["message"] == f"N = {n}, d = {d}, full: row 5, column 3 (query tile 0) holds NaN"
    # And the same O without the bad value passes.
    request["o"] = flat[:5 * d + 3] + [out[5][3]] + flat[5 * d + 4:]
    assert _strict_json(runner.handle_json(json.dumps(request)))["result"]["passed"] is True


def test_an_overflowed_row_names_its_largest_score_and_a_vanished_row_says_it_came_out_as_zeros():
    case, out = _solution_o("scratch", len(wgsl_judge.step_entry("scratch")["cases"]) - 1)
    n, d, causal, scale, q, k, v = wgsl_judge.case_inputs(case)
    offsets = wgsl_judge.case_offsets(case)
    m = wgsl_judge.step_entry("scratch")["workgroup_bytes"]
    assert wgsl_judge.judge(out, q, k, v, causal, m, None, scale, offsets)["passed"]
    top0 = max(math.fsum(a * b for a, b in zip(q[0], kj, strict=True)) for kj in k) / math.sqrt(d)
    top1 = max(math.fsum(a * b for a, b in zip(q[1], kj, strict=True)) for kj in k) / math.sqrt(d)
    overflowed = [row[:] for row in out]
    overflowed[0][7] = float("nan")
    verdict = wgsl_judge.judge(overflowed, q, k, v, causal, m, None, scale, offsets)
    assert verdict["message"].endswith(
        f"row 0, column 7 (query tile 0) holds NaN: the row's largest score is {top0:.1f}, and exp overflows "
        "f32 past 88.7 unless the row's own running max is subtracted first")
    vanished = [row[:] for row in out]
    vanished[1] = [0.0] * d
    verdict = wgsl_judge.judge(vanished, q, k, v, causal, m, None, scale, offsets)
    assert f"row 1 (query tile 0) came out as zeros, as if it saw no key: its largest score is {top1:.1f}" \
        in verdict["message"]


@pytest.mark.parametrize("step", ["scratch", "harden"])
def test_each_step_has_rows_near_plus_and_minus_200_that_no_fixed_shift_serves(step):
    # In float32, exp(x) is inf above ln(f32 max) = 88.72 and 0 below ln(2^-149) = -103.28.
    # A fixed shift c in place of the row's max must keep every row's largest weight
    # exp(top - c) finite and nonzero: c > top_max - 88.72 and c < top_min + 103.28.
    cases = [c for c in wgsl_judge.step_entry(step)["cases"] if wgsl_judge.case_offsets(c)]
    assert cases, f"{step} has no case with shifted rows"
    for case in cases:
        n, d, causal, scale, q, k, v = wgsl_judge.case_inputs(case)
        tops = [max(math.fsum(a * b for a, b in zip(q[i], kj, strict=True)) for kj in (k[:i + 1] if causal else k))
                / math.sqrt(d) for i in range(n)]
        assert max(tops) > 195 and min(tops) < -195
        low, high = max(tops) - math.log(3.4028234663852886e38), min(tops) - math.log(2.0 ** -149)
        assert low > high + 150, (low, high)  # no shift lies in [low, high]: the interval is empty
        # Softmax ignores a shift of the whole row: O is the unshifted inputs' O, and the
        # emulator's float32 mirror, which subtracts the running max, passes.
    results = wgsl_judge.mirror(step)
    assert all(r["passed"] for r in results), [r["message"] for r in results if not r["passed"]]
    assert "rows' scores shifted by " in results[-1]["message"]


@pytest.mark.gpu
@pytest.mark.parametrize("rel", sorted(rel for rel, e in EXPECTED.items() if e.get("only_far")))
def test_a_fixed_shift_passes_every_case_but_the_rows_far_apart(device, rel):
    # What the case of rows far apart is for: 35 and 45 keep exp finite on every other case,
    # Q x 30 included.
    verdicts = _verdicts(device, rel)
    cases = wgsl_judge.step_entry(rel.split("/")[0])["cases"]
    for verdict, case in zip(verdicts, cases, strict=True):
        assert verdict["passed"] == (not wgsl_judge.case_offsets(case)), (case, verdict["message"])


@pytest.mark.gpu
def test_harden_with_a_fixed_shift_loses_the_row_near_minus_200_to_zeros(device):
    # Every guard of Harden in place, exp(s - 30) for the max: the rows near -200 vanish
    # (and the rows of small scores lose digits to exp(-30), past twice the plain error).
    rel = "harden/wrong/fixed_shift_30.wgsl"
    assert wgsl_judge.static_problems(_src(rel), wgsl_judge.step_entry("harden")["static"]) == []
    cases = wgsl_judge.step_entry("harden")["cases"]
    verdicts = dict(zip(map(str, cases), _verdicts(device, rel), strict=True))
    [far] = [verdicts[str(c)] for c in cases if wgsl_judge.case_offsets(c)]
    assert not far["passed"]
    assert far["message"].startswith("N = 77, d = 32, causal, rows' scores shifted by −200 and +200 in turn")
    assert ": row 0 (query tile 0) came out as zeros, as if it saw no key: its largest score is -200.5. Either " \
        "every weight exp(s − shift) vanished to 0" in far["message"]


# The WGSL steps share one contract (the same solution.wgsl), so each other correct shader
# in tests/exercise_answers/wgsl-kernel/ (a patch against it: tests/wgsl_answers.py) is run
# against every step's cases and checks.


def _answers():
    return [f"{step}/{name}" for step in WGSL_STEPS for name in wgsl_answers.names()]


def test_there_are_other_correct_shaders_for_every_step():
    solutions = {content.read(content.step("wgsl-kernel", step), "solution.wgsl") for step in WGSL_STEPS}
    assert len(solutions) == 1, "the steps' solutions differ: give each step its own other answers"
    assert WGSL_STEPS and wgsl_answers.names()


@pytest.mark.gpu
@pytest.mark.parametrize("rel", _answers())
def test_another_correct_shader_passes_every_case_and_every_static_check(device, rel):
    step, name = rel.split("/")
    source = wgsl_answers.source(name)
    assert wgsl_judge.static_problems(source, wgsl_judge.step_entry(step)["static"]) == []
    for verdict in _verdicts(device, f"{step}/solution.wgsl", source):
        assert verdict["passed"], verdict["message"]
        assert verdict["counted_bytes"] == verdict["expected_bytes"]
