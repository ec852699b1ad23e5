"""A kernel is added by one manifest entry and one .wgsl file.

In a temporary copy of the tree (the tracked files the emulator, the native host, the
planner and the lab template read), the test adds ``my-fused``: a manifest entry (the
fused kernel's, on its one file ``my_fused.wgsl``) and that file, a copy of
``fused.wgsl`` that includes the shared parts (``parts/header.wgsl``,
``parts/fused_tiles.wgsl``, ``parts/fused_body.wgsl``). No other file is edited (the test
holds every other file's bytes to the tree's). The copy's own Python then shows the
kernel counted (emulator.traffic: fused's bytes at the same tiles), checked (the lab's
Check against float64), planned (planner, sized from my_fused.wgsl), in the
page's kernel list (the lab template's Kernel menu and the build's data-rules table) and,
where wgpu-py has an adapter (lavapipe here), run natively with the instrument's counts
equal to the emulator's, checked, and timed (cannery_host.wgpu_runner.Runner). The copy's own
tests then run unedited: those parametrized by the manifest's kernels find my-fused.

kernels_wgsl/README.md, "Adding a kernel", names these two places.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages import pofile

ROOT = Path(__file__).resolve().parent.parent
NAME, FILE = "my-fused", "my_fused.wgsl"
LABEL = "Fused, a copy added by a test"

# What the copy's Python reads: the emulator (and the checker, whose messages share its catalog),
# the planner and native host, the kernels, the build's page renderer (with sitebuild and the
# course data it imports) and the lab template, its content, catalogs and facts.
# The tests that cover a kernel run in the copy too (tests/, pyproject.toml's settings).
COPIED = ("emulator/", "exercises/", "cannery_host/", "kernels_wgsl/", "i18n/", "locale/", "site/templates/",
          "site/content/", "facts/", "film/",
          "build.py", "sitebuild/", "planner/", "lab_api/", "course/", "bench/results/", "tests/", "pyproject.toml",
          "site/static/js/")


def _digests(root: Path) -> dict:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """The copy, with my-fused added; asserts that only the two places changed."""
    tmp = tmp_path_factory.mktemp("tree")
    listed = subprocess.run(["git", "ls-files", "-z", "--", *COPIED], cwd=ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, tmp / rel)
    before = _digests(tmp)

    kernels = tmp / "kernels_wgsl"
    manifest = json.loads((kernels / "manifest.json").read_text(encoding="utf-8"))
    entry = json.loads(json.dumps(manifest["kernels"]["fused"]))
    entry["label"] = LABEL
    for spec in entry["wgsl"]:
        spec["file"] = FILE
        spec.pop("with_subgroups", None)  # one file at every d, on every device
    manifest["kernels"][NAME] = entry
    (kernels / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    source = (kernels / "fused.wgsl").read_text(encoding="utf-8")
    assert '// #include "parts/header.wgsl"' in source and '// #include "parts/fused_body.wgsl"' in source
    (kernels / FILE).write_text(f"// {NAME}: fused.wgsl under another name, from the same parts.\n"
                                + source, encoding="utf-8")

    after = _digests(tmp)
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    assert changed == {"kernels_wgsl/manifest.json", f"kernels_wgsl/{FILE}"}
    return tmp


def _run_in(tree: Path, script: str) -> dict:
    """Run ``script`` (argv: the kernel's name and label) with the copy's Python packages
    (not the worktree's); its last line of stdout is a JSON object."""
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, "-c", script, NAME, LABEL], cwd=tree, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


PYTHON_SIDE = r'''
import json, os, sys
import emulator, build
import planner as plan
from emulator import traffic
from emulator.accuracy import check
from emulator.tiling import LESSON_KERNELS, MANIFEST, make_tiling
assert emulator.__file__.startswith(os.getcwd()) and build.__file__.startswith(os.getcwd()), emulator.__file__
name, label = sys.argv[1:3]
out = {"in_manifest": name in MANIFEST["kernels"], "lesson": name in LESSON_KERNELS}
tiles = lambda k, n, d, c, m: [getattr(make_tiling(k, n, d, c, m), a)
                               for a in ("block_rows", "block_cols", "workgroup_bytes")]
cases = [(1000, 64, True, 16384), (300, 16, False, 8192), (257, 128, True, 65536)]
out["counts"] = [[traffic.count(name, n, d, c, m).as_dict(), traffic.count("fused", n, d, c, m).as_dict(),
                  tiles(name, n, d, c, m) == tiles("fused", n, d, c, m)]
                 for n, d, c, m in cases]
report = check(name, 100, 16, causal=True, seed=3)
out["check"] = {"passed": report["passed"]}
p = plan.kernel_plan(name, 1000, 64, True)
f = plan.kernel_plan("fused", 1000, 64, True)
out["plan"] = {"files": [pp["file"] for pp in p["passes"]],
               "same_as_fused": [{k: v for k, v in pp.items() if k != "file"} for pp in p["passes"]]
               == [{k: v for k, v in pp.items() if k != "file"} for pp in f["passes"]],
               "needs": p["needs"] == f["needs"], "tiling": p["tiling"] == f["tiling"]}
g = plan.gpu_plan({"kernel": name, "n": 1000, "d": 64, "causal": True, "workgroup_bytes": 16384},
                  {}, [name])
out["gpu_plan"] = sorted(g["plans"])
env = build.make_env("en")
ctx = {"lang": __import__("i18n").language("en"), "languages": __import__("i18n").languages(),
       "facts": build.load_facts(), "counts": build.lesson_counts(), "manifest": MANIFEST,
       "lesson_kernels": list(LESSON_KERNELS), "lab": build.lab_content("en"),
       "limits": {"count_max_n": 1, "check_max_n": 1, "backward_check_max_n": 1, "m_min": 4096,
                  "m_max": 65536, "head_dims": [16, 32, 64, 128]},
       "csp": "", "lab_rules": build.lab_rules("en")}
ctx["film"] = __import__("film").build(ctx, lang="en")  # the lab's float16 card quotes the film's figures
ctx.update(root="", home="")  # what build.render_pages gives every page
html = env.get_template("_lab.html.j2").render(**ctx)
out["menu"] = html.count(f'<option value="{name}"')
out["label"] = html.count(label)
out["rules"] = [g["kernels"] for g in build.lab_rules("en")["tiling"]]
print(json.dumps(out))
'''


def test_the_added_kernel_is_counted_checked_planned_and_listed(tree):
    out = _run_in(tree, PYTHON_SIDE)
    assert out["in_manifest"] and out["lesson"]
    for mine, fused, same_tiles in out["counts"]:  # counted: fused's bytes, at fused's tiles
        assert same_tiles and mine.pop("kernel") == NAME and fused.pop("kernel") == "fused"
        assert mine == fused and mine["total_bytes"] > 0
    assert out["check"]["passed"] is True, out  # checked against float64 through attention.fused
    assert out["plan"] == {"files": [FILE], "same_as_fused": True, "needs": True, "tiling": True}
    assert out["gpu_plan"] == [NAME]
    assert out["menu"] == 2 and out["label"] == 2  # the Kernel menu and the forward kernels' template
    assert any(NAME in group and "fused" in group for group in out["rules"])  # the build's data-rules


NATIVE_SIDE = r'''
import json, sys
import numpy as np
try:
    from cannery_host.wgpu_runner import Runner
    r = Runner()
except Exception as e:  # no wgpu-py, or no adapter
    print(json.dumps({"skip": f"no native WebGPU: {type(e).__name__}: {e}"})); raise SystemExit
from emulator.accuracy import check_output
from emulator.inputs import random_qkv
from emulator.traffic import count
name = sys.argv[1]
out = {"adapter": r.info}
n, d, causal = 77, 32, True
q, k, v = random_qkv(n, d, 5)
o, counts = r.run(name, np.array(q, np.float32), np.array(k, np.float32), np.array(v, np.float32), causal,
                  instrumented=True)
want = count("fused", n, d, causal)
out["counts"] = [{t: c["read"] for t, c in counts.items()} == want.reads,
                 {t: c["write"] for t, c in counts.items()} == want.writes]
out["check"] = check_output(o.tolist(), q, k, v, causal, kernel=name)["passed"]
out["shaders"] = r.shaders(name, d)
t = r.time(name, 256, 16, heads=1, min_sample_ms=1.0, min_samples=3)
out["time"] = {"medianMs": t["medianMs"], "samples": len(t["samples"])}
print(json.dumps(out, default=str))
'''


def test_the_added_kernel_runs_counted_and_timed_natively(tree):
    out = _run_in(tree, NATIVE_SIDE)
    if "skip" in out:
        pytest.skip(out["skip"])
    assert out["counts"] == [True, True], out  # the instrument's bytes are the emulator's (fused's)
    assert out["check"] is True
    assert FILE in " ".join(map(str, out["shaders"]))
    assert out["time"]["medianMs"] > 0 and out["time"]["samples"] >= 3


def test_the_tests_that_cover_kernels_find_the_added_one_and_pass(tree):
    """The copy's own tests, unedited: every test parametrized by the manifest's kernels that
    names my-fused (the float64 check of its output read back natively, the instrument's
    bytes, the emulator's plan), the manifest walk's tests over every kernel, and Time's
    tests of the runs a plan times (under node)."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    pytest_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0"]
    files = ["tests/test_wgsl_native.py", "tests/test_emulator.py"]
    listed = subprocess.run([*pytest_cmd, "--collect-only", *files], cwd=tree, env=env, capture_output=True,
                            text=True, timeout=300)
    assert listed.returncode == 0, listed.stdout[-4000:] + listed.stderr[-4000:]
    mine = [line for line in listed.stdout.splitlines() if "::" in line and NAME in line]
    assert any("float64_check" in t for t in mine) and any("emulator_count" in t for t in mine), mine
    # and, whole, the files whose tests derive their kernels from the manifest without naming them
    # in their ids: the walk over every kernel, and Time's timed runs (the tuned kernels a plan keeps)
    run = subprocess.run([*pytest_cmd, "-rs", *mine, "tests/test_manifest_walk.py", "tests/test_js_time_stats.py"],
                         cwd=tree, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert re.search(r"(\d+) passed", run.stdout) and "failed" not in run.stdout, run.stdout[-2000:]


UNTRANSLATED = f"locale/pt_BR/LC_MESSAGES/site.po: untranslated: {LABEL!r}"


def _i18n(tree: Path, command: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-m", "i18n", command], cwd=tree, env=env, capture_output=True,
                          text=True, timeout=300)


def _messages(po: str) -> dict:
    """{msgid: (msgstr, its extracted comments, the files it is found in)} of a catalog's text."""
    return {m.id: (m.string, tuple(m.auto_comments), tuple(sorted({f for f, _line in m.locations})))
            for m in pofile.read_po(io.StringIO(po)) if m.id}


def _header(po: str) -> str:
    return po.split("\n\n", 1)[0]


def test_the_label_waits_for_its_portuguese_and_update_keeps_every_catalogs_header(tree, tmp_path):
    """kernels_wgsl/README.md: the label reaches the catalogs from the manifest alone, and
    test_i18n (python -m i18n check) asks for its Portuguese, and for nothing else. Then
    python -m i18n update, with the pinned Babel, adds the label to site.pot and site.po and
    changes no other line of any catalog (no header rewritten); filled, the check passes."""
    copy = tmp_path / "tree"
    shutil.copytree(tree, copy)
    first = _i18n(copy, "check")
    assert first.returncode == 1
    assert first.stdout.splitlines() == [UNTRANSLATED.replace(": untranslated: ", ": not yet extracted (run "
                                                              "`python -m i18n update`): ")], first.stdout
    catalogs = sorted(p.relative_to(copy).as_posix() for p in (copy / "locale").rglob("*.po*"))
    before = {c: (copy / c).read_text(encoding="utf-8") for c in catalogs}
    update = _i18n(copy, "update")
    assert update.returncode == 0, update.stderr[-3000:]
    after = {c: (copy / c).read_text(encoding="utf-8") for c in catalogs}
    assert {c for c in catalogs if after[c] != before[c]} == {"locale/site.pot", "locale/pt_BR/LC_MESSAGES/site.po"}
    assert all(_header(after[c]) == _header(before[c]) for c in catalogs)
    for c in ("locale/site.pot", "locale/pt_BR/LC_MESSAGES/site.po"):  # the one entry, and nothing else
        old, new = _messages(before[c]), _messages(after[c])
        assert set(new) - set(old) == {LABEL} and {k: new[k] for k in old} == old, c
        assert new[LABEL] == ("", ("The label of the kernel my-fused (the lab's Kernel menu).",),
                              ("kernels_wgsl/manifest.json",)), c
    second = _i18n(copy, "check")
    assert second.returncode == 1 and second.stdout.splitlines() == [UNTRANSLATED], second.stdout
    po = copy / "locale/pt_BR/LC_MESSAGES/site.po"
    po.write_text(po.read_text(encoding="utf-8").replace(f'msgid "{LABEL}"\nmsgstr ""',
                                                         f'msgid "{LABEL}"\nmsgstr "Fundido, uma cópia que um teste '
                                                         f'acrescentou"'), encoding="utf-8")
    done = _i18n(copy, "check")
    assert done.returncode == 0, done.stdout[-3000:]
