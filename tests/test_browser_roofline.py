"""The roofline under Time and the H200's measured figures, in
Chromium: on SwiftShader (a software adapter, so the H200's figures show too) and without
WebGPU at all (navigator.gpu deleted before any script runs). Also the page weight before
Play: the roofline's code and data load only on Time. The roofline in Brazilian Portuguese
is read on the Portuguese lab's page, after its Time (tests/test_browser_lab_pt_br.py).

One page per case; each presses Time once.
"""
from __future__ import annotations

import gzip
import json
import math

import pytest
from conftest import open_lab
from test_browser_a11y import assert_no_violations

from course import measured
from emulator.traffic import count

pytestmark = pytest.mark.browser

NO_GPU = "delete Navigator.prototype.gpu; delete navigator.gpu;"


def press_time(page, n, d, backward=False):
    if backward:
        page.check("#dir-backward")
    page.fill("#n", str(n))
    page.fill("#d", str(d))
    page.click("#time-button")


def rate(x):
    """format.js's rate(): what the page writes for a GB/s or GFLOP/s figure."""
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}" if x >= 1 else f"{x:#.2g}"


@pytest.fixture(scope="module")
def roofline_page(browser, server_url, artifacts):
    """The lab in English on SwiftShader after Time at N = 256, d = 16 (axe may be injected)."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    page = ctx.new_page()
    page.console_errors = []
    page.on("pageerror", lambda e: page.console_errors.append(str(e)))
    page.goto(server_url + "#lab")
    ok = page.evaluate("async () => Boolean(navigator.gpu && await navigator.gpu.requestAdapter())")
    if not ok:
        ctx.close()
        pytest.skip("no WebGPU adapter in Chromium")
    press_time(page, 256, 16)
    page.locator("#roofline-chart").wait_for(timeout=300_000)
    page.locator("#lab-form:not([aria-busy='true'])").wait_for(timeout=60_000)
    yield page
    ctx.close()


@pytest.mark.gpu
def test_time_draws_the_roofline_with_a_point_per_kernel(roofline_page, artifacts):
    page = roofline_page
    timed = page.locator("#time-table tbody th[scope=row]").evaluate_all(
        "(ths) => ths.map((th) => th.firstChild.textContent.trim())")
    assert {"plain", "fused"} <= set(timed)
    kernels = page.locator("#roofline-chart .pt-kernel").evaluate_all("(ps) => ps.map((p) => p.dataset.kernel)")
    assert sorted(kernels) == sorted(timed)
    passes = page.locator("#roofline-chart .pt-pass").evaluate_all("(ps) => ps.map((p) => p.dataset.kernel)")
    assert passes == ["plain: scores", "plain: softmax", "plain: pv"]
    assert page.locator("#roofline-roof").count() == 1 and page.locator("#roofline-chart .ridge").count() == 1
    # The roofs: both positive, FLOP/s over B/s a plausible ridge for a CPU or a GPU.
    figures = page.locator("#roofline-figures")
    bw = float(figures.get_attribute("data-bytes-per-second"))
    fl = float(figures.get_attribute("data-flop-per-second"))
    assert bw > 0 and fl > 0
    assert 0.5 < fl / bw < 1000, (bw, fl)
    # The chart's text alternative: its title and description carry the figures.
    assert page.locator("#roofline-chart").get_attribute("aria-labelledby") == "roofline-title roofline-desc"
    desc = page.locator("#roofline-desc").text_content()
    assert f"copy {rate(bw / 1e9)} GB/s" in desc and f"{rate(fl / 1e9)} GFLOP/s" in desc
    assert "ridge" in desc and all(k in desc for k in timed)
    assert "plain: softmax" in desc and "under the memory roof" in desc
    # The table beside the chart: bytes from the emulator's count, Count's numbers.
    rows = page.locator("#roofline-table tbody tr")
    assert rows.count() == len(timed) + 3
    plain = count("plain", 256, 16, False, 16384)
    body = page.inner_text("#roofline-table")
    assert f"{plain.total_bytes:,}" in body
    for name, b in plain.per_pass.items():
        assert f"{b:,}" in body, name
    # SwiftShader: the roofs are the CPU's, and the H200's figures are shown, labelled.
    assert "these roofs are the CPU's" in page.inner_text("#roofline-software")
    assert "Measured on an NVIDIA H200, not on your GPU" in page.inner_text("#h200-title")
    words = page.inner_text("#roofline-words")
    assert "plain" in words and "fused" in words and "traffic ratio" in words
    if not measured.table()["roofline"]:
        assert "has not been measured" in page.inner_text("#roofline-h200-note")
        assert page.locator("#roofline-chart .roof-h200").count() == 0
    assert page.locator("#roofline-chart .pt-h200").count() > 0
    assert page.console_errors == []
    page.locator("#time-result").screenshot(path=str(artifacts / "time-card-1280.png"))
    page.locator("#time-roofline").screenshot(path=str(artifacts / "roofline-1280.png"))
    assert_labels_readable_and_apart(page, 11)
    page.set_viewport_size({"width": 390, "height": 900})
    page.locator("#roofline-chart.is-narrow").wait_for()  # drawn again for the phone
    page.locator("#time-roofline").screenshot(path=str(artifacts / "roofline-390.png"))
    assert_labels_readable_and_apart(page, 11)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.locator("#roofline-chart:not(.is-narrow)").wait_for()


def assert_labels_readable_and_apart(page, min_px):
    """Every word of the chart at least min_px CSS px tall; no point label on another; every
    point named, the H200's faint ones too."""
    got = page.evaluate("""() => {
      const svg = document.getElementById('roofline-chart');
      const k = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
      const texts = [...svg.querySelectorAll('text')].map((t) => ({ text: t.textContent,
        px: parseFloat(getComputedStyle(t).fontSize) * k, r: t.getBoundingClientRect(),
        label: t.classList.contains('pt-label') }));
      const meet = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5
        && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
      const labels = texts.filter((t) => t.label);
      const clash = [];
      labels.forEach((a, i) => labels.slice(i + 1).forEach((b) => {
        if (meet(a.r, b.r)) clash.push([a.text, b.text]);
      }));
      const named = labels.flatMap((t) => t.text.split(', '));
      return { small: texts.filter((t) => t.px < MIN).map((t) => `${t.text} ${t.px.toFixed(1)}`), clash,
               h200: svg.querySelectorAll('.pt-h200').length,
               h200Named: named.filter((n) => n.startsWith('H200 ')).length,
               kernels: svg.querySelectorAll('.pt-kernel, .pt-pass').length,
               kernelsNamed: named.filter((n) => !n.startsWith('H200 ')).length };
    }""".replace("MIN", str(min_px)))
    assert got["small"] == [] and got["clash"] == [], got
    assert got["h200Named"] == got["h200"] > 0 and got["kernelsNamed"] == got["kernels"], got


@pytest.mark.gpu
def test_backward_time_draws_its_kernels_on_the_same_roofs(roofline_page):
    """The second Time reuses the roofs measured for this visit, and draws the backward kernels."""
    page = roofline_page
    before = page.locator("#roofline-figures").get_attribute("data-bytes-per-second")
    page.evaluate("() => { document.getElementById('roofline-chart').remove(); }")
    press_time(page, 64, 16, backward=True)
    page.locator("#roofline-chart").wait_for(timeout=300_000)
    page.locator("#lab-form:not([aria-busy='true'])").wait_for(timeout=60_000)
    timed = page.locator("#time-body table").first.locator("tbody th[scope=row]").all_text_contents()
    kernels = page.locator("#roofline-chart .pt-kernel").evaluate_all("(ps) => ps.map((p) => p.dataset.kernel)")
    assert sorted(kernels) == sorted(timed) and len(kernels) >= 2
    assert page.locator("#roofline-chart .pt-pass").count() == 0
    assert page.locator("#roofline-figures").get_attribute("data-bytes-per-second") == before
    assert "backward" in page.locator("#roofline-desc").text_content()
    page.check("#dir-forward")


@pytest.mark.gpu
def test_the_roofline_card_has_no_axe_violations(roofline_page, artifacts):
    roofline_page.locator("#time-roofline").scroll_into_view_if_needed()
    assert_no_violations(roofline_page, "roofline", artifacts)


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "backward"])
def test_without_webgpu_time_shows_the_h200_figures_labelled(browser, server_url, backward):
    ctx, page = open_lab(browser, server_url + "#lab")
    try:
        ctx.add_init_script(NO_GPU)
        page.reload()
        assert page.evaluate("() => 'gpu' in navigator") is False
        press_time(page, 1000, 64, backward=backward)
        page.locator("#h200-title").wait_for(timeout=180_000)
        assert page.inner_text("#h200-title") == "Measured on an NVIDIA H200, not on your GPU"
        assert "no WebGPU" in page.inner_text("#lab-alert")
        table = measured.table()["backward" if backward else "forward"]
        # nearest to N = 1000, d = 64, full, in log N: N = 1,024 in the forward sweep, 4,096 backward
        same = [s for s in table["sizes"] if s["d"] == 64 and not s["causal"]]
        reference_size = min(same, key=lambda s: abs(math.log2(s["n"] / 1000)))
        assert reference_size["n"] == (4096 if backward else 1024)
        text = page.inner_text("#time-h200")
        assert f"N = {reference_size['n']:,}, d = 64, full, 32 heads" in text
        assert "your form: N = 1,000, d = 64" in text
        source = page.inner_text("#h200-source")
        assert table["file"] in source and table["date"] in source and table["command"] in source
        cells = page.locator("#h200-table tbody th").all_text_contents()
        assert cells == [k["kernel"] for k in reference_size["kernels"]]
        first = page.locator("#h200-table tbody tr").first.inner_text()
        assert rate(reference_size["kernels"][0]["medianMs"]) in first
        # the forward card sets a plain baseline as well made as the fused kernels beside the
        # lesson's (course/measured.py fair_plain): at d = 64, plain-reg against fused-reg
        fair = page.locator("#h200-fair")
        if backward:
            assert fair.count() == 0
        else:
            f = next(x for x in measured.table()["fair_plain"]["sizes"] if x["d"] == 64 and not x["causal"])
            said = fair.inner_text()
            assert "plain-reg keeps plain's three passes" in said and "N = 4,096, d = 64" in said, said
            assert f"{f['plain_reg_ms']:.2f} ms" in said, said
            assert f"at any limits, {f['fused']['kernel']}, took" in said, said
            assert "1.34× as fast" in said and f"{f['plain_ms'] / f['fused']['medianMs']:.2f}× as fast" in said, said
            assert measured.FAIR_PLAIN in said, said
            assert "timed at the device's largest limits" in said, said
        assert page.console_errors == []
    finally:
        ctx.close()


def test_page_weight_before_play_stays_under_150_kb(browser, server_url):
    """Everything the page fetches before anyone presses a button: at most 150 KB as a
    server sends it compressed (gzip, level 9; uncompressed it is about 220 KB), and none
    of the roofline's code or data."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    sizes = {}

    def done(request):
        resp = request.response()
        sizes[request.url] = len(gzip.compress(resp.body(), 9)) if resp else 0

    page.on("requestfinished", done)
    try:
        page.goto(server_url, wait_until="networkidle")
        total = sum(sizes.values())
        assert total <= 150_000, json.dumps(sorted(sizes.items(), key=lambda kv: -kv[1])[:10], indent=1)
        names = " ".join(sizes)
        for later in ("roofline.js", "probes.js", "measured-h200.json", "gpu/index.js"):
            assert later not in names, later
    finally:
        ctx.close()
