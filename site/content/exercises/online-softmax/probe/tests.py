"""Probe: io_bytes(kernel, n, d, workgroup_bytes) equals the emulator's count.

The oracle is emulator.traffic.count (full attention), which walks the
kernel's loads and stores tile by tile. The grid runs smallest N first.
"""
from emulator import traffic
from emulator.tiling import InputError, lesson_blocks
from exercises import content
from exercises.testing import Failure, given, need

STEP = content.step("online-softmax", "probe")
GRID_N = tuple(sorted({*STEP["ragged_n"], 2, 64, 4096}))  # ragged_n: exercise.toml, quoted by the prompt
GRID_D = (16, 32, 64, 128)
GRID_M = (8192, 16384, 32768, 65536)


def _fits(d, m):
    try:
        lesson_blocks(d, m)
        return True
    except InputError:
        return False


def _grid(kernel):
    return [(n, d, m) for n in GRID_N for d in GRID_D for m in GRID_M if _fits(d, m)]


def _check(mod, kernel, n, d, m):
    fn = need(mod, "io_bytes")
    desc = f'io_bytes("{kernel}", n={n:,}, d={d}, workgroup_bytes={m:,})'
    with given(desc):
        got = fn(kernel, n, d, m)
        want = traffic.count(kernel, n, d, False, m).total_bytes
        if got != want or isinstance(got, bool):
            shown = f"{got:,}" if isinstance(got, int) and not isinstance(got, bool) else repr(got)
            raise Failure(f"{desc}: expected {want:,} bytes, got {shown}",
                          input=desc, expected=f"{want:,} bytes", got=shown)


def test_the_lesson_figures(mod):
    """the lesson's reference figures at N = 4,096, M = 16,384"""
    for kernel in ("plain", "fused"):
        for d in (16, 64):
            _check(mod, kernel, 4096, d, 16384)


def test_fused_grid(mod):
    """fused: every N, d and M on the grid, ragged N included"""
    for n, d, m in _grid("fused"):
        _check(mod, "fused", n, d, m)


def test_plain_grid(mod):
    """plain: every N, d and M on the grid, ragged N included"""
    for n, d, m in _grid("plain"):
        _check(mod, "plain", n, d, m)
