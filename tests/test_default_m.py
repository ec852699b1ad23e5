"""The default workgroup memory M has one source: the manifest's lesson.workgroup_bytes_default.

In a temporary copy of the tree the test changes that one value from the seed's 16,384 B to
32,768 B, edits nothing else (it holds every other file's bytes to the tree's), and renders,
with the copy's own Python, what the page shows: the lab form's M and its tiles sentence, the
film's figures, the emulator's default request, the facts' check, the native host's defaults and
the form's data-rules. Each follows the manifest; the counts are the emulator's at 32,768 B.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SEED_M, NEW_M = 16384, 32768
# What the page's data is rendered from: the emulator and host, the kernels, the build with
# its templates, content, catalogs, facts and film, its Markdown and server (sitebuild), and the
# course data (with the exercises it lists) and the measured results it reads.
COPIED = ("emulator/", "exercises/", "cannery_host/", "kernels_wgsl/", "i18n/", "locale/", "site/templates/",
          "site/content/", "facts/", "film/", "build.py", "sitebuild/", "planner/", "lab_api/", "course/",
          "bench/results/")


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("default-m")
    listed = subprocess.run(["git", "ls-files", "-z", "--", *COPIED], cwd=ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, tmp / rel)
    path = tmp / "kernels_wgsl" / "manifest.json"
    before = path.read_text(encoding="utf-8")
    old = f'"workgroup_bytes_default": {SEED_M},'
    assert before.count(old) == 1, "the seed's default M is the manifest's one workgroup_bytes_default"
    path.write_text(before.replace(old, f'"workgroup_bytes_default": {NEW_M},'), encoding="utf-8")
    return tmp


SCRIPT = r'''
import inspect, json, os
import build, film, i18n
from emulator import traffic
from emulator.tiling import LESSON_KERNELS, M_DEFAULT, MANIFEST, parse_request
from facts import compute as facts_compute
assert build.__file__.startswith(os.getcwd()), build.__file__
out = {"M_DEFAULT": M_DEFAULT, "request": parse_request({"kernel": "fused", "n": "4096", "d": "64"})["workgroup_bytes"],
       "facts": facts_compute.WORKGROUP_BYTES}
try:
    from cannery_host import wgpu_runner
    out["host"] = sorted({inspect.signature(f).parameters["workgroup_bytes"].default
                          for f in (wgpu_runner.Runner.run, wgpu_runner.Runner.run_backward, wgpu_runner.Runner.time)})
except ImportError:  # no wgpu-py: the host's module does not import
    out["host"] = None
fused = {d: traffic.count("fused", 4096, d).as_dict() for d in (16, 64)}
out["count"] = {d: [c["block_rows"], c["block_cols"], c["total_bytes"]] for d, c in fused.items()}
counts = build.lesson_counts()
out["lesson_counts"] = {d: counts[f"n4096_d{d}"]["fused"]["total_bytes"] for d in (16, 64)}
ctx = {"lang": i18n.language("en"), "languages": i18n.languages(), "facts": build.load_facts(), "counts": counts,
       "manifest": MANIFEST, "lesson_kernels": list(LESSON_KERNELS), "lab": build.lab_content("en"),
       "limits": {"count_max_n": 1, "check_max_n": 1, "backward_check_max_n": 1, "m_min": 4096,
                  "m_max": 65536, "head_dims": [16, 32, 64, 128]},
       "csp": "", "lab_rules": build.lab_rules("en"), "root": "", "home": ""}
ctx["film"] = film.build(ctx, lang="en")
out["film"] = {k: ctx["film"]["figures"][k] for k in ("M", "M_raw")}
out["film_d64"] = {k: ctx["film"]["figures"]["d64"][k] for k in ("B_r", "B_c", "fused_raw")}
out["html"] = build.make_env("en").get_template("_lab.html.j2").render(**ctx)
out["rules"] = json.dumps(build.lab_rules("en"))
import course
module = course.build(ctx)["module"]
out["links"] = [link["M"] for link in module["lab_links"]]
out["links_html"] = build.make_env("en").get_template("_module_lab.html.j2").render(**ctx, module=module)
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def shown(tree):
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
    run = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tree, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_the_emulator_the_facts_and_the_host_default_to_the_manifests_m(shown):
    assert shown["M_DEFAULT"] == shown["request"] == shown["facts"] == NEW_M
    assert shown["host"] in (None, [NEW_M])


def test_the_counts_are_made_at_the_new_m(shown):
    # the lesson's rule at 32,768 B: B_r = (M/2)/(4·d), B_c = B_r/2
    assert {d: v[:2] for d, v in shown["count"].items()} == {"16": [256, 128], "64": [64, 32]}
    assert shown["lesson_counts"] == {d: v[2] for d, v in shown["count"].items()}
    assert shown["film_d64"] == {"B_r": 64, "B_c": 32, "fused_raw": shown["count"]["64"][2]}


def test_the_lab_form_and_the_film_say_the_new_m(shown):
    html = shown["html"]
    field = re.search(r'<input id="workgroup_bytes"[^>]*>', html, re.S)
    assert field and f'value="{NEW_M}"' in field[0], field
    assert "At M = 32,768: d = 16 gives B_r = 256, B_c = 128; d = 64 gives B_r = 64, B_c = 32." in html
    assert shown["film"] == {"M": "32,768", "M_raw": NEW_M}
    assert f'"workgroup_bytes_default": {NEW_M}' in shown["rules"]


def test_the_module_pages_lab_links_open_at_the_new_m(shown):
    """module.toml's links into the lab give no M: each opens at the manifest's default, and
    the one that shows a larger bench at the manifest's largest (65,536 B, the seed's)."""
    assert shown["links"] == [NEW_M, NEW_M, NEW_M, 65536, NEW_M]
    assert shown["links_html"].count(f"&amp;M={NEW_M}\"") == 4 and "M = 32,768" in shown["links_html"]
