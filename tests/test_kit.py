"""The offline kit (course/kit.py, dist/kit/cannery-exercises.zip).

The built kit is unzipped into a temporary folder outside the repository and a
step's checks run there with plain Python: the standard library alone (-S keeps
site-packages out, -E the environment's PYTHON* variables, and the environment
is empty), from the unzipped folder, on a passing and on a failing answer. The
zip is the same bytes every build, holds what the README promises and none of
the answers, and both language's pages link it.
"""
from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from course import kit
from course.figures import figures
from exercises import content

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def unzipped(built_site, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("kit")
    assert ROOT not in folder.parents
    with zipfile.ZipFile(built_site / kit.HREF) as z:
        z.extractall(folder)
    return folder / kit.NAME


def plain_python(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """python3 -S -E ARGS in ``folder``, with an empty environment."""
    return subprocess.run([sys.executable, "-S", "-E", *args], cwd=folder, env={}, capture_output=True,
                          text=True, timeout=120)


def test_the_standard_library_alone_is_on_the_path(unzipped):
    probe = plain_python(unzipped, "-c", "import sys; print(sys.version_info >= (3, 11)); import jinja2")
    assert probe.stdout.strip() == "True"
    assert "ModuleNotFoundError: No module named 'jinja2'" in probe.stderr


def test_a_passing_answer_passes_in_the_unzipped_folder(unzipped):
    answer = unzipped / "my_solution.py"
    answer.write_text(content.read(content.step("online-softmax", "compose"), "solution.py"), encoding="utf-8")
    run = plain_python(unzipped, "-m", "exercises", "check", "online-softmax", "my_solution.py")
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.match(r"== online-softmax / compose: (\d+) of \1 tests pass\n", run.stdout), run.stdout
    assert "FAIL" not in run.stdout


def test_a_failing_answer_fails_naming_its_input(unzipped):
    wrong = content.wrong_answers(content.step("online-softmax", "scratch"))["no_rescale.py"]
    (unzipped / "wrong.py").write_text(wrong, encoding="utf-8")
    run = plain_python(unzipped, "-m", "exercises", "check", "online-softmax", "wrong.py")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "FAIL  the worked example: scores [1, 2, 3, 0] in tiles of 2" in run.stdout
    pt = plain_python(unzipped, "-m", "exercises", "check", "online-softmax", "wrong.py", "--lang", "pt-BR")
    assert pt.returncode == 1 and "FAIL  o exemplo resolvido: pontuações [1, 2, 3, 0] em blocos de 2" in pt.stdout


def test_the_starter_comes_from_the_kit_and_a_usage_error_exits_2(unzipped):
    run = plain_python(unzipped, "-m", "exercises", "starter", "flash-backward", "scratch")
    assert run.returncode == 0 and run.stdout == content.read(content.step("flash-backward", "scratch"), "starter.py")
    assert plain_python(unzipped, "-m", "exercises", "check", "no-such", "x.py").returncode == 2


def test_the_zip_is_the_same_bytes_every_build(built_site, tmp_path):
    import build
    again = build.build(tmp_path / "dist")
    assert (again / kit.HREF).read_bytes() == (built_site / kit.HREF).read_bytes()
    with zipfile.ZipFile(again / kit.HREF) as z:
        infos = z.infolist()
    assert [i.filename for i in infos] == sorted(i.filename for i in infos)
    assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}


def test_it_holds_every_steps_tests_and_starter_and_no_answers(built_site):
    with zipfile.ZipFile(built_site / kit.HREF) as z:
        names = {n.removeprefix(kit.NAME + "/") for n in z.namelist()}
        readme = z.read(f"{kit.NAME}/README.md").decode()
        readme_pt = z.read(f"{kit.NAME}/README.pt-BR.md").decode()
    base = "site/content/exercises"
    for slug in content.slugs():
        ex = content.load(slug)
        assert f"{base}/{slug}/exercise.toml" in names
        for name in ex.get("files", []):  # an exercise run elsewhere: its downloads
            assert f"{base}/{slug}/{name}" in names
        for st in ex["steps"]:
            folder = f"{base}/{slug}/{st['id']}"
            assert {f"{folder}/prompt.md", f"{folder}/prompt.pt-BR.md", f"{folder}/hints.md"} <= names
            starter = "starter.wgsl" if ex.get("language") == "wgsl" else "starter.py"
            assert f"{folder}/{starter}" in names
            assert ex.get("language") == "wgsl" or f"{folder}/tests.py" in names
            assert f"{folder}/solution.py" not in names and f"{folder}/solution.wgsl" not in names
    assert not [n for n in names if "/wrong/" in n]
    assert "locale/pt_BR/LC_MESSAGES/python.mo" in names
    assert f"Python {kit.PYTHON_MIN} or newer" in readme and "python3 -m exercises check" in readme
    assert f"Python {kit.PYTHON_MIN} ou mais novo" in readme_pt


def test_a_prompt_in_the_kit_has_its_figures_written_in(built_site):
    with zipfile.ZipFile(built_site / kit.HREF) as z:
        prompt = z.read(f"{kit.NAME}/site/content/exercises/online-softmax/scratch/prompt.md").decode()
        prompt_pt = z.read(f"{kit.NAME}/site/content/exercises/online-softmax/scratch/prompt.pt-BR.md").decode()
    l = figures()["example"]["l"]  # the worked example's sum, as the page's prompt quotes it
    assert "{{" not in prompt and "scores `[1, 2, 3, 0]`" in prompt and rf"\ell \approx {l:.4f}$" in prompt
    assert "{{" not in prompt_pt and rf"\ell \approx {l:.4f}$".replace(".", ",") in prompt_pt


@pytest.mark.parametrize("page", ["module/index.html", "module/online-softmax/index.html",
                                  "module/triton-port/index.html", "module/wgsl-kernel/index.html"])
@pytest.mark.parametrize("prefix", ["", "pt-BR/"])
def test_every_module_and_exercise_page_links_the_kit(built_site, page, prefix):
    html = (built_site / prefix / page).read_text(encoding="utf-8")
    href = "../" * (prefix + page).count("/") + kit.HREF
    assert f'href="{href}" download="cannery-exercises.zip"' in html
    assert "From a copy of this repository" not in html


def test_the_readme_names_every_solution_the_zip_holds(built_site):
    """The Triton exercise's solution.py is in the zip (among its files), so each
    README names it, and none says that our solutions are left out."""
    with zipfile.ZipFile(built_site / kit.HREF) as z:
        names = [n.removeprefix(kit.NAME + "/") for n in z.namelist()]
        readmes = [z.read(f"{kit.NAME}/README.md").decode(), z.read(f"{kit.NAME}/README.pt-BR.md").decode()]
    held = [n for n in names if n.rsplit("/", 1)[-1].startswith("solution.")]
    assert held == kit.solutions({n: b"" for n in names})
    assert "site/content/exercises/triton-port/solution.py" in held
    for text in readmes:
        assert "What is not here" not in text and "O que não está aqui" not in text
        for path in held:
            assert f"`{path}`" in text
