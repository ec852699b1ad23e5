"""The figures the exercise texts quote, each computed here from its definition.

An exercise's Markdown (site/content/exercises/**/*.md, and each translation
under site/content/<lang>/exercises/) is rendered as a Jinja2 template with the
page's context before it becomes HTML (build.py, the ``md`` filter). Every
exercise carries the dict :func:`figures` returns as ``exercise.figures``, so a
text writes ``{{ exercise.figures.fp16.max | thousands }}`` and each language
writes the number by its own rules (65,504 / 65.504); i18n/checks.py refuses a
figure typed into a translation, formulas included. The other figures a text
may name come from the step's settings in exercise.toml (``step.…``, which the
step's tests.py reads too) and from the emulator's counts (``counts.…``,
build.py ``lesson_counts``).

Keys:

``fp16``, ``float32``, ``float64``
    The IEEE 754 binary16, binary32 and binary64 limits (IEEE 754-2019,
    clause 3.6, Table 3.5), unpacked with ``struct`` from the bit pattern of
    each format's largest finite number: ``max`` (65,504 in fp16), ``ulp``
    (the spacing just below ``max``: 32 in fp16), ``binade`` (the power of two
    where that spacing starts: 32,768), ``next`` (``max`` + ``ulp``, the
    power of two the format cannot hold: 65,536), ``edge`` (``max`` + half an
    ulp: round-to-nearest sends anything from here up to infinity; 65,520;
    inf for float64, which cannot hold its own edge) and ``ln_edge`` (the
    smallest x whose exp(x) overflows: ln 65,520 ≈ 11.0901 in fp16, 88.72 in
    float32, 709.78 in float64). film/film_figures.py ``fp16_limits`` computes the
    film's fp16 figures the same way; tests/test_exercise_figures.py holds
    the two together.
``fp16.rounded``
    The trap of a limit written to two decimals: ``limit`` (ln_edge rounded
    to 0.01: 11.09), ``exp`` (e to that: about 65,513) and ``exp_fp16`` (what
    fp16 makes of it: 65,504, still finite).
``tol``
    Break it's bound per entry of O, ``exercises.breakit.TOL`` = 2⁻⁷.
``weak_scale``
    The ``scale=`` every test of break-it's weak suite passes to
    ``random_qkv`` (site/content/exercises/break-it/weak_tests.py): scores of
    about 0.01.
``example``
    The lesson's worked online softmax (site/content/film.toml ``[example]``:
    ``scores``, ``tile``), worked by film/film_figures.py
    ``online_softmax_example``: ``m`` and ``l`` (ℓ ≈ 1.5530).
``triton_n``
    The N that exercise 3's tests run (``RAGGED_N`` in
    site/content/exercises/triton-port/test_flash_triton.py, read without
    importing it: it needs PyTorch).
``triton_fwd_bwd_flop``
    How many times the forward's FLOP exercise 3's benchmark counts for
    forward+backward (``FORWARD_BACKWARD_FLOP`` in its bench_flash_triton.py,
    7/2 = 3.5: the backward's five products against the forward's two).
"""
from __future__ import annotations

import ast
import functools
import math
import struct
import tomllib
from pathlib import Path

from exercises import breakit, content
from film.film_figures import online_softmax_example

EXERCISES = Path(content.EXERCISES_DIR)
FILM_TOML = EXERCISES.parent / "film.toml"

#: Each IEEE 754 format: its ``struct`` code and the bit pattern of its largest finite number
#: (sign 0, exponent all ones but the last bit, fraction all ones).
FORMATS = {"fp16": ("e", 0x7BFF), "float32": ("f", 0x7F7FFFFF), "float64": ("d", 0x7FEFFFFFFFFFFFFF)}


def _unpack(code: str, bits: int) -> float:
    return struct.unpack("<" + code, bits.to_bytes(struct.calcsize(code), "little"))[0]


def float_limits(code: str, max_bits: int) -> dict:
    """The overflow figures of one IEEE 754 format (see the module docstring, ``fp16``).

    code: its ``struct`` format ("e", "f", "d"); max_bits: the bit pattern of its
    largest finite number. Values are Python floats (float64); ``edge`` is inf
    where float64 cannot hold it.
    """
    top = _unpack(code, max_bits)
    ulp = top - _unpack(code, max_bits - 1)
    binade = math.ldexp(0.5, math.frexp(top)[1])  # 2^e with 2^e <= top < 2^(e+1)
    return {"max": top, "ulp": ulp, "binade": binade, "next": top + ulp, "edge": top + ulp / 2,
            # ln(top + ulp/2) without forming it (it overflows float64 for float64 itself)
            "ln_edge": math.log(top) + math.log1p(ulp / (2 * top))}


def to_fp16(x: float) -> float:
    """``x`` rounded to binary16 (round to nearest, ties to even), inf past the edge."""
    try:
        return _unpack("e", struct.unpack("<H", struct.pack("<e", x))[0])
    except OverflowError:
        return math.copysign(math.inf, x)


def module_constant(path: Path, name: str):
    """The value of ``NAME = <literal>`` at the top level of a Python file, read with
    ``ast`` (the file is not imported). Raises LookupError if it has none."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"{path}: no top-level {name} = <literal>")


def keyword_values(path: Path, function: str, keyword: str) -> set:
    """Every literal value a Python file passes as ``keyword=`` to calls of ``function``."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == function:
            out |= {ast.literal_eval(k.value) for k in node.keywords if k.arg == keyword}
    return out


@functools.cache
def figures() -> dict:
    """The figures of the exercise texts (see the module docstring). Raises
    ValueError if break-it's weak tests use more than one scale."""
    out = {name: float_limits(code, bits) for name, (code, bits) in FORMATS.items()}
    limit = round(out["fp16"]["ln_edge"], 2)
    out["fp16"]["rounded"] = {"limit": limit, "exp": math.exp(limit), "exp_fp16": to_fp16(math.exp(limit))}
    out["tol"] = breakit.TOL
    scales = keyword_values(EXERCISES / "break-it" / "weak_tests.py", "random_qkv", "scale")
    if len(scales) != 1:
        raise ValueError(f"break-it/weak_tests.py: expected one scale= for random_qkv, found {sorted(scales)}")
    out["weak_scale"] = scales.pop()
    with open(FILM_TOML, "rb") as f:
        example = tomllib.load(f)["example"]
    worked = online_softmax_example([float(s) for s in example["scores"]], int(example["tile"]))
    out["example"] = {"scores": list(example["scores"]), "tile": example["tile"], "m": worked["m"], "l": worked["l"]}
    out["triton_n"] = list(module_constant(EXERCISES / "triton-port" / "test_flash_triton.py", "RAGGED_N"))
    num, den = module_constant(EXERCISES / "triton-port" / "bench_flash_triton.py", "FORWARD_BACKWARD_FLOP")
    out["triton_fwd_bwd_flop"] = num / den
    return out
