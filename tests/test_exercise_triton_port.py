"""Exercise 3 (Triton port) without a GPU: its test file is collected and
skipped with a reason that says why, the benchmark's FLOP convention holds,
and the starter differs from the solution only inside the kernel.

The GPU side (the solution passing test_flash_triton.py, the benchmark) runs
on an NVIDIA GPU: see the exercise's prompt.md for the commands."""
from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

FOLDER = Path(__file__).resolve().parent.parent / "site" / "content" / "exercises" / "triton-port"


def _has_gpu_stack() -> bool:
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("triton") is None:
        return False
    import torch
    return torch.cuda.is_available()


@pytest.mark.skipif(_has_gpu_stack(), reason="this machine has a CUDA GPU, PyTorch and Triton: the file runs")
def test_the_gpu_test_file_is_collected_and_skipped_with_its_reason():
    out = subprocess.run([sys.executable, "-m", "pytest", str(FOLDER / "test_flash_triton.py"), "-rs", "-q",
                          "-p", "no:cacheprovider", "-p", "no:randomly"],
                         cwd=FOLDER, capture_output=True, text=True, timeout=120)
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


def test_the_benchmark_counts_4_n_squared_d_per_head_and_half_for_causal():
    bench = _bench()
    assert bench.flops(1, 1, 4096, 64, False) == 4_294_967_296
    assert bench.flops(1, 1, 4096, 64, True) == 2_147_483_648
    assert bench.flops(1, 32, 16384, 128, False) == 4_398_046_511_104
    assert bench.flops(2, 3, 1000, 64, True) == 6 * 2 * 1000 * 1000 * 64
    # 4,294,967,296 FLOP in 1 ms is 4.294967296e12 FLOP/s
    assert bench.tflops(4_294_967_296, 1.0) == pytest.approx(4.294967296, rel=1e-15)


def test_the_benchmark_says_what_it_needs_without_torch():
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("PyTorch is installed here")
    out = subprocess.run([sys.executable, str(FOLDER / "bench_flash_triton.py"), "--module", "solution"],
                         cwd=FOLDER, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "This benchmark needs PyTorch and Triton on an NVIDIA GPU" in out.stderr


def _tree(name: str) -> ast.Module:
    return ast.parse((FOLDER / name).read_text(encoding="utf-8"))


def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)


def test_starter_and_solution_share_the_host_code_and_differ_only_in_the_kernel():
    starter, solution = _tree("starter.py"), _tree("solution.py")
    assert ast.dump(_function(starter, "_blocks")) == ast.dump(_function(solution, "_blocks"))
    assert ast.dump(_function(starter, "flash_attention")) == ast.dump(_function(solution, "flash_attention"))
    assert ast.dump(_function(starter, "_flash_forward").args) == ast.dump(_function(solution, "_flash_forward").args)
    assert ast.dump(_function(starter, "_flash_forward")) != ast.dump(_function(solution, "_flash_forward"))


def test_the_starter_marks_both_steps_and_the_solution_has_no_todo():
    starter = (FOLDER / "starter.py").read_text(encoding="utf-8")
    assert starter.count("TODO (Port)") == 2 and starter.count("TODO (Compose)") == 2
    assert "TODO" not in (FOLDER / "solution.py").read_text(encoding="utf-8")


def test_the_solution_kernel_does_what_the_prompt_promises():
    tree = _tree("solution.py")
    tiles = ast.unparse(_function(tree, "_key_tiles"))
    main = ast.unparse(_function(tree, "_flash_forward"))
    assert "tl.exp2(m - m_new)" in tiles                   # the rescale factor
    assert "acc * alpha[:, None]" in tiles and "l * alpha" in tiles
    assert "keys[None, :] <= rows[:, None]" in tiles       # causal mask, only on the diagonal block
    assert "acc / l[:, None]" in main                      # one division, at the end
    assert "tl.minimum(N, diagonal + BLOCK_M)" in main     # causal tiles stop at the diagonal
    host = ast.unparse(_function(tree, "flash_attention"))
    assert "PRECISION='ieee' if q.dtype == torch.float32" in host
    assert "if bm % bn:" in host                           # the diagonal split needs whole key tiles


def test_the_gpu_tests_cover_ragged_n_both_dtypes_and_causal():
    tree = _tree("test_flash_triton.py")
    text = ast.unparse(tree)
    assert "RAGGED_N = (1, 65, 100, 1000)" in text and "for n in RAGGED_N" in text
    assert "DTYPES = {'float32': torch.float32, 'float16': torch.float16}" in text
    assert "FLOOR = {'float32': 1e-05, 'float16': 0.001}" in text
    assert "bound = 2 * naive_err + FLOOR[dt]" in text
    assert "os.environ.get('FLASH_MODULE', 'starter')" in text


def test_the_exercise_is_declared_for_the_module_table():
    import tomllib
    meta = tomllib.loads((FOLDER / "exercise.toml").read_text(encoding="utf-8"))
    assert meta["order"] == 3 and meta["tier"] == "gpu" and meta["minutes"] == 120
    assert meta["ladder"] == ["Port", "Compose"] and meta["in_browser"] is False
    assert meta["steps"] == []  # nothing for the page's runner to execute
    for name in meta["files"]:
        assert (FOLDER / name).is_file(), name
    prompt = (FOLDER / "prompt.md").read_text(encoding="utf-8")
    page = (FOLDER.parents[2] / "templates" / "_exercise_offline.html.j2").read_text(encoding="utf-8")
    assert "This exercise cannot run in a browser." in page and "NVIDIA GPU" in page  # the page says it first
    assert 'python3 -m pytest test_flash_triton.py -q -k "not causal"' in prompt
