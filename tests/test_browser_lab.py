"""The lab in the page: Count and Check through the Pyodide worker, in Chromium.

One page is shared by the module so Pyodide boots once.
"""
from __future__ import annotations

import json
import math
import re

import pytest
from conftest import open_lab
from playwright.sync_api import expect
from test_emulator import CASES, dig

import build
import lab_api as api
from emulator.tiling import MANIFEST

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def lab(browser, server_url):
    ctx, page = open_lab(browser, server_url + "#lab", width=1200)
    yield page
    ctx.close()


def press(page, button, n=None, d=None, kernel=None):
    if kernel:
        page.select_option("#kernel", kernel)
    if n is not None:
        page.fill("#n", str(n))
    if d is not None:
        page.fill("#d", str(d))
    page.click(button)


def wait_idle(page):
    page.wait_for_function("() => document.getElementById('lab-form').getAttribute('aria-busy') !== 'true'",
                           timeout=120_000)


def test_count_shows_the_reference_figures(lab, artifacts):
    press(lab, "#count-button", n=4096, d=16, kernel="fused")
    lab.wait_for_selector("#count-total", timeout=120_000)
    wait_idle(lab)
    assert lab.inner_text("#count-plain") == "285,736,960"
    assert lab.inner_text("#count-fused") == "17,301,504"
    assert lab.inner_text("#count-total") == "17,301,504 bytes"
    assert lab.inner_text("#count-ratio") == "16.5"
    assert "kernel=fused" in lab.url and "n=4096" in lab.url
    # Count shows the lesson's kernels only, as the film does; the tuned ones come with Time.
    body = lab.inner_text("#count-body")
    for tuned in [k for k in MANIFEST["kernels"] if k not in ("plain", "fused", "fused-no-rescale")]:
        assert tuned not in body
    assert "key streams" not in body and "subgroup" not in body
    texts = lab.locator("#count-chart svg > text").all_text_contents()
    assert [t for t in texts if t in ("Plain", "Fused")] == ["Plain", "Fused"]
    assert [t for t in texts if t.endswith("MiB")] == ["272.5 MiB", "16.5 MiB"]   # one bar each, no third
    lab.locator("#count-result").screenshot(path=str(artifacts / "lab-count.png"))
    press(lab, "#count-button", n=4096, d=64)
    lab.wait_for_function("() => document.getElementById('count-plain').textContent === '538,968,064'")
    assert lab.inner_text("#count-fused") == "270,532,608"


@pytest.mark.parametrize("kernel,passed", [("fused", True), ("fused-no-rescale", False)])
def test_check_at_256_by_64(lab, kernel, passed):
    press(lab, "#check-button", n=256, d=64, kernel=kernel)
    wait_idle(lab)
    verdict = lab.inner_text("#check-verdict")
    assert verdict == ("Passed" if passed else "Failed")
    body = lab.inner_text("#check-body")
    assert "all 256 rows" in body
    if not passed:
        assert "First failing row" in body


def test_bad_input_keeps_the_previous_result(lab):
    press(lab, "#count-button", n=100, d=16, kernel="plain")
    wait_idle(lab)
    before = lab.inner_text("#count-total")
    press(lab, "#count-button", n="-5")
    lab.wait_for_function("() => document.getElementById('n-error').textContent.length > 0")
    wait_idle(lab)
    assert "at least 1" in lab.inner_text("#n-error")
    assert lab.get_attribute("#n", "aria-invalid") == "true"
    assert lab.inner_text("#count-total") == before
    assert "at least 1" in lab.inner_text("#lab-status")
    press(lab, "#count-button", n=100)
    lab.wait_for_function("() => document.getElementById('n-error').textContent === ''")
    assert not [e for e in lab.console_errors if "favicon" not in e]


def _same(a, b) -> bool:
    """Equal structure and values; numbers equal to 1 part in 10⁹ or within
    1e-14 (a few ulp of an output of size 1: the float64 oracle's last bits);
    JSON may bring 0.0 back as 0."""
    number = (int, float)
    if isinstance(a, number) and isinstance(b, number) and not isinstance(a, bool) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-14)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_shared_case_in_pyodide_equals_cpython(lab, case):
    reply = lab.evaluate(
        "([op, params]) => window.cannery.lab.client.request(op, params)",
        [case["request"]["op"], case["request"]["params"]])
    for path, expected in case["expect"].items():
        assert dig(reply, path) == expected, (path, reply)
    # Same answer in Python 3.14 (Pyodide) as in CPython 3.11: every verdict,
    # count and row number equal; a float64 figure may differ in its last bits,
    # since Pyodide sums with math.sumprod (exact products) and 3.11 with
    # fsum of rounded products (emulator/attention.py).
    here = json.loads(api.handle_json(json.dumps(case["request"])))
    for r in (reply, here):
        if r.get("result"):
            r["result"].pop("seconds", None)
    assert _same(reply, here), (reply, here)


def test_choosing_the_models_sentence_sets_n_and_d(lab):
    lab.check("#input-model")
    assert lab.input_value("#n") == lab.get_attribute("#input-model", "data-n")
    assert lab.input_value("#d") == lab.get_attribute("#input-model", "data-d") == "32"
    lab.select_option("#head", "3")
    lab.select_option("#kernel", "fused-no-rescale")
    lab.click("#check-button")
    wait_idle(lab)
    assert lab.inner_text("#check-verdict") == "Failed"
    assert "head 3" in lab.inner_text("#check-body")
    assert "input=model" in lab.url and "head=3" in lab.url
    lab.check("#input-random")


def test_results_say_when_the_form_has_moved_on(lab):
    press(lab, "#count-button", n=300, d=16, kernel="fused")
    wait_idle(lab)
    note = lab.locator("#count-result .stale-note")
    assert note.is_hidden()
    lab.fill("#n", "301")
    lab.dispatch_event("#n", "input")
    assert note.is_visible() and "earlier settings" in note.inner_text()
    assert "stale" in lab.get_attribute("#count-result", "class")
    lab.fill("#n", "300")
    lab.dispatch_event("#n", "input")
    assert note.is_hidden()


def test_a_shared_link_opens_with_every_setting(browser, server_url):
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(server_url + "#kernel=plain&n=777&d=64&causal=1&M=32768&seed=9")
    assert page.input_value("#kernel") == "plain"
    assert page.input_value("#n") == "777" and page.input_value("#d") == "64"
    assert page.is_checked("#causal") and page.input_value("#workgroup_bytes") == "32768"
    assert page.input_value("#seed") == "9"
    assert "from your link" in page.inner_text("#lab-status")
    ctx.close()


@pytest.mark.gpu
def test_time_checks_every_kernel_on_the_gpu_before_timing(lab, artifacts):
    lab.check("#input-random")
    press(lab, "#time-button", n=100, d=16, kernel="fused")
    lab.wait_for_function("() => !document.getElementById('time-result').hidden && "
                          "document.getElementById('lab-form').getAttribute('aria-busy') !== 'true'",
                          timeout=240_000)
    body = lab.inner_text("#time-body")
    assert "Checked first (N = 100)" in body
    assert lab.locator("#time-check-warning").count() == 0
    # Each distinct run is one row, timed once (planner/__init__.py same_runs): the lesson's two,
    # then the timed kernels the plan keeps on this adapter (the manifest's "timed", where its
    # workgroup memory fits) less those that repeat another's run, each of which says so in a line.
    plan = time_plan(lab, n=100, d=16)
    rows = ["plain", "fused"] + [k for k in plan["optional"] if k not in plan["same_run"]]
    assert timed_rows(lab) == rows
    for kernel in rows:  # every shader that ran, tuned ones included, passed the float64 check first
        assert lab.inner_text(f"#time-{kernel}-check").startswith("passed"), kernel
    notes = build.lab_content("en")["tuned"]
    for kernel in rows[2:]:  # a tuned row's note is its sentence in site/content/lab.toml [tuned]
        assert notes[kernel] in lab.inner_text(f"#time-{kernel}-note"), kernel
    for kernel, same in plan["same_run"].items():
        assert lab.locator(f"#time-{kernel}-ms").count() == 0
        assert lab.inner_text(f"#time-{kernel}-same").startswith(
            f"{kernel} at d = 16 is the lesson kernel {same}" if same in ("plain", "fused")
            else f"{kernel} at d = 16 runs the same shader at the same tiles and constants as {same}")
    # the seed's tuned pair, pinned as its figures: at d = 16 both run fused.wgsl at fused's
    # 128 x 64 tiles with the same constants
    assert plan["same_run"].get("fused-fast") == plan["same_run"].get("fused-fast-16k") == "fused"
    assert_spreads_and_winner(lab, rows)
    lab.locator("#time-result").screenshot(path=str(artifacts / "lab-time.png"))


# Every request the page sends its Python worker, by op, from here on (the lab's one client).
COUNT_REQUESTS = """() => {
  const c = window.cannery.lab.client;
  if (!c.sentOps) {
    const send = c.send.bind(c);
    c.sentOps = [];
    c.send = (request, options) => { c.sentOps.push(request.op); return send(request, options); };
  }
  c.sentOps.length = 0;
}"""


def requests_sent(page) -> list:
    """The ops sent to the worker since COUNT_REQUESTS last ran, in order."""
    return page.evaluate("() => window.cannery.lab.client.sentOps.slice()")


@pytest.mark.gpu
def test_one_time_press_asks_python_twice_and_a_refused_size_once(lab):
    """Time asks the worker once before the GPU runs (lab_api "time": the count, the plans
    at N and at the check's N, the check's inputs, the probes' plan) and once after
    ("time_checks": every kernel's O). Two is the fewest: the float64 check needs the
    GPU's O, which exists only once the plan has come back."""
    lab.evaluate(COUNT_REQUESTS)
    press(lab, "#time-button", n=64, d=16, kernel="fused")
    wait_time_done(lab)
    assert lab.inner_text("#lab-alert") == ""
    assert requests_sent(lab) == ["time", "time_checks"]
    assert lab.inner_text("#time-fused-check").startswith("passed")
    shown = {card: lab.inner_text(card) for card in ("#time-body", "#count-body")}
    lab.evaluate(COUNT_REQUESTS)
    press(lab, "#time-button", n=20000, d=16)   # S (1.6 GB) is past SwiftShader's 1 GiB buffers
    wait_idle(lab)
    assert requests_sent(lab) == ["time"]
    assert "1,600,000,000 B" in lab.inner_text("#n-error")
    assert {card: lab.inner_text(card) for card in shown} == shown   # nothing already shown is lost
    press(lab, "#count-button", n=1024)
    wait_idle(lab)


@pytest.mark.gpu
def test_time_with_more_workgroup_memory_after_a_smaller_run_gets_a_new_device(lab):
    # M = 16,384 B fits WebGPU's default limit; M = 32,768 B makes the lesson kernels
    # declare 32 KB, so Time must ask a fresh adapter for a new device (an adapter gives
    # out one device only). Then d = 64, where the tuned kernels may run another shader.
    for d, m in (("16", "16384"), ("16", "32768"), ("64", "16384")):
        lab.fill("#workgroup_bytes", m)
        press(lab, "#time-button", n=100, d=d, kernel="fused")
        lab.wait_for_function("() => document.getElementById('lab-form').getAttribute('aria-busy') !== 'true'",
                              timeout=240_000)
        assert lab.inner_text("#lab-alert") == "", lab.inner_text("#lab-alert")
        assert f"d = {d}" in lab.inner_text("#time-body")
        assert lab.inner_text("#time-fused-check").startswith("passed")
        shader = lab.inner_text("#time-fused-shader")  # d = 64: the lanes shader where subgroups allow
        assert shader == "fused.wgsl" if d == "16" else shader in ("fused.wgsl", "fused_lanes.wgsl")
        # Time redraws Count for the same settings, so neither card says it is out of date
        assert lab.evaluate("() => document.querySelectorAll('#count-result.stale, #time-result.stale').length") == 0
        if m == "32768":
            assert "B_r = 256, B_c = 128" in lab.inner_text("#time-body")
    lab.fill("#workgroup_bytes", "16384")


@pytest.mark.gpu
def test_time_says_which_tuned_kernel_it_left_out_and_why(browser, server_url):
    """On an adapter that offers only WebGPU's default 16,384 B of workgroup memory (SwiftShader,
    with that one limit reported lower: many phones' GPUs offer no more), Time at d = 128 runs the
    lesson's kernels and the timed kernels that fit, and names each one it leaves out with what
    it needs and what the GPU offers; the plan Python makes there is the one the page ran."""
    from test_browser_hardening import _FAKE_LIMITS
    offer = MANIFEST["webgpu_default_limits"]["maxComputeWorkgroupStorageSize"]
    ctx = browser.new_context(viewport={"width": 1200, "height": 900})
    ctx.add_init_script(script=_FAKE_LIMITS % json.dumps({"maxComputeWorkgroupStorageSize": offer}))
    page = ctx.new_page()
    try:
        page.goto(server_url + "#kernel=fused&n=40&d=128&causal=0&M=16384&seed=1")
        page.locator("#time-button").click()
        expect(page.locator("#time-result")).to_be_visible(timeout=240_000)
        expect(page.locator("#lab-form")).not_to_have_attribute("aria-busy", "true", timeout=240_000)
        expect(page.locator("#lab-alert")).to_have_text("")
        plan = time_plan(page, n=40, d=128)
        left = {k["kernel"]: k["need"] for k in plan["left_out"]}
        # the seed's figure, pinned: fused-fast asks its manifest figure at d = 128, twice the default
        assert left["fused-fast"] == MANIFEST["kernels"]["fused-fast"]["workgroup_bytes"]["128"] > offer
        assert all(k["offer"] == offer for k in plan["left_out"])
        note = page.locator("#time-left-out")
        for kernel, need in left.items():
            expect(note).to_contain_text(f"{kernel} needs {need:,} B of workgroup memory at d = 128")
        expect(note).to_contain_text(f"this GPU offers {offer:,} B")
        rows = ["plain", "fused"] + [k for k in plan["optional"] if k not in plan["same_run"]]
        assert timed_rows(page) == rows and not set(rows) & set(left)
        assert page.evaluate("window.__asked")[-1] == plan["required_limits"] == {}  # nothing past the default
        # at d = 128 and M = 16,384 B fused-fast-16k's tiles are the lesson's: one row, one line
        expect(page.locator("#time-fused-fast-16k-ms")).to_have_count(0)
        expect(page.locator("#time-fused-fast-16k-same")).to_contain_text("is the lesson kernel fused")
    finally:
        ctx.close()


def test_results_fit_a_phone_screen(browser, server_url):
    """Count and Time once on a 390 px phone, then the same results on a 320 px one."""
    ctx = browser.new_context(viewport={"width": 390, "height": 800}, is_mobile=True)
    page = ctx.new_page()
    page.goto(server_url + "#lab")
    press(page, "#count-button", n=100, d=16)
    page.wait_for_selector("#count-total", timeout=120_000)
    wait_idle(page)
    press(page, "#time-button")
    page.wait_for_function("() => !document.getElementById('time-result').hidden", timeout=240_000)
    wait_idle(page)
    for width in (390, 320):
        page.set_viewport_size({"width": width, "height": 800})
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width
        # the Count chart's words, as drawn on the phone's screen, stay readable
        sizes = page.evaluate("""() => [...document.querySelectorAll('#count-chart svg text')].map((t) => {
          const svg = t.ownerSVGElement;
          const k = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
          return [t.textContent, parseFloat(getComputedStyle(t).fontSize) * k];
        })""")
        assert len(sizes) >= 4
        small = [(t, round(px, 1)) for t, px in sizes if px < (12 if width >= 390 else 9.5)]
        assert small == [], (width, small)
    ctx.close()


@pytest.mark.parametrize("word,causal", [("true", True), ("yes", True), ("ON", True), ("1", True),
                                         ("false", False), ("0", False), ("off", False)])
def test_a_link_reads_causal_with_the_emulators_words(browser, server_url, word, causal):
    """The one vocabulary (manifest lesson.boolean_words) that emulator/tiling.py reads too."""
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(server_url + f"#kernel=fused&n=300&d=16&causal={word}")
    assert page.is_checked("#causal") is causal
    assert page.inner_text("#causal-error") == ""
    ctx.close()


def test_a_link_with_a_causal_value_it_cannot_read_says_so_next_to_the_box(browser, server_url):
    from emulator.tiling import InputError, parse_request
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(server_url + "#kernel=fused&n=300&d=16&causal=maybe")
    with pytest.raises(InputError) as err:
        parse_request({"n": "300", "d": "16", "causal": "maybe"})
    message = page.inner_text("#causal-error")
    assert message.endswith(err.value.message) and "causal=maybe" in message
    assert page.get_attribute("#causal", "aria-invalid") == "true"
    assert "causal-error" in page.get_attribute("#causal", "aria-describedby").split()
    assert not page.is_checked("#causal")
    assert message in page.inner_text("#lab-status")
    ctx.close()


def sci(x: float) -> str:
    """x as the page writes it (JavaScript's toExponential(2): "5.38e-7")."""
    return re.sub(r"e([+-])0*(\d)", r"e\1\2", f"{x:.2e}")


def _times(x: float) -> str:
    """A ratio as the Check card's sentences write it (check.js timesText): two significant figures, grouped."""
    return f"{round(float(f'{x:.1e}')):,}" if x >= 10 else f"{x:.1f}"


PROBE_JS = """async () => {
  const g = await import('./static/js/gpu/index.js');
  const p = await g.probeGpu();
  return {limits: p.limits, subgroupMin: g.subgroupMinOf(p)};
}"""


def time_plan(page, n, d, m=16384, causal=False) -> dict:
    """The forward Time's plan on this page's adapter (lab_api "time": the lesson's kernels and
    the timed ones that fit its workgroup memory, the build without counters), made here in
    CPython from the adapter's limits and smallest subgroup, as the page's worker makes it."""
    import planner
    from emulator.tiling import parse_request
    probe = page.evaluate(PROBE_JS)
    p = parse_request({"kernel": "fused", "n": str(n), "d": str(d), "workgroup_bytes": str(m), "causal": causal})
    return planner.gpu_plan(p, probe["limits"], None, probe["subgroupMin"], instrumented=False, optional="timed")


def timed_rows(page) -> list:
    """The kernels of the time table's rows, in order."""
    return [t.split("\n")[0].strip() for t in page.locator("#time-table tbody th").all_inner_texts()]


def spread_of(page, kernel) -> tuple:
    """A row's spread as the page writes it ("1.20–1.31 ms"), as two floats."""
    low, high = page.inner_text(f"#time-{kernel}-spread").replace(" ms", "").split("–")
    return float(low.replace(",", "")), float(high.replace(",", ""))


def assert_spreads_and_winner(page, kernels):
    """Every timed row shows its samples' spread around its median, and the status names a
    fastest kernel only when its range clears every other's (else: within the noise)."""
    spreads = {k: spread_of(page, k) for k in kernels}
    for k, (low, high) in spreads.items():
        median = float(page.inner_text(f"#time-{k}-ms").split()[0])
        assert 0 < low <= median <= high, (k, low, median, high)
    # Ranges that touch at the shown precision could fall either way: the words are not read then.
    if any(spreads[a][1] == spreads[b][0] for a in kernels for b in kernels if a != b):
        return
    best = min(kernels, key=lambda k: float(page.inner_text(f"#time-{k}-ms").split()[0]))
    clear = all(spreads[best][1] < spreads[k][0] for k in kernels if k != best)
    said = page.inner_text("#lab-status")
    if clear:
        assert f"Fastest: {best};" in said, said
    else:
        assert "Fastest:" not in said and "within the noise" in said, said
    fused_plain_apart = spreads["fused"][1] < spreads["plain"][0] or spreads["plain"][1] < spreads["fused"][0]
    assert ("a difference within the noise" in said) is not fused_plain_apart, said


def wait_time_done(page):
    page.wait_for_function("() => !document.getElementById('time-result').hidden && "
                           "document.getElementById('lab-form').getAttribute('aria-busy') !== 'true'",
                           timeout=240_000)


@pytest.mark.gpu
def test_time_names_a_software_adapter_and_sets_speed_beside_the_counted_ratio(lab, artifacts):
    """SwiftShader (these tests' adapter) runs on the CPU: the card says so. Each kernel's row
    gives bytes counted, time, GB/s, GFLOP/s and FLOP per byte, from the emulator's count."""
    from emulator.traffic import count
    lab.fill("#workgroup_bytes", "16384")
    press(lab, "#time-button", n=256, d=16, kernel="fused")
    wait_time_done(lab)
    software = lab.inner_text("#time-software")
    assert "SwiftShader" in software and "CPU" in software and "say nothing about a GPU's memory" in software
    assert "SwiftShader" in lab.inner_text("#lab-status")
    plain, fused = count("plain", 256, 16, False, 16384), count("fused", 256, 16, False, 16384)
    rows = lab.locator("#time-table tbody tr")
    shown = timed_rows(lab)
    # d = 16: the lesson's two first; a tuned kernel has a row only where its run differs from
    # fused's (planner.same_runs: fused-fast and fused-fast-16k run fused's shader and tiles here)
    assert shown[:2] == ["plain", "fused"] and "fused-fast" not in shown and "fused-fast-16k" not in shown
    from emulator.tiling import MANIFEST
    assert all(MANIFEST["kernels"][k].get("timed") and not MANIFEST["kernels"][k].get("lesson") for k in shown[2:])
    assert_spreads_and_winner(lab, shown)
    assert f"{plain.total_bytes:,}" in rows.nth(0).inner_text()
    assert f"{fused.total_bytes:,}" in rows.nth(1).inner_text()
    ms = float(lab.inner_text("#time-fused-ms").split()[0])
    gbps = lab.inner_text("#time-fused-gbps")
    expect = fused.total_bytes / (ms / 1e3) / 1e9
    assert abs(float(gbps) - expect) <= 0.06 * expect + 0.01
    flop = 4 * 256 * 256 * 16
    intensity = flop / fused.total_bytes
    assert float(lab.inner_text("#time-fused-intensity")) == pytest.approx(intensity, rel=0.06)
    fewer = plain.total_bytes / fused.total_bytes
    assert lab.inner_text("#time-fewer") == (f"{fewer:.1f}×" if fewer >= 10 else f"{fewer:.2f}×")
    why = lab.inner_text("#time-why")
    for words in ("Memory against arithmetic", "Invocations per workgroup", "Untuned code"):
        assert words in why
    assert "4·N²·d" in lab.inner_text("#time-body")
    # the chart: counted ratio and measured speed-up for every kernel but plain
    labels = lab.locator("#time-chart svg > text").all_text_contents()
    assert "fused" in labels and "1× = plain" in labels
    # a tuned kernel that is the lesson kernel at this d says so in one line, and has no row or note
    assert lab.locator("#time-fused-fast-16k-note").count() == 0
    assert "same shader, same tiles" in lab.inner_text("#time-fused-fast-16k-same")
    assert "fused-fast-16k" not in lab.inner_text("#count-body")


@pytest.mark.gpu
def test_the_time_table_fits_its_card(browser, server_url, artifacts):
    """One Time run, its card read at 1280 px and again at 390 px (a window narrowed)."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    page.goto(server_url + "#kernel=fused&n=128&d=64&causal=0&M=16384&seed=1")
    page.click("#time-button")
    wait_time_done(page)
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        fits = page.evaluate("""() => {
            const card = document.getElementById('time-result');
            const table = document.getElementById('time-table');
            const scroller = table.parentElement;
            return {table: table.getBoundingClientRect().width, scroller: scroller.clientWidth,
                    scroll: scroller.scrollWidth, card: card.clientWidth, page: document.documentElement.scrollWidth};
        }""")
        assert fits["scroll"] <= fits["scroller"] + 1, (width, fits)
        assert fits["table"] <= fits["card"], (width, fits)
        assert fits["page"] <= width, (width, fits)
        # the Count chart drawn at 1280 px is drawn again for the phone: its words stay 12 px tall
        sizes = page.evaluate("""() => [...document.querySelectorAll('#count-chart svg text')].map((t) => {
          const svg = t.ownerSVGElement;
          const k = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
          return parseFloat(getComputedStyle(t).fontSize) * k;
        })""")
        assert len(sizes) >= 4 and (width > 640 or min(sizes) >= 12), (width, sizes)
        page.locator("#time-result").screenshot(path=str(artifacts / f"lab-time-{width}.png"))
        page.locator("#count-result").screenshot(path=str(artifacts / f"lab-count-{width}.png"))
    ctx.close()


@pytest.mark.gpu
def test_time_shows_progress_and_can_be_cancelled(browser, server_url):
    ctx = browser.new_context(viewport={"width": 1200, "height": 900})
    page = ctx.new_page()
    page.goto(server_url + "#kernel=fused&n=2048&d=16&causal=0&M=16384&seed=1")
    page.click("#time-button")
    cancel = page.locator("#cancel-button")
    cancel.wait_for(state="visible", timeout=60_000)
    page.wait_for_function("() => / of \\d+ \\(/.test(document.getElementById('lab-status').textContent)",
                           timeout=120_000)
    status = page.inner_text("#lab-status")
    assert "kernel 1 of" in status or "kernel 2 of" in status or "kernel 3 of" in status, status
    cancel.focus()
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.getElementById('lab-form').getAttribute('aria-busy') !== 'true'",
                           timeout=120_000)
    assert page.inner_text("#lab-status") == "Time cancelled. Earlier results are kept."
    assert page.is_hidden("#time-result")
    assert page.is_hidden("#cancel-button")
    assert page.evaluate("document.activeElement.id") == "time-button"
    assert page.inner_text("#lab-alert") == ""
    ctx.close()


@pytest.mark.parametrize("n,d", [(256, 64)])
def test_check_labels_flashattentions_rule_and_shows_both_parts(lab, artifacts, n, d):
    from emulator import accuracy
    lab.check("#input-random")
    lab.fill("#seed", "1")
    lab.fill("#workgroup_bytes", "16384")
    press(lab, "#check-button", n=n, d=d, kernel="fused")
    wait_idle(lab)
    rep = accuracy.check("fused", n, d, False, 1)
    assert lab.inner_text("#check-fa-limit").split()[0] == sci(rep["fa_rule_limit"])
    assert lab.inner_text("#check-fa-twice-plain") == sci(rep["fa_rule_twice_plain"])
    assert lab.inner_text("#check-fa-margin") == sci(rep["fa_rule_margin"])
    assert rep["fa_rule_twice_plain"] + rep["fa_rule_margin"] == pytest.approx(rep["fa_rule_limit"])
    body = lab.inner_text("#check-body")
    assert "2 × the plain kernel's largest error + a margin of 8u·max|V|" in body
    note = lab.inner_text("#check-fa-note")
    share = round(100 * rep["fa_rule_margin"] / rep["fa_rule_limit"])
    assert "compares this kernel with the plain kernel on the same inputs" in note
    tighter = rep["bound"] / rep["fa_rule_limit"]  # the rule's limit against the first-order bound
    assert tighter > 1 and f"limit is {_times(tighter)} times under the bound, so the rule is the tighter test" in note
    assert (f"the margin is {share}% of the limit" in note) == (share > 50)
    # the first line says it plainly, with its figures grouped
    headline = lab.inner_text("#check-headline")
    assert headline == (f"Passed: largest error {sci(rep['max_abs_error'])}, "
                        f"{_times(rep['bound'] / rep['max_abs_error'])} times under the bound.")
    # each term is explained where it appears
    assert "First-order: terms in u², a product of two roundings, are left out." in body
    assert "8u·max|V| is eight roundings of that entry" in body
    assert "An ulp, a unit in the last place, is the gap between two neighbouring float32 numbers" in body
    # each error also in float32 ulps and relative to the output's range
    shown = lab.inner_text("#check-bound")
    ulps = re.search(r"([0-9.,]+) float32 ulps; ([0-9.e+-]+) of the output's range", shown)
    assert ulps, shown
    assert ulps[1] == f"{round(rep['bound'] / rep['output_ulp']):,}"  # grouped: 136,405, not 136405
    shown = lab.inner_text("#check-error")
    ulps = re.search(r"([0-9.,]+) float32 ulps; ([0-9.e+-]+) of the output's range", shown)
    assert ulps, shown
    assert float(ulps[1].replace(",", "")) == pytest.approx(rep["max_abs_error"] / rep["output_ulp"], rel=0.05)
    assert float(ulps[2]) == pytest.approx(rep["max_abs_error"] / rep["output_range"], rel=0.01)
    lab.locator("#check-result").screenshot(path=str(artifacts / "lab-check.png"))


def test_a_new_hash_resets_what_it_leaves_out_and_an_unknown_kernel_says_so(lab):
    """Editing only the address bar's hash on an open lab."""
    lab.evaluate("location.hash = '#kernel=plain&n=777&d=64&causal=1&seed=9'")
    expect(lab.locator("#causal")).to_be_checked()
    expect(lab.locator("#kernel")).to_have_value("plain")
    lab.evaluate("location.hash = '#kernel=flashy&n=300&d=16'")
    expect(lab.locator("#kernel-error")).to_have_text(
        "Your link's kernel=flashy is not a kernel of this lab; it shows “Fused, online softmax” instead.")
    expect(lab.locator("#kernel")).to_have_value("fused")
    expect(lab.locator("#causal")).not_to_be_checked()
    expect(lab.locator("#seed")).to_have_value("1")
    expect(lab.locator("#n")).to_have_value("300")
    lab.evaluate("location.hash = '#kernel=fused&n=300&d=16'")
    expect(lab.locator("#kernel-error")).to_have_text("")
