"""Exercise 2, FlashAttention backward with recomputation: what each typical
wrong answer trips over, with real values. (The generic checks, solution
passes, starter and every wrong/*.py fail, the offline CLI agrees, are in
tests/test_exercises.py for every step.) The memory each step's code holds,
measured against a budget from its tiles, catches the answers that read like
a tiled pass and hold a strip or a table; the expected values are worked out
only after the learner's call returns."""
from __future__ import annotations

import math
import struct

from exercises import content, runner

SLUG = "flash-backward"


def _failed(step, wrong):
    source = content.wrong_answers(content.step(SLUG, step))[wrong]
    report = runner.check(SLUG, step, source)
    assert report["error"] is None
    return {r["name"] for r in report["results"] if not r["ok"]}, report


def _half(x):
    try:
        return struct.unpack("<e", struct.pack("<e", x))[0]
    except OverflowError:
        return math.inf


def test_the_fp16_limit_is_ln_65520_to_four_decimals_not_11_09():
    assert round(math.log(65520), 4) == 11.0901
    assert _half(math.exp(11.09)) == 65504.0          # 65,513 rounds down: 11.09 is not the limit
    assert _half(math.exp(11.0901)) == 65504.0        # 65,519.3: still below 65,520
    assert _half(math.exp(11.0902)) == math.inf       # 65,525.9: infinity
    assert _half(65519.99) == 65504.0 and _half(65520.0) == math.inf
    namespace = {}
    tests = content.read(content.step(SLUG, "harden"), "tests.py")
    exec(compile(tests, "tests.py", "exec"), namespace)
    assert namespace["LIMIT"] == 11.0901
    for wrong in ("limit_rounded_to_11_09.py", "limit_at_the_largest_half.py"):
        failed, _ = _failed("harden", wrong)
        assert failed == {"test_the_fp16_limit"}, wrong


def test_without_the_max_subtraction_only_the_fp16_case_past_the_limit_fails():
    failed, report = _failed("harden", "no_max_subtraction.py")
    assert failed == {"test_fp16_scores_past_the_limit"}   # float64 and the 10.9 case still pass
    bad = next(r for r in report["results"] if not r["ok"])
    assert "largest score 11.2" in bad["input"] and bad["got"] == "nan"


def test_the_given_forward_turns_an_empty_row_into_nan():
    source = content.read(content.step(SLUG, "harden"), "starter.py")
    out = runner.run(source)
    assert out["error"] is None and "nan" in out["output"]
    failed, report = _failed("harden", "nan_on_empty_row.py")
    assert failed == {"test_a_first_key_tile_all_masked", "test_rows_with_no_keys"}


def test_of_the_numbers_only_the_L_test_catches_a_softmax_recomputed_without_L():
    failed, report = _failed("scratch", "softmax_recomputed_without_L.py")
    # ...and the reads: its own softmax walks every key of the row, once per query row.
    assert failed == {"test_p_is_recomputed_from_the_given_L", "test_reads_like_the_fused_backward"}
    reads = next(r for r in report["results"] if r["name"] == "test_reads_like_the_fused_backward")
    assert "your code read every row of K" in reads["message"]
    bad = next(r for r in report["results"] if not r["ok"])
    assert "L + ln 2" in bad["input"]
    # its rows with L shifted get twice the expected gradient: P not halved
    assert bad["expected"] == "dQ[1][0] = 0.0129" and bad["got"] == "0.0258"


def test_leaving_D_out_keeps_dV_right_and_breaks_dQ_even_with_one_key():
    failed, report = _failed("scratch", "d_left_out.py")
    first = report["results"][0]
    assert first["message"] == ("N = 1, d = 4, seed 1, block_rows 1, block_cols 1, full: "
                                "expected dQ[0][0] = 0.0, got -0.0024")


def test_empty_rows_and_ragged_tiles_are_caught_in_the_backward():
    failed, _ = _failed("scratch", "nan_on_empty_row.py")
    assert failed == {"test_padding_keys_and_a_key_tile_all_masked", "test_rows_with_no_keys"}
    failed, _ = _failed("scratch", "off_by_one_last_tile.py")
    assert "test_random_ragged" in failed and "test_one_row" in failed


def test_the_module_ticks_the_backward_objectives_from_this_exercises_steps():
    import tomllib
    from pathlib import Path
    module = tomllib.loads((Path(content.ROOT) / "site/content/module.toml").read_text(encoding="utf-8"))
    steps = [st for g in module["objective_groups"] for o in g["items"] for st in o.get("steps", [])]
    assert "flash-backward/scratch" in steps and "flash-backward/harden" in steps
    ids = {f"{s}/{st['id']}" for s in content.slugs() for st in content.load(s)["steps"]}
    ids |= {f"{s}/{r.lower()}" for s in content.slugs() for r in content.load(s).get("ladder", [])}
    assert set(steps) <= ids  # every objective names steps that exist


# ---------------------------------------------------------------------------
# Memory held: the shortcuts that read like a tiled pass and hold a table or a strip

def _memory_case(step):
    m = content.step(SLUG, step)["memory"]
    return m["n"], m["d"], m["block_rows"], m["block_cols"], m["seed"]


def _only_failure(step, wrong):
    failed, report = _failed(step, wrong)
    bad = [r for r in report["results"] if not r["ok"]]
    return failed, bad[0] if bad else None


def test_tiles_walked_only_to_fill_a_table_of_p_read_as_tiled_and_fail_only_the_memory_test():
    n, _d, br, bc, _seed = _memory_case("scratch")
    for wrong in ("p_table_filled_tile_by_tile.py", "p_cache_of_every_pair.py"):
        failed, bad = _only_failure("scratch", wrong)
        assert failed == {"test_holds_no_table_of_p"}, wrong  # the reads test passes: the walk is the fused one
        assert f"block_rows {br}, block_cols {bc}): that is an N × N table of P ({n * n:,} numbers)" in bad["message"]
        assert bad["message"].startswith(bad["input"] + ": your code held ")
        assert bad["expected"].startswith("memory held: ") and bad["got"].startswith("memory held: ")


def test_a_whole_row_softmax_or_a_score_table_gathered_tile_by_tile_fails_only_the_memory_test():
    n, _d, br, _bc, _seed = _memory_case("harden")
    for wrong, shape in (("whole_row_softmax_tiled_reads.py", f"a block_rows × N strip of scores ({br * n:,} numbers)"),
                         ("score_table_filled_tile_by_tile.py", f"an N × N table of scores ({n * n:,} numbers)")):
        failed, bad = _only_failure("harden", wrong)
        assert failed == {"test_holds_one_tile_of_scores"}, wrong
        assert f"that is {shape}" in bad["message"], bad["message"]


def test_a_copy_of_the_inputs_then_an_untiled_loop_is_named_as_a_copy_by_the_reads():
    for step, test, tensor in (("scratch", "test_reads_like_the_fused_backward", "Q"),
                               ("harden", "test_reads_like_the_fused_kernel", "K")):
        failed, report = _failed(step, "copy_then_untiled.py")
        assert test in failed and failed <= {test, "test_holds_no_table_of_p", "test_holds_one_tile_of_scores"}
        reads = next(r for r in report["results"] if r["name"] == test)
        assert (f"your code read every row of {tensor} just once in all (30 reads), so it held all of {tensor} "
                "at once") in reads["message"]


def test_the_memory_budget_follows_the_tiles_a_table_passes_when_one_tile_is_the_whole_table():
    from emulator.backward import forward64, random_do, reference
    from emulator.inputs import random_qkv
    from exercises import instruments
    from exercises.testing import Failure
    n, d, br, bc, seed = _memory_case("scratch")
    Q, K, V = random_qkv(n, d, seed)
    dO = random_do(n, d, seed)
    O, L = forward64(Q, K, V)
    ns = {}
    exec(content.wrong_answers(content.step(SLUG, "scratch"))["p_table_stored.py"], ns)
    ref = reference(Q, K, V, dO)
    small, whole = instruments.backward_budget(n, d, br, bc), instruments.backward_budget(n, d, n, n)
    assert whole.bytes > small.bytes * 50       # 4 tiles of N × N against 4 of br × bc, and the same D
    for tiles, holds in (((br, bc), False), ((n, n), True)):
        run = instruments.measure_backward(ns["flash_backward"], Q, K, V, O, dO, L, *tiles, False)
        assert all(math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)
                   for got, want in zip(run.result[0], ref["dQ"], strict=True) for x, y in zip(got, want, strict=True))
        try:
            instruments.hold_backward(run, "case", n, d, *tiles)
            passed = True
        except Failure as f:
            passed = False
            assert "N × N table of P" in f.message
        assert passed == holds, tiles  # the same table: refused at small tiles, a tile's worth at N × N


def _frames_hold_expected(names):
    """A check, for a stand-in learner function, that no frame above it holds a local in ``names``
    or a dict of gradients (the tests' expected values)."""
    import sys
    frame = sys._getframe(2)
    found = []
    while frame is not None:
        for key, value in frame.f_locals.items():
            if key in names or (isinstance(value, dict) and "dQ" in value):
                found.append(f"{frame.f_code.co_name}.{key}")
        frame = frame.f_back
    return found


def _spying(solution, name: str, expected_names: set, seen: list):
    """``solution``'s function ``name``, recording in ``seen`` what the frames above it hold."""
    real = getattr(solution, name)

    def spy(*args, **kwargs):
        seen.extend(_frames_hold_expected(expected_names))
        return real(*args, **kwargs)
    return spy


def test_no_frame_holds_an_expected_value_while_the_learners_code_runs():
    import types
    for step, name, expected_names in (("scratch", "flash_backward", {"ref", "want", "expected"}),
                                       ("harden", "flash_forward", {"want_o", "want_l", "ref", "expected"})):
        entry = content.step(SLUG, step)
        solution = runner.load_module(content.read(entry, "solution.py"))
        seen = []
        mod = types.SimpleNamespace(**vars(solution))
        setattr(mod, name, _spying(solution, name, expected_names, seen))
        results = runner.run_tests(runner.load_tests(entry), mod)
        assert all(r["ok"] for r in results), [r["message"] for r in results if not r["ok"]]
        assert seen == [], (step, seen)


# ---------------------------------------------------------------------------
# The project's own answers are out of reach (exercises.guard), however they are reached for

REFUSED = "this step runs your code without the project's own modules"


def test_an_import_of_the_projects_reference_at_the_top_is_refused_as_the_code_loads():
    for step, name, module in (("scratch", "imports_the_reference.py", "emulator.backward_reference.reference"),
                               ("harden", "imports_forward64.py", "emulator.backward.forward64")):
        source = content.wrong_answers(content.step(SLUG, step))[name]
        report = runner.check(SLUG, step, source)
        assert report["results"] == [] and not report["ok"]
        assert f"ImportError: {module}: {REFUSED}" in report["error"], report["error"]


def test_a_frame_walk_is_refused_as_it_loads_naming_the_frame_attribute():
    for step, attr in (("scratch", "f_locals"), ("harden", "f_globals")):
        source = content.wrong_answers(content.step(SLUG, step))["frame_walk_to_the_oracle.py"]
        report = runner.check(SLUG, step, source)
        assert report["results"] == [] and not report["ok"]
        assert f"SyntaxError: {attr}: this step runs your code without reaching into Python's own machinery" in \
            report["error"], report["error"]


def test_a_built_name_or_an_importlib_call_fails_every_test_that_calls_the_code():
    for step, name, module in (("scratch", "dynamic_import.py", "emulator.backward_reference.reference"),
                               ("harden", "dynamic_import.py", "importlib")):
        failed, report = _failed(step, name)
        calls = {r["name"] for r in report["results"]} - {"test_the_fp16_limit"}  # a constant, not a call
        assert failed == calls, (step, name)
        for r in report["results"]:
            if not r["ok"]:
                assert r["message"] == f"{r['input']}: {module}: {REFUSED}: the count is yours to write"
                assert r["got"] == module and r["expected"] == "code of your own"
