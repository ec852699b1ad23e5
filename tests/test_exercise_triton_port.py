"""Exercise 3 (Triton port): what can be checked without a GPU.

Always (standard library): the test file is collected and skipped with a
reason that says why; the benchmark's FLOP convention and record format
hold, for the committed H200 runs too; the starter marks each of its three
steps and shares the solution's public API; the solution does what the
prompt promises (exp2 with log2 e folded in, two causal stages, autotuning,
tensor descriptors, the D pre-pass, P recomputed); each wrong answer is a
copy of the solution with its mistake and nothing else.

Where PyTorch and Triton are installed (not in CI), through Triton's
interpreter on the CPU (or on a CUDA GPU if there is one): the solution
passes a small selection of the tests, each wrong answer fails the tests
exercise.toml names for it with the message it names, and the benchmark
writes rows of the record format.

The GPU side (the whole test file, the benchmark) runs on an NVIDIA GPU:
see the exercise's prompt.md and docs/BENCHMARKS.md."""
from __future__ import annotations

import ast
import difflib
import importlib.util
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from exercises import content

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "site" / "content" / "exercises" / "triton-port"
META = tomllib.loads((FOLDER / "exercise.toml").read_text(encoding="utf-8"))
EXERCISE = {"dir": str(FOLDER)}  # the folder holding solution.py and wrong/, as exercises.content reads it
HAS_TORCH_TRITON = importlib.util.find_spec("torch") is not None and importlib.util.find_spec("triton") is not None


def _wrong_source(wrong: dict) -> str:
    """The source of exercise.toml's wrong answer ``wrong`` (its ``file``, wrong/NAME.py)."""
    return content.wrong_answer(EXERCISE, wrong["file"].removeprefix("wrong/"))


def _has_gpu_stack() -> bool:
    if not HAS_TORCH_TRITON:
        return False
    import torch
    return torch.cuda.is_available()


@pytest.mark.skipif(_has_gpu_stack(), reason="this machine has a CUDA GPU, PyTorch and Triton: the file runs")
def test_the_gpu_test_file_is_collected_and_skipped_with_its_reason():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, "-m", "pytest", str(FOLDER / "test_flash_triton.py"), "-rs", "-q",
                          "-p", "no:cacheprovider", "-p", "no:randomly"],
                         cwd=FOLDER, capture_output=True, text=True, timeout=120, env=env)
    text = out.stdout + out.stderr
    assert out.returncode == 5, text  # pytest's "no tests ran": the module skipped itself at collection
    assert "1 skipped" in text and "error" not in text.lower(), text
    assert "Exercise 3 runs on an NVIDIA GPU with CUDA, PyTorch and Triton; it cannot run in a browser or in CI" in text
    reason = ("PyTorch is not installed here" if importlib.util.find_spec("torch") is None
              else "Triton is not installed here" if importlib.util.find_spec("triton") is None
              else "PyTorch sees no CUDA GPU here")
    assert reason in text, text


def _bench():
    spec = importlib.util.spec_from_file_location("bench_flash_triton", FOLDER / "bench_flash_triton.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # imports no torch at module level
    return mod


def test_the_benchmark_counts_4_n_squared_d_per_head_half_for_causal_and_3_5_times_with_the_backward():
    bench = _bench()
    assert bench.flops(1, 1, 4096, 64, False) == 4_294_967_296
    assert bench.flops(1, 1, 4096, 64, True) == 2_147_483_648
    assert bench.flops(1, 32, 16384, 128, False) == 4_398_046_511_104
    assert bench.flops(2, 3, 1000, 64, True) == 6 * 2 * 1000 * 1000 * 64
    assert bench.flops(1, 1, 4096, 64, True, "forward+backward") == 7_516_192_768  # 3.5 × 2,147,483,648
    with pytest.raises(ValueError, match="direction"):
        bench.flops(1, 1, 64, 64, False, "backward")
    # 4,294,967,296 FLOP in 1 ms is 4.294967296e12 FLOP/s
    assert bench.tflops(4_294_967_296, 1.0) == pytest.approx(4.294967296, rel=1e-15)


def test_the_benchmark_names_sdpa_backends_from_the_profilers_operations_and_cuts_kernel_names():
    bench = _bench()
    assert bench.backend_of(["aten::_scaled_dot_product_cudnn_attention"]) == "cudnn"
    assert bench.backend_of(["aten::_scaled_dot_product_flash_attention",
                             "aten::_scaled_dot_product_flash_attention_backward"]) == "flash"
    assert bench.backend_of(["aten::_scaled_dot_product_efficient_attention"]) == "efficient"
    assert bench.backend_of(["aten::matmul"]) is None
    assert bench.kernel_name("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64>, true>"
                             "(FLASH_FWD_PARAMS)") == "pytorch_flash::flash_fwd_kernel"
    assert bench.kernel_name("cudnn_generated_fort_native_sdpa_sm90_knob_7(int)") == \
        "cudnn_generated_fort_native_sdpa_sm90_knob_7"


def test_the_benchmark_says_what_it_needs_without_torch():
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("PyTorch is installed here")
    out = subprocess.run([sys.executable, str(FOLDER / "bench_flash_triton.py"), "--module", "solution"],
                         cwd=FOLDER, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "This benchmark needs PyTorch and Triton on an NVIDIA GPU" in out.stderr


#: The record format (bench_flash_triton.py's docstring): every field of a row and its type.
ROW = {"dtype": str, "n": int, "d": int, "batch": int, "heads": int, "causal": bool, "flop": int, "kernel": str,
       "backend": (str, type(None)), "ran": (str, type(None)), "direction": str, "ms": (float, type(None)),
       "tflops": (float, type(None)), "peak_bytes": (int, type(None)), "check_ok": (bool, type(None)),
       "max_err_vs_sdpa": (float, type(None)), "max_err_vs_float64_head0": (float, type(None)),
       "error": (str, type(None))}


def check_rows(rows: list) -> None:
    bench = _bench()
    assert rows
    for r in rows:
        assert set(r) == set(ROW), sorted(set(r) ^ set(ROW))
        for key, kind in ROW.items():
            assert isinstance(r[key], kind), (key, r[key])
        assert r["dtype"] in ("float32", "float16", "bfloat16") and r["direction"] in bench.DIRECTIONS
        assert r["kernel"] in ("sdpa", "by hand") or r["kernel"].startswith("triton (")
        assert (r["backend"] is not None) == (r["kernel"] == "sdpa")
        assert r["flop"] == bench.flops(r["batch"], r["heads"], r["n"], r["d"], r["causal"], r["direction"])
        if r["ms"] is None:
            assert r["error"] and r["tflops"] is None
        else:
            assert r["error"] is None and r["ms"] > 0 and r["peak_bytes"] >= 0
            assert r["tflops"] == pytest.approx(bench.tflops(r["flop"], r["ms"]), rel=1e-12)
        if r["error"] == "out of memory":
            assert r["peak_bytes"] is None


RESULTS = sorted((ROOT / "bench" / "results").glob("triton*.json"))


@pytest.mark.parametrize("path", RESULTS, ids=[p.name for p in RESULTS])
def test_each_recorded_triton_run_keeps_its_rows_meaning(path):
    data = json.loads(path.read_text(encoding="utf-8"))
    assert {"started", "command", "gpu", "torch", "triton"} <= set(data["meta"])
    if "direction" not in data["rows"][0]:  # the first recorded run: forward rows, Triton beside SDPA as it picks
        assert all(r["kernel"] in ("sdpa", "triton (solution)") and r["flop"] > 0 for r in data["rows"])
        return
    check_rows(data["rows"])
    assert set(data["sdpa_picks"]) == {f"{r['dtype']} d={r['d']} {'causal' if r['causal'] else 'full'} "
                                       f"{r['direction']}" for r in data["rows"]}


def _tree(name: str) -> ast.Module:
    return ast.parse((FOLDER / name).read_text(encoding="utf-8"))


def _functions(tree: ast.Module) -> dict:
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def _signature(fn: ast.FunctionDef) -> list:
    return [a.arg for a in fn.args.args]


def test_starter_and_solution_offer_one_api_and_the_same_kernel_arguments():
    starter, solution = _functions(_tree("starter.py")), _functions(_tree("solution.py"))
    # the solution's kernels take a few arguments more: its forward TMA (tensor descriptors on
    # Hopper) and EVEN (N a multiple of 128: no masks); its dK/dV kernel DQ and DQ_ATOMIC (the
    # backward with dQ from atomic adds)
    more = {"_flash_forward": {"TMA", "EVEN"}, "_backward_dkdv": {"DQ", "DQ_ATOMIC", "TMA"}}
    for name in ("_flash_forward", "_backward_preprocess", "_backward_dkdv", "_backward_dq"):
        assert _signature(starter[name]) == [a for a in _signature(solution[name]) if a not in more.get(name, ())], \
            name
    assert _signature(starter["flash_attention"]) == _signature(solution["flash_attention"])[:5] == \
        ["q", "k", "v", "causal", "return_lse"]
    for cls in (starter["FlashAttention"], solution["FlashAttention"]):
        assert [b.id for b in cls.bases if isinstance(b, ast.Name)] == [] and \
            ast.unparse(cls.bases[0]) == "torch.autograd.Function"
        assert {f.name for f in cls.body if isinstance(f, ast.FunctionDef)} == {"forward", "backward"}


def _loads(fn: ast.FunctionDef) -> list[str]:
    """The first argument of each tl.load in a function: what it reads through pointers."""
    return [ast.unparse(c.args[0]) for c in ast.walk(fn) if isinstance(c, ast.Call)
            and ast.unparse(c.func) == "tl.load"]


def test_the_fast_solution_offers_the_solutions_api_and_takes_every_tile_by_descriptor():
    fast, solution = _functions(_tree("solution_fast.py")), _functions(_tree("solution.py"))
    assert _signature(fast["flash_attention"]) == _signature(solution["flash_attention"])
    # one source: the constants, checks and the pre-pass come from solution.py, not copied
    imported = {a.name for n in _tree("solution_fast.py").body if isinstance(n, ast.ImportFrom)
                and n.module == "solution" for a in n.names}
    assert {"LOG2E", "LN2", "_check", "_scratch", "_backward_preprocess"} <= imported
    assert not imported & set(fast)
    # the fast path's loops read only L and D through pointers: every (rows, d) tile by descriptor
    for name in ("_fwd_keys", "_dkdv_queries", "_dq_keys"):
        assert all(ptr.startswith(("L +", "Delta +")) for ptr in _loads(fast[name])), (name, _loads(fast[name]))
        assert ".load([start, 0])" in ast.unparse(fast[name]), name
    for name in ("_fwd_tile", "_backward_dkdv_fast", "_backward_dq_fast"):
        assert "tl.make_tensor_descriptor" in ast.unparse(fast[name]) and "tl.store(" not in \
            ast.unparse(fast[name]).replace("tl.store(L +", ""), name
    # while solution.py's backward loops still load their tiles through pointers, as the prompt teaches
    assert any(ptr.startswith("Q +") for ptr in _loads(solution["_query_tiles"]))


def test_the_starter_marks_each_step_and_the_solution_has_no_todo():
    starter = (FOLDER / "starter.py").read_text(encoding="utf-8")
    assert starter.count("TODO (Port)") == 2 and starter.count("TODO (Compose)") == 2
    assert starter.count("TODO (Backward)") == 3
    assert META["ladder"] == ["Port", "Compose", "Backward"]
    assert "TODO" not in (FOLDER / "solution.py").read_text(encoding="utf-8")


def test_the_solution_kernel_does_what_the_prompt_promises():
    tree = _tree("solution.py")
    fns = _functions(tree)
    tiles = ast.unparse(fns["_key_tiles"])
    forward = ast.unparse(fns["_flash_forward"])
    host = ast.unparse(fns["_forward"]) + ast.unparse(fns["_backward"])
    assert "tl.exp2(m - m_new)" in tiles and "tl.exp2(s)" in tiles and "tl.exp" + "(" not in tiles
    assert "LOG2E.value / math.sqrt(d)" in host                    # log2(e) folded into the score scale
    assert "s * qk_scale - m_new[:, None]" in tiles                # the scale rides on one multiply-add
    assert "keys[None, :] <= rows[:, None]" in tiles               # the causal mask, MASK == 2 only
    assert "acc / l[:, None]" in forward                           # one division, at the end
    # causal in two stages: off the diagonal with no mask (0), then the diagonal block (2)
    causal = forward[forward.index("if CAUSAL:"):forward.index("elif EVEN:")]
    assert causal.count("_key_tiles(") == 2
    assert ", 0, TMA, PRECISION)" in causal and ", 2, TMA, PRECISION)" in causal
    assert "tl.minimum(N, first + BLOCK_M)" in causal             # tiles past the diagonal are never loaded
    assert "tl.make_tensor_descriptor" in forward                  # Hopper: the copy engine (TMA)
    decorators = [ast.unparse(d) for d in fns["_flash_forward"].decorator_list]
    assert any(d.startswith("triton.autotune(configs=_forward_configs()") for d in decorators)
    assert "PRECISION='ieee' if q.dtype == torch.float32" in host
    # backward: D pre-pass, then dK/dV over key tiles and dQ over query tiles, P recomputed from L
    assert "tl.sum(o * do, axis=1)" in ast.unparse(fns["_backward_preprocess"])
    assert "tl.exp2(s_t * qk_scale - l2[None, :])" in ast.unparse(fns["_query_tiles"])
    assert "tl.exp2(s * qk_scale - l2[:, None])" in ast.unparse(fns["_key_tiles_dq"])
    assert "tl.atomic_add(DQ + at, dq" in ast.unparse(fns["_query_tiles"])  # or dQ by atomic adds
    saved = ast.unparse(fns["FlashAttention"])
    assert "ctx.save_for_backward(q, k, v, o, lse)" in saved


def test_the_gpu_tests_cover_ragged_n_three_dtypes_causal_and_the_backward():
    text = ast.unparse(_tree("test_flash_triton.py"))
    assert "RAGGED_N = (1, 65, 100, 1000)" in text and "for n in RAGGED_N" in text
    assert "DTYPES = {'float32': torch.float32, 'float16': torch.float16, 'bfloat16': torch.bfloat16}" in text
    assert "FLOOR = {'float32': 1e-05, 'float16': 0.001, 'bfloat16': 0.008}" in text
    assert "bound = 2 * naive_err + FLOOR[dt]" in text
    for name in ("test_forward_matches_float64_attention", "test_backward_matches_float64_gradients",
                 "test_backward_recomputes_p_instead_of_storing_it",
                 "test_backward_rows_whose_scores_are_all_far_below_zero"):
        assert f"def {name}(" in text
    assert "zip(('O', 'dQ', 'dK', 'dV'), ours, ref, naive, strict=True)" in text
    assert "os.environ.get('FLASH_MODULE', 'starter')" in text


def test_the_exercise_is_declared_for_the_module_table():
    assert META["order"] == 3 and META["tier"] == "gpu" and META["in_browser"] is False
    assert META["steps"] == []  # nothing for the page's runner to execute
    for name in META["files"]:
        assert (FOLDER / name).is_file(), name
    prompt = (FOLDER / "prompt.md").read_text(encoding="utf-8")
    page = (FOLDER.parents[2] / "templates" / "_exercise_offline.html.j2").read_text(encoding="utf-8")
    assert "This exercise cannot run in a browser." in page and "NVIDIA GPU" in page  # the page says it first
    assert 'python3 -m pytest test_flash_triton.py -q -k "forward and not causal"' in prompt
    assert "python3 -m pytest test_flash_triton.py -q -k forward" in prompt


def test_every_wrong_answer_in_the_folder_is_named_in_exercise_toml_with_its_tests():
    assert sorted(w["file"] for w in META["wrong"]) == [f"wrong/{name}" for name in content.wrong_answers(EXERCISE)]


@pytest.mark.parametrize("wrong", META["wrong"], ids=[w["file"] for w in META["wrong"]])
def test_each_wrong_answer_is_the_solution_with_its_mistake_and_nothing_else(wrong):
    """A wrong answer is solution.py with a '# Wrong: …' comment on top and a few lines changed,
    stored as a patch against solution.py (wrong/NAME.py.patch), so a fix to the solution
    reaches it, and a change to the lines it touches stops it applying."""
    text = _wrong_source(wrong)
    assert wrong["step"] in META["ladder"]
    head = [line for line in text.splitlines() if line.startswith("#")][:1]
    assert head and head[0].startswith("# Wrong: ")
    body = text.split('"""', 1)[1]
    sol = (FOLDER / "solution.py").read_text(encoding="utf-8").split('"""', 1)[1]
    diff = [d for d in difflib.ndiff(sol.splitlines(), body.splitlines()) if d[:1] in "+-"]
    assert 1 <= len(diff) <= 32, "\n".join(diff)


# ---------------------------------------------------------------- with PyTorch and Triton (not in CI)

def _run_tests(module: str, select: str, path: Path | None = None) -> subprocess.CompletedProcess:
    """test_flash_triton.py's tests ``select`` (pytest -k) on ``module``, found in the
    exercise's folder or in ``path``."""
    env = dict(os.environ, FLASH_MODULE=module)
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(path), *filter(None, [os.environ.get("PYTHONPATH")])])
    if not _has_gpu_stack():
        env["TRITON_INTERPRET"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "test_flash_triton.py", "-q", "-x", "-p", "no:cacheprovider",
                           "-W", "ignore", "-k", select], cwd=FOLDER, capture_output=True, text=True,
                          timeout=900, env=env)


def _interpreter_works() -> str | None:
    """Why Triton's interpreter cannot run here, or None."""
    if not HAS_TORCH_TRITON:
        return "needs PyTorch and Triton (not in CI: pip install torch==2.13.0 triton==3.6.0)"
    import numpy
    if tuple(int(x) for x in numpy.__version__.split(".")[:2]) >= (2, 4) and not _has_gpu_stack():
        return "Triton 3.6's interpreter stops on NumPy 2.4 (its loops convert 1-element arrays to ints)"
    return None


needs_triton = pytest.mark.skipif(_interpreter_works() is not None, reason=str(_interpreter_works()))


@needs_triton
def test_the_solution_passes_a_selection_of_its_tests_in_the_interpreter():
    out = _run_tests("solution", "float16 and not bfloat16 and 65 or recomputes_p or far_below and float16")
    assert out.returncode == 0, out.stdout[-3000:]
    assert " passed" in out.stdout and "failed" not in out.stdout


@needs_triton
def test_the_fast_solution_passes_the_same_selection():
    # in the interpreter it is solution.py's kernels (no copy engine there); on a Hopper GPU its own
    out = _run_tests("solution_fast", "float16 and not bfloat16 and 65 or recomputes_p or far_below and float16")
    assert out.returncode == 0, out.stdout[-3000:]
    assert " passed" in out.stdout and "failed" not in out.stdout


@needs_triton
@pytest.mark.parametrize("wrong", META["wrong"], ids=[w["file"] for w in META["wrong"]])
def test_each_wrong_answer_fails_the_tests_that_name_its_mistake(wrong, tmp_path):
    # the patch applied, written where test_flash_triton.py imports it from (FLASH_MODULE)
    module = Path(wrong["file"]).stem
    (tmp_path / f"{module}.py").write_text(_wrong_source(wrong), encoding="utf-8")
    out = _run_tests(module, wrong["tests"], path=tmp_path)
    assert out.returncode == 1, out.stdout[-3000:]
    assert wrong["says"] in out.stdout, out.stdout[-3000:]


@needs_triton
def test_the_starter_fails_the_port_step_until_it_is_filled_in():
    out = _run_tests("starter", "forward and not causal and float16 and not bfloat16 and 65")
    assert out.returncode == 1 and "max |O - O64|" in out.stdout, out.stdout[-3000:]


SMOKE = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import bench_flash_triton as b
b.DEVICE = "cpu"
b.peak_bytes = lambda once: (once(), 0)[1]
def clock(fn, return_mode="median"):
    t = time.perf_counter(); fn(); return (time.perf_counter() - t) * 1e3
b.BENCH = clock
import torch
by_hand = b.by_hand
def out_of_memory(q, k, v, causal):  # attention by hand runs out of memory, the float64 reference does not
    if q.dtype == torch.float64:
        return by_hand(q, k, v, causal)
    raise torch.cuda.OutOfMemoryError("CUDA out of memory (raised by the test)")
b.by_hand = out_of_memory
args = b.argparse.Namespace(module="solution", tma="auto", kw=[], dtype=["float16"], d=[16], causal=[1], n=[64],
                            direction=list(b.DIRECTIONS), backends=["math"], backends_n=None, by_hand_n=None,
                            focus=None, focus_n=[], batch=1, heads=2, budget_s=100, json=None)
rows, picked, ok, tuned = b.run(args)
print(json.dumps({"rows": rows, "picked": picked, "ok": ok, "tuned": tuned}))
"""


@needs_triton
def test_the_benchmark_writes_rows_of_the_record_format():
    if _has_gpu_stack():
        pytest.skip("on a GPU the benchmark itself is the check")
    out = subprocess.run([sys.executable, "-c", SMOKE, str(FOLDER)], capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, TRITON_INTERPRET="1"))
    assert out.returncode == 0, out.stderr[-3000:]
    data = json.loads(out.stdout.strip().splitlines()[-1])
    check_rows(data["rows"])
    assert data["ok"] is True
    assert [(r["kernel"], r["backend"]) for r in data["rows"][:4]] == [
        ("sdpa", "auto"), ("triton (solution)", None), ("sdpa", "math"), ("by hand", None)]
    assert data["picked"]["float16 d=16 causal forward"]["backend"] == "flash (cpu)"
    hand = [r for r in data["rows"] if r["kernel"] == "by hand"]
    assert len(hand) == 2 and all(r["error"] == "out of memory" and r["ms"] is None and r["peak_bytes"] is None
                                  for r in hand)  # caught and recorded, the run goes on


def test_the_doc_holds_the_summary_of_the_saved_h200_run():
    """docs/BENCHMARKS.md's issue-26 tables are `bench_flash_triton.py --summary` of the run the page shows."""
    out = subprocess.run([sys.executable, str(FOLDER / "bench_flash_triton.py"), "--summary",
                          str(ROOT / META["results"])], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    doc = (ROOT / "docs" / "BENCHMARKS.md").read_text(encoding="utf-8")
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    assert len(lines) > 25 and [line for line in lines if line not in doc] == []
    started = json.loads((ROOT / META["results"]).read_text(encoding="utf-8"))["meta"]["started"]
    assert f"started {started}:" in doc
