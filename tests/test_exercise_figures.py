"""The figures the exercise texts quote (course/figures.py, the steps' exercise.toml
settings) hold what the texts say of them, and agree with the other places that
compute or use the same thing: the film's fp16 limits, the steps' tests, the
emulator's counts.
"""
from __future__ import annotations

import importlib.util
import math
import struct
import sys

import pytest

import build
from course.figures import EXERCISES, figures, float_limits, to_fp16
from emulator import traffic
from exercises import breakit, content
from film import film_figures

F = figures()


def _step_tests(slug: str, step_id: str):
    """A step's tests.py, imported (it runs in CPython as in the page)."""
    path = EXERCISES / slug / step_id / "tests.py"
    spec = importlib.util.spec_from_file_location(f"_figures_{slug}_{step_id}".replace("-", "_"), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fp16_limits_are_the_films():
    lim = film_figures.fp16_limits()
    assert (F["fp16"]["max"], F["fp16"]["edge"], F["fp16"]["ln_edge"]) == (lim["max"], lim["edge"], lim["ln_edge"])
    assert (F["fp16"]["max"], F["fp16"]["edge"], F["fp16"]["binade"], F["fp16"]["next"], F["fp16"]["ulp"]) \
        == (65504, 65520, 2**15, 2**16, 32)


@pytest.mark.parametrize(("name", "code"), [("fp16", "e"), ("float32", "f"), ("float64", "d")])
def test_exp_overflows_exactly_at_ln_edge(name, code):
    """Just below ln_edge, exp(x) is finite in the format (fp16, float32: rounds to its largest
    number); just above, it overflows. float64's exp is Python's own."""
    ln_edge, top = F[name]["ln_edge"], F[name]["max"]
    below, above = ln_edge * (1 - 1e-15), ln_edge * (1 + 1e-15)
    if code == "d":
        assert math.isfinite(math.exp(below))
        with pytest.raises(OverflowError):
            math.exp(above)
        return
    assert struct.unpack("<" + code, struct.pack("<" + code, math.exp(below)))[0] == top
    with pytest.raises(OverflowError):
        struct.pack("<" + code, math.exp(above))


def test_float64_and_float32_limits_match_the_platform():
    assert F["float64"]["max"] == sys.float_info.max
    assert math.isclose(F["float64"]["ln_edge"], math.log(sys.float_info.max), rel_tol=1e-15)
    assert F["float32"]["max"] == struct.unpack("<f", struct.pack("<f", 3.4028234663852886e38))[0]
    assert float_limits("f", 0x7F7FFFFF)["binade"] == 2.0**127
    # the figures break-it's texts show, to two decimals
    assert [round(F[k]["ln_edge"], 2) for k in ("float64", "float32", "fp16")] == [709.78, 88.72, 11.09]


def test_a_limit_rounded_to_two_decimals_is_still_finite():
    """The hint's trap: e^{11.09} ≈ 65,513 rounds down to 65,504, so 11.09 is not the limit."""
    r = F["fp16"]["rounded"]
    assert r["limit"] == 11.09 and round(r["exp"]) == 65513 and r["exp_fp16"] == F["fp16"]["max"]
    assert to_fp16(F["fp16"]["edge"]) == math.inf and to_fp16(F["fp16"]["edge"] - 1) == F["fp16"]["max"]


def test_harden_figures_agree_with_its_tests():
    tests = _step_tests("flash-backward", "harden")
    assert round(F["fp16"]["ln_edge"], 4) == tests.LIMIT and F["fp16"]["max"] == tests.FP16_MAX
    step = content.step("flash-backward", "harden")
    assert step["fp16_fits"] < F["fp16"]["ln_edge"] < min(step["fp16_overflows"])
    assert (tests.FITS, tests.OVERFLOWS) == (step["fp16_fits"], tuple(step["fp16_overflows"]))


def test_break_it_figures():
    assert F["tol"] == breakit.TOL == 2.0**-7
    assert content.step("break-it", "predict")["unseen_error"] < breakit.TOL
    assert F["weak_scale"] == 0.01


def test_the_worked_example():
    l_exact = math.fsum(math.exp(s - 3) for s in (1, 2, 3, 0))
    assert F["example"]["scores"] == [1, 2, 3, 0] and F["example"]["tile"] == 2
    assert F["example"]["m"] == 3 and math.isclose(F["example"]["l"], l_exact, rel_tol=1e-15)


def test_probe_figures_agree_with_its_tests_and_the_emulator():
    tests = _step_tests("online-softmax", "probe")
    assert set(content.step("online-softmax", "probe")["ragged_n"]) <= set(tests.GRID_N)
    assert build.lesson_counts()["n4096_d16"]["plain"]["total_bytes"] \
        == traffic.count("plain", 4096, 16, False, 16384).total_bytes == 285_736_960


def test_triton_n_is_what_its_tests_run():
    assert F["triton_n"] == [1, 65, 100, 1000]
