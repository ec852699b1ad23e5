"""The exercise checker speaks the page's language: with the pt-BR python
catalog compiled as the build ships it (a .mo file plus numbers.json, read by
emulator.i18n.use), exercise 1's Scratch checker reports a typical wrong answer
in Portuguese, with a decimal comma in the numbers of its prose and Python's
own notation in the list a learner may paste back; English comes back after."""
from __future__ import annotations

import json

import pytest

import emulator.i18n
import i18n
from exercises import content, runner

SCRATCH = content.step("online-softmax", "scratch")


@pytest.fixture
def portuguese(tmp_path):
    folder = tmp_path / "pt_BR" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    (folder / "python.mo").write_bytes(i18n.mo_bytes(i18n.language("pt-BR"), "python"))
    (tmp_path / "pt_BR" / "numbers.json").write_text(json.dumps(i18n.numbers("pt-BR").symbols()))
    emulator.i18n.use("pt-BR", str(tmp_path))
    try:
        yield
    finally:
        emulator.i18n.use("en")


def check_wrong(name):
    return runner.check("online-softmax", "scratch", content.wrong_answers(SCRATCH)[name])


def test_a_missing_rescale_is_reported_in_portuguese_with_a_decimal_comma(portuguese):
    first = check_wrong("no_rescale.py")["results"][0]
    assert first["title"] == "o exemplo resolvido: pontuações [1, 2, 3, 0] em blocos de 2"
    assert first["input"] == "pontuações [1, 2, 3, 0], blocos de 2"
    assert first["message"] == ("pontuações [1, 2, 3, 0], blocos de 2: o esperado era l = 1,5530, "
                                "mas veio 2,4177")
    assert (first["expected"], first["got"]) == ("l = 1,5530", "2,4177")


def test_a_learner_exception_and_the_traceback_header_are_in_portuguese(portuguese):
    bad = [r for r in check_wrong("no_max_subtraction.py")["results"] if not r["ok"]]
    assert bad[0]["message"] == "pontuações [1000, 999], blocos de 1: seu código lançou OverflowError"
    assert bad[0]["traceback"].startswith("Traceback (só o seu código, a chamada mais recente por último):")


def test_english_comes_back_after_portuguese(portuguese):
    check_wrong("no_rescale.py")
    emulator.i18n.use("en")
    first = check_wrong("no_rescale.py")["results"][0]
    assert first["message"] == "scores [1, 2, 3, 0], block 2: expected l = 1.5530, got 2.4177"
    assert first["title"] == "the worked example: scores [1, 2, 3, 0] in tiles of 2"


def test_break_its_judge_names_the_bugs_in_the_page_language(portuguese):
    """The judge's messages quote a bug's title: on the pt-BR page, the
    Portuguese one the page shows (site/content/pt-BR/exercises/break-it/exercise.toml)."""
    from exercises import breakit
    titles = [b["title"] for b in breakit.bugs()]
    assert titles[0] == "a reescala esquecida" and len(set(titles)) == 5
    assert [b["file"] for b in breakit.bugs()] == [b["file"] for b in breakit.meta()["bugs"]]
    emulator.i18n.use("en")
    assert breakit.bugs()[0]["title"] == breakit.meta()["bugs"][0]["title"] == "the rescale left out"


def test_a_whole_row_softmax_is_told_what_it_read_in_portuguese(portuguese):
    compose = content.step("online-softmax", "compose")
    report = runner.check("online-softmax", "compose", content.wrong_answers(compose)["whole_row_softmax.py"])
    [bad] = [r for r in report["results"] if not r["ok"] and r["name"] == "test_reads_like_the_fused_kernel"]
    assert bad["title"] == ("lê K e V como o kernel fundido: uma vez por bloco de consultas, nunca uma linha "
                            "inteira de pontuações")
    assert bad["message"] == (
        "N = 65, d = 4, semente 65, block_rows 32, block_cols 8, atenção completa: seu código leu cada linha de K "
        "uma vez por linha de Q (N = 65: 4.225 leituras); uma passada em blocos o lê uma vez por bloco de consultas "
        "(3 blocos: 195 leituras)")
    assert (bad["expected"], bad["got"]) == ("linhas de K lidas: 195", "linhas de K lidas: 4.225")


def test_the_guards_refusal_and_a_held_copy_are_reported_in_portuguese(portuguese):
    report = runner.check("online-softmax", "probe", "import sys\ndef io_bytes(*a):\n    return 0\n")
    assert report["error"].endswith("ImportError: sys: esta etapa roda seu código sem os módulos do próprio "
                                    "projeto: a contagem é sua para escrever")
    copy = [r for r in check_wrong("copies_then_two_passes.py")["results"] if not r["ok"]]
    assert [r["title"] for r in copy] == ["guarda um bloco de pontuações por vez: nenhuma cópia da linha, "
                                          "de forma alguma"]
    assert copy[0]["message"] == ("16.384 pontuações aleatórias, blocos de 32: seu código guardou 16.384 pontuações "
                                  "de uma vez (block = 32): um softmax online guarda um bloco")
