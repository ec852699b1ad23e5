"""Rules every WGSL file in the repository keeps, read from its source (no GPU needed).

1. The count cannot miss an access. The instrumented byte counts rest on every read and
   write of global memory going through a counted helper (``load_q``, ``store_o``, ...):
   a function that touches one storage buffer exactly once and calls ``tally`` once,
   with the manifest's slot for that tensor and direction. A storage buffer named
   anywhere else (indexed, read, or aliased by a pointer) fails. Only the instrument's
   own ``counters`` buffer, used inside ``tally``, is exempt. A kernel of kernels_wgsl/
   is checked as the hosts compile it, its parts joined (planner.shaders.read_source),
   so the rule covers every part through the kernels that include it.
2. The shared header, ``kernels_wgsl/parts/header.wgsl`` (the instrument's counters
   binding, its slot table and ``tally``), agrees with the manifest's "instrument" block.

Both rules cover every ``.wgsl`` under the repository, so kernels added later (the
backward pass, an exercise's scaffold) are held to them without editing this file.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import wgsl_answers

from exercises import content
from planner.shaders import instrument, read_source

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "kernels_wgsl"
PARTS = KERNELS / "parts"
MANIFEST = json.loads((ROOT / "kernels_wgsl" / "manifest.json").read_text())
SLOTS = MANIFEST["instrument"]["slots"]
SKIP_DIRS = {".git", ".venv", "node_modules", "dist", "test-artifacts", "__pycache__"}
COUNTERS = "counters"


def wgsl_files() -> list[Path]:
    out = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")]  # hidden: scratch copies
        if Path(folder) == PARTS:
            continue  # checked inside the kernels that include them (tests/test_wgsl_include.py: all are)
        # a shader stored as a patch (wrong/NAME.wgsl.patch, an exercise's wrong one; or another
        # correct one, in tests/exercise_answers/wgsl-kernel/) counts as NAME.wgsl
        out.extend(Path(folder) / f.removesuffix(content.PATCH) for f in files
                   if f.removesuffix(content.PATCH).endswith(".wgsl"))
    return sorted(out)


def compiled_text(path: Path) -> str:
    """The text a host compiles: a kernel of kernels_wgsl/ with its parts joined; any other
    file (an exercise's, which the learner edits whole in the page) as it is, a wrong
    shader as exercises.content gives it and another correct one as tests/wgsl_answers.py
    does (whole, or its patch applied to the solution)."""
    if path.parent == KERNELS:
        return read_source(path.name)
    if path.parent.name == "wrong":
        return content.wrong_answer({"dir": str(path.parent.parent)}, path.name)
    if path.parent == wgsl_answers.FOLDER:
        return wgsl_answers.source(path.name)
    return path.read_text()


FILES = wgsl_files()


def _strip_comments(source: str) -> str:
    """Comments blanked to spaces (so positions and line numbers stay)."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r"/\*.*?\*/|//[^\n]*", blank, source, flags=re.S)


def _functions(code: str) -> list[tuple[str, int, int]]:
    """(name, start of its body's '{', end after its '}') of every fn in comment-free code."""
    out = []
    for m in re.finditer(r"\bfn\s+(\w+)\s*\(", code):
        brace = code.index("{", m.end())
        depth, i = 0, brace
        while True:
            if code[i] == "{":
                depth += 1
            elif code[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        out.append((m.group(1), brace, i + 1))
    return out


def storage_access_problems(source: str) -> list[str]:
    """Every way ``source`` lets a global-memory access escape the count (empty: none).

    Checked on the instrumented build, so a line the instrument uncomments is held to
    the same rule as the rest.
    """
    code = _strip_comments(instrument(source))
    # arrayLength(&buf) reads the binding's size, not its memory.
    code = re.sub(r"arrayLength\s*\(\s*&\s*\w+\s*\)", lambda m: " " * len(m.group(0)), code)
    line = lambda pos: code.count("\n", 0, pos) + 1  # noqa: E731
    buffers = {}
    for m in re.finditer(r"var\s*<\s*storage\b[^>]*>\s*(\w+)", code):
        buffers[m.group(1)] = m.start(1)
    fns = _functions(code)
    slot_of = {name.lower(): name for name in SLOTS}  # "q.read" -> "Q.read"
    problems = []
    helpers: dict[str, list] = {}
    for name, decl in buffers.items():
        for m in re.finditer(rf"\b{re.escape(name)}\b", code):
            if m.start() == decl:
                continue
            owner = next((f for f in fns if f[1] <= m.start() < f[2]), None)
            if name == COUNTERS:
                if owner is None or owner[0] != "tally":
                    problems.append(f"line {line(m.start())}: counters used outside tally")
                continue
            if owner is None:
                problems.append(f"line {line(m.start())}: {name} named outside any function")
                continue
            helpers.setdefault(owner, []).append((name, m))
    for (fname, start, end), uses in helpers.items():
        body = code[start:end]
        tallies = re.findall(r"\btally\s*\(\s*(\d+)u?\s*,", body)
        where = f"line {line(start)}: {fname}"
        if fname == "tally" or not tallies:
            names = sorted({n for n, _ in uses})
            problems.append(f"{where} reads or writes {', '.join(names)} without tally: the count misses it")
            continue
        if len(uses) != 1 or len(tallies) != 1:
            problems.append(f"{where} touches storage {len(uses)} times with {len(tallies)} tally calls; "
                            f"a counted helper makes one access and one tally")
            continue
        name, m = uses[0]
        after = code[m.end():end]
        # buf[i] = x, or a component of a vector element, buf[i / 4u][i % 4u] = x
        written = re.match(r"\s*(?:\[[^\]]*\]\s*)+=(?!=)", after) is not None
        kind = "write" if written else "read"
        want = slot_of.get(f"{name.lower()}.{kind}")
        got = SLOTS[int(tallies[0])] if int(tallies[0]) < len(SLOTS) else f"slot {tallies[0]}"
        if want != got:
            problems.append(f"{where} {kind}s {name} but tallies {got}")
    return problems


# Exercise 4's typical wrong shaders that break this very rule on purpose: the exercise's own
# checker (exercises/wgsl_judge.py check_counted_loads) must refuse them, and that is tested instead.
UNCOUNTED_ON_PURPOSE = {"site/content/exercises/wgsl-kernel/scratch/wrong/row_max_from_global_memory.wgsl"}

# The roofline probes (manifest "probes") are not kernels the emulator counts: they measure
# the device's copy bandwidth and FMA rate, and bind no counters. Any other file is held.
PROBES = {f"kernels_wgsl/{MANIFEST['probes'][k]['file']}" for k in ("copy", "fma")}


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_every_storage_access_goes_through_a_counted_helper(path):
    problems = storage_access_problems(compiled_text(path))
    if str(path.relative_to(ROOT)) in PROBES:
        assert "tally" not in path.read_text() and "probes" in path.parts, path
    elif str(path.relative_to(ROOT)) in UNCOUNTED_ON_PURPOSE:
        from exercises.wgsl_judge import check_counted_loads
        assert problems and check_counted_loads(compiled_text(path)), path
    else:
        assert problems == []


def test_the_rule_covers_the_lesson_and_tuned_kernels():
    names = {p.name for p in FILES if p.parent == KERNELS}
    declared = {spec["file"] for k in MANIFEST["kernels"].values() for spec in k["wgsl"]}
    declared |= {f for k in MANIFEST["kernels"].values() for spec in k["wgsl"]
                 for f in (spec.get("with_subgroups") or {}).get("file_by_d", {}).values()}
    # every kernel file is run by some kernel's pass, and every pass's file is checked here
    assert declared == names
    # the learner's WGSL (exercise 4: skeletons, solutions, typical wrong shaders) is checked too
    exercise = {p.name for p in FILES if "exercises" in p.parts}
    assert {"starter.wgsl", "solution.wgsl"} <= exercise


_HEADER = """\
// @instrument: @group(0) @binding(7) var<storage, read_write> counters: array<atomic<u32>, 12>;

// Counter slots (elements): 0 Q read, 1 Q write, 2 K read, 3 K write, 4 V read,
// 5 V write, 6 S read, 7 S write, 8 P read, 9 P write, 10 O read, 11 O write.
fn tally(slot: u32, elems: u32) {
  // @instrument: atomicAdd(&counters[slot], elems);
}
"""
_GOOD = """
@group(0) @binding(1) var<storage, read> q: array<f32>;
@group(0) @binding(4) var<storage, read_write> o: array<f32>;
""" + _HEADER + """
fn load_q(i: u32) -> f32 { tally(0u, 1u); return q[i]; }
fn store_o(i: u32, x: f32) { tally(11u, 1u); o[i] = x; }
@compute @workgroup_size(1)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  let n = arrayLength(&q);
  if (g.x < n) { store_o(g.x, 2.0 * load_q(g.x)); }
}
"""


def test_the_rule_passes_a_counted_sample():
    assert storage_access_problems(_GOOD) == []


@pytest.mark.parametrize("old,new,says", [
    ("store_o(g.x, 2.0 * load_q(g.x));", "store_o(g.x, 2.0 * q[g.x]);", "main reads or writes q without tally"),
    ("store_o(g.x, 2.0 * load_q(g.x));", "o[g.x] = load_q(g.x);", "main reads or writes o without tally"),
    ("store_o(g.x, 2.0 * load_q(g.x));", "let p = &q; store_o(g.x, (*p)[g.x]);", "main reads or writes q"),
    ("tally(0u, 1u); return q[i];", "tally(2u, 1u); return q[i];", "load_q reads q but tallies K.read"),
    ("tally(11u, 1u); o[i] = x;", "tally(10u, 1u); o[i] = x;", "store_o writes o but tallies O.read"),
    ("tally(11u, 1u); o[i] = x;", "tally(10u, 1u); o[i / 4u][i % 4u] = x;", "store_o writes o but tallies O.read"),
    ("tally(0u, 1u); return q[i];", "tally(0u, 1u); return q[i] + q[i + 1u];", "touches storage 2 times"),
    ("tally(0u, 1u); return q[i];", "return q[i];", "load_q reads or writes q without tally"),
    ("fn main(", "// @instrument: fn peek() -> f32 { return q[0]; }\nfn main(", "peek reads or writes q"),
])
def test_the_rule_fails_an_access_the_count_would_miss(old, new, says):
    assert old in _GOOD
    problems = storage_access_problems(_GOOD.replace(old, new))
    assert any(says in p for p in problems), problems


# ---- the shared header ---------------------------------------------------------------

def header_block(source: str) -> str | None:
    """From the instrument's counters declaration to the closing brace of ``fn tally``."""
    m = re.search(r"^[^\n]*var<storage, read_write> counters[^\n]*\n.*?^fn tally\(.*?^}\n", source, re.M | re.S)
    return m.group(0) if m else None


def test_the_shared_header_agrees_with_the_manifest():
    block = header_block((PARTS / "header.wgsl").read_text())
    inst = MANIFEST["instrument"]
    assert block.startswith(inst["marker"] + f"@group(0) @binding({inst['binding']}) ")
    assert f"array<atomic<u32>, {len(inst['slots'])}>" in block
    listed = re.findall(r"(\d+) (\w+) (read|write)", block)
    assert [f"{t}.{k}" for _, t, k in listed] == inst["slots"]
    assert [int(i) for i, _, _ in listed] == list(range(len(inst["slots"])))


def test_every_kernel_takes_its_header_from_the_part():
    header = (PARTS / "header.wgsl").read_text()
    for path in FILES:
        if path.parent == KERNELS:
            text = path.read_text()
            assert '// #include "parts/header.wgsl"' in text.splitlines(), path.name
            assert "fn tally(" not in text and "struct Params" not in text, path.name
            assert header[:-1] in read_source(path.name), path.name
