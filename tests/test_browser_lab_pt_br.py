"""The lab on the Brazilian Portuguese lesson page (/pt-BR/index.html), in Chromium.

Count, Check and bad input, pressed as a learner would: the words come from
locale/pt_BR/LC_MESSAGES/page.po (the page's JavaScript) and python.po (the
emulator in Pyodide), and every number is written the Brazilian way
(285.736.960, 16,5, 3,99e-7). One page is shared so Pyodide boots once.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import open_lab
from playwright.sync_api import expect
from test_browser_a11y import AXE, assert_no_violations

pytestmark = pytest.mark.browser

PYTHON = 120_000  # ms: Pyodide's first start on a shared CPU


@pytest.fixture(scope="module")
def lab(browser, server_url):
    """The Portuguese lab, with axe-core injected under the page's own policy (when installed)."""
    ctx, page = open_lab(browser, server_url + "pt-BR/index.html#lab", width=1280,
                         init_script=AXE if AXE.exists() else None)
    expect(page.locator("html")).to_have_attribute("lang", "pt-BR")
    yield page
    ctx.close()


def fill(page, n=None, d=None, kernel=None):
    if kernel:
        page.locator("#kernel").select_option(kernel)
    if n is not None:
        page.locator("#n").fill(str(n))
    if d is not None:
        page.locator("#d").fill(str(d))


def idle(page):
    expect(page.locator("#lab-form")).not_to_have_attribute("aria-busy", "true", timeout=PYTHON)


def test_count_writes_the_reference_figures_the_brazilian_way(lab, artifacts):
    fill(lab, n=4096, d=16, kernel="fused")
    lab.locator("#count-button").click()
    expect(lab.locator("#count-total")).to_have_text("17.301.504 bytes", timeout=PYTHON)
    idle(lab)
    expect(lab.locator("#count-plain")).to_have_text("285.736.960")
    expect(lab.locator("#count-fused")).to_have_text("17.301.504")
    expect(lab.locator("#count-ratio")).to_have_text("16,5")
    body = lab.locator("#count-body")
    expect(body).to_contain_text("N = 4.096, d = 16, M = 16.384 B: blocos de B_r = 128 linhas de consultas")
    expect(body).to_contain_text("(32 blocos de consultas)")
    expect(body).to_contain_text("16,5 MiB lidos e escritos na memória global, uma cabeça, float32.")
    expect(body).to_contain_text("O simples move 285.736.960 bytes; o fundido, 17.301.504: "
                                 "o kernel simples move 16,5 vezes mais.")
    expect(body.locator("thead")).to_have_text(re.compile(r"Tensor\s*Lidos \(bytes\)\s*Escritos \(bytes\)"))
    chart = lab.locator("#count-chart svg")
    expect(chart).to_have_attribute("aria-label", "Bytes movidos em N = 4.096, d = 16: simples 272,5 MiB, "
                                                  "fundido 16,5 MiB")
    texts = chart.locator(":scope > text").all_text_contents()
    assert [t for t in texts if t in ("Simples", "Fundido")] == ["Simples", "Fundido"]
    assert [t for t in texts if t.endswith("MiB")] == ["272,5 MiB", "16,5 MiB"]
    expect(lab.locator("#lab-status")).to_have_text("Contagem pronta: " + lab.locator("#kernel option:checked")
                                                    .inner_text().strip() + ", 17.301.504 bytes.")
    english = [w for w in ("moves", "tiles of", "query rows", "to and from", "Read (bytes)") if w in body.inner_text()]
    assert not english
    lab.locator("#count-result").screenshot(path=str(artifacts / "lab-pt-br-count.png"))


def test_check_says_its_verdict_and_errors_in_portuguese(lab, artifacts):
    fill(lab, n=256, d=64, kernel="fused")
    lab.locator("#check-button").click()
    expect(lab.locator("#check-verdict")).to_have_text("Passou", timeout=PYTHON)
    idle(lab)
    body = lab.locator("#check-body")
    expect(body).to_contain_text("N = 256, d = 64, com entradas aleatórias, semente")
    expect(body).to_contain_text("o kernel em float32 contra o valor exato em float64.")
    expect(body).to_contain_text("Linhas conferidas: todas as 256 linhas. Levou ")  # from Python's catalog
    expect(body.locator("caption").first).to_have_text("Erros")
    # Errors and bounds in scientific notation with a decimal comma: 3,99e-7, never 3.99e-7.
    for cell in ("#check-error", "#check-bound", "#check-fa-limit"):
        first = lab.locator(cell).inner_text().split("\n")[0]
        assert re.fullmatch(r"\d,\d\de[-+]\d+", first), (cell, first)
    expect(lab.locator("#check-fa-verdict")).to_have_text("dentro")
    # the first line is a sentence, its ratio grouped the Portuguese way (2.900, not 2,900 or 2900)
    expect(lab.locator("#check-headline")).to_have_text(
        re.compile(r"^Passou: maior erro \d,\d\de-\d+, \d{1,3}(\.\d{3})* vezes abaixo da cota\.$"))
    expect(lab.locator("#check-bound")).to_contain_text(re.compile(r"\d\.\d{3} ulps de float32"))
    expect(body).to_contain_text(re.compile(r"ulps de float32; \d,\d\de-\d+ da amplitude da saída"))
    expect(body).to_contain_text(re.compile(r"Levou \d+,\d\d s em Python"))
    expect(lab.locator("#lab-status")).to_have_text(re.compile(r"^Passou na conferência: maior erro \d,\d\de-\d+, "
                                                               r"cota \d,\d\de-\d+\.$"))
    lab.locator("#check-result").screenshot(path=str(artifacts / "lab-pt-br-check.png"))


@pytest.mark.parametrize("n,message", [
    ("0", "O comprimento da sequência N precisa ser pelo menos 1; com 0 não há linhas para a atenção."),
    ("−5", "O comprimento da sequência N precisa ser pelo menos 1; com -5 não há linhas para a atenção."),
    ("1000000000", "O comprimento da sequência N pode ser no máximo 65.536; 1.000.000.000 é grande demais "
                   "para contar aqui."),
    ("abc", "Comprimento da sequência N precisa ser um número escrito com os algarismos 0–9; “abc” não é."),
    ("1,5", "Comprimento da sequência N precisa ser um número inteiro, não 1,5."),
])
def test_a_bad_n_gets_a_portuguese_message_and_keeps_the_count(lab, n, message):
    fill(lab, n=n, d=16, kernel="fused")
    lab.locator("#count-button").click()
    expect(lab.locator("#n-error")).to_have_text(message)
    expect(lab.locator("#n")).to_have_attribute("aria-invalid", "true")
    expect(lab.locator("#lab-status")).to_have_text(message)
    # nothing already shown is lost
    expect(lab.locator("#count-result")).to_be_visible()
    expect(lab.locator("#count-plain")).to_have_text(re.compile(r"^\d{1,3}(\.\d{3})+$"))


def test_d_17_gets_a_portuguese_message_from_the_page_and_from_python(lab):
    fill(lab, n=4096, d=17, kernel="fused")
    lab.locator("#count-button").click()
    message = "A dimensão da cabeça d precisa ser um destes valores: 16, 32, 64, 128; 17 não é."
    expect(lab.locator("#d-error")).to_have_text(message)
    # Brazilian thousands in N ("4.096") are read as such, and Python describes the rows in Portuguese.
    fill(lab, n="4.096", d=16)
    lab.locator("#check-button").click()
    idle(lab)
    expect(lab.locator("#check-rows")).to_contain_text("de 4.096 linhas: linhas 0–127 (primeiro bloco de consultas)")
    expect(lab.locator("#d-error")).to_have_text("")
    assert not [e for e in lab.console_errors if "Content-Security-Policy" in e]


def test_python_answers_in_portuguese_when_the_page_cannot_judge(lab):
    # The model's head only Python knows: its sentence has its own N and d.
    fill(lab, n=4096, d=16, kernel="fused")
    lab.evaluate("() => window.cannery.lab.client.request('check_plan', "
                 "{kernel: 'fused', n: '4096', d: '16', input: 'model', head: '99'})"
                 ".then((r) => { document.getElementById('lab-status').textContent = r.errors[0].message; })")
    expect(lab.locator("#lab-status")).to_have_text(re.compile(r"^O modelo tem as cabeças 0 a \d+; "
                                                               r"a cabeça 99 não existe\.$"), timeout=PYTHON)


def test_screenshots_of_the_portuguese_lab(browser, server_url, artifacts):
    """Count and Check once, the lab then drawn at 1280 px and at 390 px."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    page.goto(server_url + "pt-BR/index.html#kernel=fused&n=4096&d=16&causal=0&M=16384&seed=1")
    # the lab's script has read the link (and so listens to its buttons)
    expect(page.locator("#lab-status")).to_have_text("As configurações do seu link já estão preenchidas abaixo. "
                                                     "Aperte Contar, Conferir ou Cronometrar.")
    page.locator("#count-button").click()
    expect(page.locator("#count-plain")).to_have_text("285.736.960", timeout=PYTHON)
    idle(page)
    page.locator("#n").fill("1024")
    page.locator("#check-button").click()
    expect(page.locator("#check-verdict")).to_have_text("Passou", timeout=PYTHON)
    idle(page)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.locator("#lab").screenshot(path=str(artifacts / f"lab-pt-br-{width}.png"))
        for card in ("count", "check"):
            page.locator(f"#{card}-result").screenshot(path=str(artifacts / f"lab-pt-br-{card}-{width}.png"))
        overflow = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, width
    ctx.close()


@pytest.mark.gpu
def test_time_on_the_gpu_speaks_portuguese_with_decimal_commas(lab, artifacts):
    """Time on SwiftShader (a CPU adapter): the card, the table and the notes in
    Portuguese, times and rates with a decimal comma, the counted bytes grouped."""
    from emulator.traffic import count
    lab.locator("#input-random").check()
    fill(lab, n=256, d=16, kernel="fused")
    lab.locator("#time-button").click()
    expect(lab.locator("#time-result")).to_be_visible(timeout=240_000)
    idle(lab)
    fused = count("fused", 256, 16, False, 16384)
    body = lab.locator("#time-body")
    expect(body).to_contain_text(
        "N = 256, d = 16, uma cabeça, float32, mediana das amostras e sua dispersão (mais rápida–mais lenta).")
    expect(body.locator("caption")).to_have_text("Tempos na sua GPU")
    expect(body.locator("thead")).to_contain_text("Aceleração sobre o simples")
    expect(body.locator("thead")).to_contain_text("Conferido antes (N = 256)")
    expect(lab.locator("#time-fused-check")).to_contain_text(re.compile(r"^passou \(\d,\d\de-\d+\)"))
    expect(lab.locator("#time-fused-ms")).to_have_text(re.compile(r"^\d+,\d+"))
    expect(lab.locator("#time-table tbody tr").nth(1)).to_contain_text(f"{fused.total_bytes:,}".replace(",", "."))
    expect(lab.locator("#time-software")).to_contain_text("SwiftShader roda o WebGPU na CPU deste computador")
    why = lab.locator("#time-why")
    for words in ("Memória contra aritmética.", "Invocações por workgroup.", "Código sem ajuste fino."):
        expect(why).to_contain_text(words)
    expect(lab.locator("#time-fewer")).to_have_text(re.compile(r"^\d+,\d+×$"))
    expect(lab.locator("#gpu-card h4")).to_have_text("Sua GPU")
    labels = lab.locator("#time-chart svg > text").all_text_contents()
    assert "1× = simples" in labels
    expect(lab.locator("#lab-status")).to_contain_text("Cronometragem pronta. O kernel fundido da lição move ")
    expect(lab.locator("#time-fused-spread")).to_have_text(re.compile(r"^\d+,\d+–\d+,\d+ ms$"))
    lab.locator("#time-result").screenshot(path=str(artifacts / "lab-pt-br-time.png"))


@pytest.mark.gpu
def test_the_roofline_in_brazilian_portuguese(lab, artifacts):
    """The roofline that the Time above drew (Time is pressed here when this test runs alone)."""
    if not AXE.exists():
        pytest.skip("node_modules/axe-core missing: run `npm ci`")
    if lab.locator("#roofline-chart").count() == 0:
        fill(lab, n=256, d=16)
        lab.locator("#time-button").click()
    expect(lab.locator("#roofline-chart")).to_be_visible(timeout=300_000)
    idle(lab)
    expect(lab.locator("#time-roofline h4")).to_have_text("O roofline da sua GPU")
    expect(lab.locator("#h200-title")).to_contain_text("Medido em uma NVIDIA H200, não na sua GPU")
    assert "GB/s" in lab.locator("#roofline-desc").text_content()
    lab.locator("#time-roofline").scroll_into_view_if_needed()
    assert_no_violations(lab, "roofline-pt", artifacts)


def test_backward_count_and_a_too_large_backward_check_in_portuguese(lab):
    lab.locator("#dir-backward").check()
    fill(lab, n=1024, d=64)
    lab.locator("#count-button").click()
    expect(lab.locator("#count-body")).to_contain_text("lidos e escritos na memória global pelo backward",
                                                       timeout=PYTHON)
    idle(lab)
    expect(lab.locator("#count-body")).to_contain_text("Tráfego do backward ÷ tráfego do forward: ")
    expect(lab.locator("#count-bwd-ratio")).to_have_text(re.compile(r"^\d+,\d\d$"))
    fill(lab, n=4096)
    lab.locator("#check-button").click()
    from emulator.backward import CHECK_MAX_N
    expect(lab.locator("#n-error")).to_have_text(
        f"A conferência do backward monta tabelas N×N em Python, por isso vai só até N = {CHECK_MAX_N}; "
        "N = 4.096 demoraria demais. Contar funciona com qualquer N.")
    lab.locator("#dir-forward").check()


def test_the_tiles_walk_in_portuguese_and_end_on_counts_bytes(lab):
    """The lab's picture of the walk (site/static/js/lab/walk/): its words from page.po and
    site.po, its numbers the Brazilian way, its last step on the Count card's figure; axe
    finds nothing to fix in it (injected by DevTools, so the page's CSP stays on)."""
    fill(lab, n=300, d=64, kernel="fused")
    lab.locator("#causal").check()
    lab.locator("#count-button").click()
    expect(lab.locator("#count-body")).to_contain_text("N = 300", timeout=PYTHON)
    idle(lab)
    total = lab.inner_text("#count-total").split()[0]
    lab.locator("#walk > summary").click()
    expect(lab.locator("#walk > summary")).to_have_text("Os blocos, em seu percurso")
    expect(lab.locator("#walk-view")).to_have_attribute("data-shows", "fused 300", timeout=PYTHON)
    expect(lab.locator("#walk-group")).to_have_text("Cada quadrado da grade é um bloco de consultas (a sua linha) "
                                                    "diante de um bloco de chaves (a sua coluna).")
    expect(lab.locator(".walk-controls button")).to_have_text(
        ["Voltar", "Avançar", "Reproduzir", "Até o fim"])
    lab.locator("#walk-step").focus()
    for _ in range(3):
        lab.keyboard.press("ArrowRight")
    expect(lab.locator("#walk-now")).to_contain_text(
        "Passo 3 de 129, passada fused: o bloco de chaves 1 (linhas 16–31) passa pelo bloco de consultas 0 "
        "(linhas 0–31), na bancada. Lê K 4.096 B e V 4.096 B da memória global.")
    expect(lab.locator("#walk-now")).to_contain_text("Com a máscara causal, 17 dos 19 pares de blocos desta linha "
                                                     "ficam além da diagonal e são pulados.")
    expect(lab.locator("#walk-bench")).to_contain_text("A bancada (memória de workgroup), M = 16.384 B")
    lab.keyboard.press("End")
    expect(lab.locator("#walk-total")).to_have_text(f"{total} de {total} bytes")
    expect(lab.locator("#walk-now")).to_contain_text(f"O percurso terminou: {total} bytes movidos")
    axe = Path(__file__).resolve().parent.parent / "node_modules" / "axe-core" / "axe.min.js"
    if axe.exists():
        lab.evaluate(axe.read_text(encoding="utf-8") + "\n;0")
        violations = lab.evaluate("""async () => (await axe.run(document.getElementById('walk'), {
            runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa']},
            resultTypes: ['violations']})).violations.map((v) => v.id)""")
        assert violations == []
    lab.locator("#causal").uncheck()
    lab.locator("#walk > summary").click()
