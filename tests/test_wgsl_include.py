"""WGSL from parts: the include step both hosts run before compiling a shader.

planner/shaders.py ``join_source`` (the planner, cannery_host.wgpu_runner, the page's
Pyodide worker) and site/static/js/gpu/files.js ``joinSource`` (the page's WebGPU
runs) replace a line ``// #include "parts/x.wgsl"`` by that part's text, depth first,
each part once. The page and the native host must compile the same text, so the two
are held byte-identical here, through node, for every shader the manifest names, plain
and instrumented; then the rules: nesting, a part joined once, and a clear error for a
missing part, a cycle or a path outside kernels_wgsl/.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from planner.shaders import INCLUDE, MANIFEST, IncludeError, instrument, join_source, read_source

ROOT = Path(__file__).resolve().parent.parent
BRIDGE = Path(__file__).with_name("js_include.mjs")
NODE = shutil.which("node")
KERNEL_DIR = ROOT / "kernels_wgsl"


def manifest_files() -> list[str]:
    """Every .wgsl a manifest pass runs (file, file_by_d, with_subgroups)."""
    out = set()
    for entry in MANIFEST["kernels"].values():
        for spec in entry["wgsl"]:
            out |= {spec["file"], *spec.get("file_by_d", {}).values(),
                    *(spec.get("with_subgroups") or {}).get("file_by_d", {}).values()}
    return sorted(out)


def js_join(jobs: list[dict], files: dict | None = None) -> list[dict]:
    """gpu/files.js joinSource for each job {file, instrumented}, one node process."""
    if NODE is None:
        pytest.skip("node is not installed")
    payload = {"root": str(KERNEL_DIR), "files": files, "jobs": jobs}
    out = subprocess.run([NODE, str(BRIDGE)], input=json.dumps(payload), capture_output=True, text=True,
                         check=True, timeout=60, cwd=ROOT)
    return json.loads(out.stdout)


def reader(files: dict):
    def read(path):
        if path not in files:
            raise FileNotFoundError(2, "No such file", path)
        return files[path]
    return read


# ---- the page and the native host join the same text ---------------------------------

def test_the_page_and_python_join_every_manifest_shader_byte_for_byte():
    files = manifest_files()
    jobs = [{"file": f, "instrumented": inst} for f in files for inst in (False, True)]
    got = js_join(jobs)
    for job, reply in zip(jobs, got, strict=True):
        assert reply["ok"], reply
        text = read_source(job["file"])
        assert reply["text"] == (instrument(text) if job["instrumented"] else text), job


def test_every_manifest_shader_joins_to_a_whole_shader_with_one_header():
    for file in manifest_files():
        text = read_source(file)
        assert not any(INCLUDE.fullmatch(line) for line in text.split("\n")), file
        assert text.count("fn tally(") == 1 and text.count("struct Params") == 1, file
        assert text.count("@compute") == 1, file


def test_every_part_is_joined_into_some_kernel():
    parts = {p.relative_to(KERNEL_DIR).as_posix() for p in (KERNEL_DIR / "parts").rglob("*.wgsl")}
    used: set[str] = set()

    def read(path):
        if path != file:
            used.add(path)
        return (KERNEL_DIR / path).read_text(encoding="utf-8")

    for file in manifest_files():
        join_source(file, read)
    assert "parts/header.wgsl" in parts
    assert parts == used


# ---- the rules, on a small tree -------------------------------------------------------

TREE = {
    "k.wgsl": 'fn main() {}\n// #include "parts/a.wgsl"\n  // #include "parts/b.wgsl"  \nlast\n',
    "parts/a.wgsl": 'a1\n// #include "parts/h.wgsl"\na2\n',
    "parts/b.wgsl": '// #include "parts/h.wgsl"\nb1',         # no trailing newline
    "parts/h.wgsl": "h1\nh2\n\n",                              # one trailing newline dropped
    "not.wgsl": '// #include "parts/a.wgsl" and more\n//#include "parts/a.wgsl"\n',
    "cycle.wgsl": '// #include "parts/c1.wgsl"\n',
    "parts/c1.wgsl": 'x\n// #include "parts/c2.wgsl"\n',
    "parts/c2.wgsl": '// #include "parts/c1.wgsl"\n',
    "self.wgsl": '// #include "self.wgsl"\n',
    "missing.wgsl": 'one\n// #include "parts/a.wgsl"\n// #include "parts/nope.wgsl"\n',
    "up.wgsl": '// #include "../secret.wgsl"\n',
    "abs.wgsl": '// #include "/etc/x.wgsl"\n',
    "txt.wgsl": '// #include "parts/notes.txt"\n',
}


def test_parts_join_depth_first_each_once_with_one_trailing_newline_dropped():
    want = ('fn main() {}\na1\nh1\nh2\n\na2\n'
            '// (#include "parts/h.wgsl": already included above)\nb1\nlast\n')
    assert join_source("k.wgsl", reader(TREE)) == want
    assert js_join([{"file": "k.wgsl", "instrumented": False}], TREE)[0] == {"ok": True, "text": want}


def test_only_a_line_that_is_the_directive_alone_includes():
    assert join_source("not.wgsl", reader(TREE)) == TREE["not.wgsl"]
    assert js_join([{"file": "not.wgsl", "instrumented": False}], TREE)[0]["text"] == TREE["not.wgsl"]


@pytest.mark.parametrize("file,error,says", [
    ("cycle.wgsl", IncludeError,
     'parts/c2.wgsl, line 1: #include "parts/c1.wgsl" makes a cycle: '
     "cycle.wgsl -> parts/c1.wgsl -> parts/c2.wgsl -> parts/c1.wgsl"),
    ("self.wgsl", IncludeError, 'self.wgsl, line 1: #include "self.wgsl" makes a cycle: self.wgsl -> self.wgsl'),
    ("missing.wgsl", FileNotFoundError, 'missing.wgsl, line 3: #include "parts/nope.wgsl": no such file'),
    ("up.wgsl", IncludeError, 'up.wgsl, line 1: #include "../secret.wgsl": a part\'s path is relative to'),
    ("abs.wgsl", IncludeError, 'abs.wgsl, line 1: #include "/etc/x.wgsl": a part\'s path is relative to'),
    ("txt.wgsl", IncludeError, "and ends in .wgsl"),
])
def test_a_cycle_a_missing_part_or_a_path_outside_is_refused_with_where(file, error, says):
    with pytest.raises(error) as info:
        join_source(file, reader(TREE))
    assert says in str(info.value)
    reply = js_join([{"file": file, "instrumented": False}], TREE)[0]
    assert not reply["ok"]
    assert reply["kind"] == ("fetch" if error is FileNotFoundError else "shader")
    assert says.split(": no such file")[0].replace("kernels_wgsl/", "kernels/") in reply["message"]


def test_the_host_reads_a_missing_shader_as_file_not_found():
    with pytest.raises(FileNotFoundError):
        read_source("no_such_kernel.wgsl")
