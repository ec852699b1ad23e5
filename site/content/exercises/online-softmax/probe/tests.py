"""Probe: io_bytes(kernel, n, d, workgroup_bytes) equals the emulator's count.

The oracle is emulator.traffic.count (full attention), which walks the
kernel's loads and stores tile by tile. The grid runs smallest N first.
test_sizes_drawn_now draws N, d and M afresh at each check (the operating system's
randomness, not a seed), so a table of the grid's answers cannot pass it.
test_counts_the_bytes_itself reads the learner's source (exercises.instruments.
borrowed): an io_bytes that asks the emulator gets the right numbers without
the count.
"""
import random

from emulator import traffic
from emulator.i18n import _, group
from emulator.tiling import HEAD_DIMS, M_MAX, M_MIN, InputError, lesson_blocks
from exercises import content, instruments
from exercises.testing import N_, Failure, given, need, titled

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
            shown = group(got) if isinstance(got, int) and not isinstance(got, bool) else repr(got)
            raise Failure(_("{input}: expected {want} bytes, got {got}").format(
                              input=desc, want=group(want), got=shown),
                          input=desc, expected=_("{want} bytes").format(want=group(want)), got=shown)


@titled(N_("the lesson's reference figures at N = {n}, M = {m}"), n=4096, m=16384)
def test_the_lesson_figures(mod):
    for kernel in ("plain", "fused"):
        for d in (16, 64):
            _check(mod, kernel, 4096, d, 16384)


@titled(N_("fused: every N, d and M on the grid, ragged N included"))
def test_fused_grid(mod):
    for n, d, m in _grid("fused"):
        _check(mod, "fused", n, d, m)


@titled(N_("plain: every N, d and M on the grid, ragged N included"))
def test_plain_grid(mod):
    for n, d, m in _grid("plain"):
        _check(mod, "plain", n, d, m)


#: Sizes drawn at each check: enough that a table of answers would have to hold the
#: count for every N, d and M the lesson accepts.
DRAWS = 12


@titled(N_("{count} sizes drawn afresh at each check, off the grid"), count=DRAWS)
def test_sizes_drawn_now(mod):
    rng = random.SystemRandom()
    drawn = []
    while len(drawn) < DRAWS:
        d = rng.choice(HEAD_DIMS)
        m = rng.randrange(M_MIN, M_MAX + 1, 256)
        n = rng.randint(1, 6000)
        if _fits(d, m) and (n, d, m) not in drawn:
            drawn.append((n, d, m))
    for i, (n, d, m) in enumerate(sorted(drawn)):
        _check(mod, ("fused", "plain")[i % 2], n, d, m)


@titled(N_("counts the bytes itself, without the emulator's own count"))
def test_counts_the_bytes_itself(mod):
    need(mod, "io_bytes")
    found = instruments.borrowed(mod)
    if found is not None:
        module, line = found
        if line:
            did = _("your code uses {module} (line {line})").format(module=module, line=group(line))
        else:
            did = _("your code uses {module}").format(module=module)
        desc = "io_bytes"
        raise Failure(_("{input}: {did}, the project's own code, whose count the tests compare with; "
                        "work the bytes out yourself, from B_c, B_r and T_r").format(input=desc, did=did),
                      input=desc, expected=_("a count of your own"), got=module)
