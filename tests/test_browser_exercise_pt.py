"""In Chromium: exercise 1's page in Brazilian Portuguese
(/pt-BR/module/online-softmax/). The page's JavaScript and the checker's
Python (Pyodide, with the pt-BR catalog the build ships) both speak
Portuguese: a typical wrong answer shows its failure with the input named and
a decimal comma, a right answer passes in Portuguese words, and a loop that
never ends is stopped with a Portuguese message while the code stays.
Screenshots of the failure report and the pass at 1280 and 390 px go to
test-artifacts/."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from test_browser_exercise import LONG, LOOP, _read, _wrong, check, open_page, type_code

pytestmark = pytest.mark.browser

PAGE = "pt-BR/module/online-softmax/index.html"
WRONG = "pontuações [1, 2, 3, 0], blocos de 2: o esperado era l = 1,5530, mas veio 2,4177"
PASSED = re.compile(r"^Todos os \d+ testes passaram\. Etapa concluída\.$")


@pytest.fixture(scope="module", params=[(1280, 900), (390, 844)], ids=["1280", "390"])
def pt_page(request, browser, server_url):
    ctx, page = open_page(browser, server_url + PAGE, viewport=request.param, shared=False)
    page.width = request.param[0]
    expect(page.locator("html")).to_have_attribute("lang", "pt-BR")
    expect(page.locator("#step-scratch .cm-editor")).to_be_visible()
    yield page
    assert not page.offsite
    ctx.close()


def test_a_wrong_answer_shows_the_portuguese_failure_with_its_input(pt_page, artifacts):
    page = pt_page
    type_code(page, "scratch", _wrong("scratch", "no_rescale.py"))
    section = check(page, "scratch")
    expect(section.locator(".step-status")).to_have_text(re.compile(r"^\d+ de \d+ testes passaram\.$"))
    failing = section.locator(".test-result.fail").first
    expect(failing.locator(".result-mark")).to_have_text("falhou")
    expect(failing.locator(".result-title")).to_contain_text("o exemplo resolvido")
    expect(failing.locator(".result-message")).to_have_text(WRONG)
    values = failing.locator(".result-values")
    expect(values.locator("dt")).to_have_text(["Entrada", "Esperado", "Obtido"])
    expect(values.locator("dd")).to_have_text(["pontuações [1, 2, 3, 0], blocos de 2", "l = 1,5530", "2,4177"])
    section.locator(".step-status").evaluate("el => el.scrollIntoView({block: 'start'})")
    page.screenshot(path=str(artifacts / f"exercise-pt-failure-{page.width}.png"))


def test_a_whole_row_softmax_is_told_in_portuguese_what_it_read(pt_page):
    page = pt_page
    type_code(page, "compose", _wrong("compose", "whole_row_softmax.py"))
    section = check(page, "compose")
    # the reads test's failure (a whole row of scores fails the memory test too)
    failing = section.locator(".test-result.fail").filter(has_text="seu código leu cada linha de K")
    expect(failing).to_have_count(1)
    expect(failing.locator(".result-message")).to_have_text(
        "N = 65, d = 4, semente 65, block_rows 32, block_cols 8, atenção completa: seu código leu cada linha de K "
        "uma vez por linha de Q (N = 65: 4.225 leituras); uma passada em blocos o lê uma vez por bloco de consultas "
        "(3 blocos: 195 leituras)")
    expect(failing.locator(".result-values dd")).to_have_text([
        "N = 65, d = 4, semente 65, block_rows 32, block_cols 8, atenção completa", "linhas de K lidas: 195",
        "linhas de K lidas: 4.225"])


def test_a_loop_that_never_ends_is_stopped_with_a_portuguese_message(pt_page):
    page = pt_page
    if page.width != 390:
        pytest.skip("the message is the same at every width: read once, on the phone")
    type_code(page, "scratch", LOOP.format(name="online_softmax"))
    section = check(page, "scratch")
    expect(section.locator(".step-status")).to_have_text(
        "Interrompido depois de 10 s: será que há um laço que nunca termina? "
        "O Python foi reiniciado; seu código continua aqui.", timeout=LONG)
    expect(section.locator(".cm-content")).to_contain_text("while True")


def test_the_right_answer_passes_in_portuguese(pt_page, artifacts):
    page = pt_page
    type_code(page, "scratch", _read("scratch", "solution.py"))
    section = check(page, "scratch")
    expect(section.locator(".step-status")).to_have_text(PASSED, timeout=LONG)
    expect(section.locator(".step-state")).to_have_text("concluída")
    expect(section.locator(".test-result.pass .result-mark").first).to_have_text("passou")
    expect(section.locator(".test-result.pass .result-title").first).to_contain_text(
        "o exemplo resolvido: pontuações [1, 2, 3, 0] em blocos de 2")
    expect(page.locator('.ladder-state[data-step="online-softmax/scratch"]')).to_have_text("(concluída)")
    section.locator(".step-status").evaluate("el => el.scrollIntoView({block: 'start'})")
    page.screenshot(path=str(artifacts / f"exercise-pt-pass-{page.width}.png"))
