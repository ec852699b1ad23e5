"""The lab's Direction: Count, Check and Time of the backward kernels in the page (Chromium).

Count and Check go through the Pyodide worker and must equal CPython's
lab_api.handle for the same request; Time runs the WGSL backward kernels on
SwiftShader and checks their dQ, dK, dV against float64 first.
"""
from __future__ import annotations

import pytest
from closed_forms import backward as closed_form
from conftest import open_lab
from playwright.sync_api import expect
from test_browser_lab import COUNT_REQUESTS, requests_sent

import lab_api as api
from emulator.backward import CHECK_MAX_N
from emulator.tiling import LESSON_KERNELS, MANIFEST

pytestmark = pytest.mark.browser

BACKWARD = [name for name, k in MANIFEST["kernels"].items() if k.get("direction") == "backward"]


@pytest.fixture(scope="module")
def lab(browser, server_url):
    ctx, page = open_lab(browser, server_url + "#lab", width=1280)
    yield page
    ctx.close()


def idle(page, timeout=240_000):
    expect(page.locator("#lab-form")).not_to_have_attribute("aria-busy", "true", timeout=timeout)


def settings(page, *, n, d, kernel, causal=False, m=16384, seed=0):
    page.check("#dir-backward")
    page.select_option("#kernel", kernel)
    page.fill("#n", str(n))
    page.fill("#d", str(d))
    page.fill("#workgroup_bytes", str(m))
    page.fill("#seed", str(seed))
    page.set_checked("#causal", causal)
    page.check("#input-random")


def test_backward_offers_the_manifests_backward_kernels_and_forward_gives_them_back(lab):
    lab.check("#dir-backward")
    assert lab.eval_on_selector_all("#kernel option", "os => os.map(o => o.value)") == BACKWARD
    lab.check("#dir-forward")
    assert lab.eval_on_selector_all("#kernel option", "os => os.map(o => o.value)") == list(LESSON_KERNELS)
    # keyboard: arrow keys move within the radio group
    lab.focus("#dir-forward")
    lab.keyboard.press("ArrowRight")
    assert lab.is_checked("#dir-backward")
    assert lab.input_value("#kernel") == "fused-backward"


@pytest.mark.parametrize("kernel,n,d,causal", [("fused-backward", 4096, 64, False),
                                               ("plain-backward", 777, 16, True),
                                               ("fused-backward", 300, 128, True)])
def test_count_backward_equals_cpython_and_shows_the_ratio(lab, kernel, n, d, causal):
    settings(lab, n=n, d=d, kernel=kernel, causal=causal)
    lab.click("#count-button")
    idle(lab)
    want = api.handle({"op": "count", "params": {"direction": "backward", "kernel": kernel, "n": str(n),
                                                 "d": str(d), "causal": causal, "workgroup_bytes": "16384"}})
    assert want["ok"], want
    r = want["result"]
    expect(lab.locator("#count-total")).to_have_text(f"{r['selected']['total_bytes']:,} bytes")
    assert lab.inner_text("#count-bwd-ratio") == f"{r['backward_to_forward_ratio']:.2f}"
    assert lab.inner_text("#count-forward") == f"{r['forward']['total_bytes']:,}"
    assert lab.inner_text("#count-plain") == f"{r['plain']['total_bytes']:,}"
    assert lab.inner_text("#count-fused") == f"{r['fused']['total_bytes']:,}"
    # bytes per tensor, exactly
    table = lab.eval_on_selector_all(
        "#count-body table tbody tr",
        "rows => rows.map(r => [...r.cells].map(c => c.textContent.trim()))")
    sel = r["selected"]
    want_rows = [[t, f"{sel['reads'][t]:,}", f"{sel['writes'][t]:,}"] for t in MANIFEST["tensors"]["order"]
                 if sel["reads"][t] or sel["writes"][t]]
    assert table == want_rows
    if kernel == "plain-backward":
        assert {"S", "P", "dP", "dS"} <= {row[0] for row in table}
    assert "dir=backward" in lab.url and f"kernel={kernel}" in lab.url


def test_count_backward_card_shows_the_reference_figures(lab, artifacts):
    """The card at N = 4,096, d = 64, M = 16,384 B (B_r = 32, B_c = 16) against figures worked
    out apart from the emulator's walk: the hand sum of tests/test_backward.py (823,181,312 B),
    the forward's reference figure (270,532,608 B) and the closed forms of tests/closed_forms.py."""
    settings(lab, n=4096, d=64, kernel="fused-backward")
    lab.click("#count-button")
    idle(lab)
    fused, plain = closed_form("fused", 4096, 64), closed_form("plain", 4096, 64)
    assert fused["total_bytes"] == 823_181_312
    expect(lab.locator("#count-total")).to_have_text("823,181,312 bytes")
    assert lab.inner_text("#count-forward") == "270,532,608"
    assert lab.inner_text("#count-bwd-ratio") == "3.04"  # 823,181,312 / 270,532,608 = 3.043
    assert lab.inner_text("#count-fused") == "823,181,312"
    assert lab.inner_text("#count-plain") == f"{plain['total_bytes']:,}" == "1,618,001,920"
    assert lab.inner_text("#count-ratio") == "2.0"  # 1,618,001,920 / 823,181,312 = 1.97
    body = lab.inner_text("#count-body")
    assert "B_r = 32 query rows and B_c = 16 key rows (128 query tiles, 256 key tiles)" in body
    for p in fused["passes"]:  # preprocess, dkv, dq
        assert f"{p['name']}: {sum(p['reads'].values()) + sum(p['writes'].values()):,} bytes" in body
    table = lab.eval_on_selector_all(
        "#count-body table tbody tr",
        "rows => rows.map(r => [...r.cells].map(c => c.textContent.trim()))")
    assert table == [[t, f"{fused['reads'][t]:,}", f"{fused['writes'][t]:,}"] for t in MANIFEST["tensors"]["order"]
                     if fused["reads"][t] or fused["writes"][t]]
    assert [row[0] for row in table] == ["Q", "K", "V", "O", "dO", "L", "D", "dQ", "dK", "dV"]  # no N×N table
    chart = lab.get_attribute("#count-chart svg", "aria-label")
    assert chart == ("Bytes moved at N = 4,096, d = 64: forward 258.0 MiB, plain backward 1.51 GiB, "
                     "fused backward 785.0 MiB")  # 270,532,608 / 2²⁰; 1,618,001,920 / 2³⁰; 823,181,312 / 2²⁰
    lab.locator("#count-result").screenshot(path=str(artifacts / "lab-backward-count-1280.png"))


@pytest.mark.parametrize("kernel,passed,failing", [("fused-backward", True, []),
                                                   ("plain-backward", True, []),
                                                   ("fused-backward-no-D", False, ["dQ", "dK"])])
def test_check_backward(lab, artifacts, kernel, passed, failing):
    settings(lab, n=100, d=16, kernel=kernel, causal=True, seed=3)
    lab.click("#check-button")
    idle(lab)
    want = api.handle({"op": "check", "params": {"direction": "backward", "kernel": kernel, "n": "100",
                                                 "d": "16", "causal": True, "seed": "3",
                                                 "workgroup_bytes": "16384"}})["result"]
    assert want["passed"] is passed
    expect(lab.locator("#check-verdict")).to_have_text("Passed" if passed else "Failed")
    for t in ("dQ", "dK", "dV"):
        shown = float(lab.inner_text(f"#check-{t}-error"))
        assert shown == pytest.approx(want["tensors"][t]["max_abs_error"], rel=6e-3)
    out_of_bounds = [t for t in ("dQ", "dK", "dV") if not want["tensors"][t]["passed"]]
    assert out_of_bounds == failing
    if failing:
        assert lab.inner_text("#check-failed") == "Out of bounds: " + ", ".join(failing) + "."
    assert float(lab.inner_text("#check-identity")) == pytest.approx(want["identity_residual"], rel=6e-3, abs=1e-300)
    if kernel == "fused-backward":
        lab.locator("#check-result").screenshot(path=str(artifacts / "lab-backward-check-1280.png"))


def test_check_backward_says_its_own_n_limit_and_keeps_the_result(lab):
    before = lab.inner_text("#check-body")
    settings(lab, n=CHECK_MAX_N + 1, d=16, kernel="fused-backward")
    lab.click("#check-button")
    expect(lab.locator("#n-error")).to_contain_text(f"N = {CHECK_MAX_N:,}")
    assert lab.inner_text("#check-body") == before
    expect(lab.locator("#n-offer-use")).to_have_text(f"Use N = {CHECK_MAX_N}")


def test_switching_to_backward_past_the_checks_limit_offers_the_largest_n_it_takes(lab):
    """The offer is emulator.backward.CHECK_MAX_N (the build's table), one press away."""
    lab.check("#dir-forward")
    lab.fill("#n", "1,000")
    lab.check("#dir-backward")
    offer = lab.locator("#n-offer")
    expect(offer).to_be_visible()
    assert f"N up to {CHECK_MAX_N:,}" in offer.inner_text() and "N = 1,000" in offer.inner_text()
    lab.click("#n-offer-use")
    assert lab.input_value("#n") == str(CHECK_MAX_N)
    expect(offer).to_be_hidden()
    assert lab.evaluate("document.activeElement.id") == "n"
    lab.check("#dir-forward")
    lab.fill("#n", str(CHECK_MAX_N + 1))
    expect(offer).to_be_hidden()  # forward Check takes it
    lab.check("#dir-backward")
    expect(offer).to_be_visible()
    lab.fill("#n", str(CHECK_MAX_N))
    expect(offer).to_be_hidden()


def test_check_backward_can_be_cancelled(lab):
    before = lab.inner_text("#check-body")
    settings(lab, n=CHECK_MAX_N, d=128, kernel="plain-backward", causal=False)
    lab.click("#check-button")
    expect(lab.locator("#cancel-button")).to_be_visible()
    lab.click("#cancel-button")
    idle(lab, 10_000)
    expect(lab.locator("#lab-status")).to_contain_text("Check cancelled")
    assert lab.inner_text("#check-body") == before
    # a fresh worker answers the next request
    settings(lab, n=40, d=16, kernel="fused-backward")
    lab.click("#check-button")
    idle(lab)
    expect(lab.locator("#check-verdict")).to_have_text("Passed")


def test_direction_round_trips_through_the_link(browser, server_url):
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(server_url + "#dir=backward&kernel=plain-backward&n=300&d=16&causal=1&M=16384&seed=2")
    assert page.is_checked("#dir-backward")
    assert page.input_value("#kernel") == "plain-backward"
    page.click("#count-button")
    idle(page)
    assert "dir=backward" in page.url and "kernel=plain-backward" in page.url
    page.goto(server_url + "#dir=forward&kernel=fused&n=300&d=16")
    page.reload()
    assert page.is_checked("#dir-forward") and page.input_value("#kernel") == "fused"
    ctx.close()


def test_a_link_with_a_bad_direction_says_so_next_to_the_control(browser, server_url):
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(server_url + "#dir=sideways&kernel=fused&n=300&d=16")
    message = page.inner_text("#direction-error")
    assert "dir=sideways" in message and "forward or backward" in message
    assert page.is_checked("#dir-forward") and page.input_value("#kernel") == "fused"
    assert message in page.inner_text("#lab-status")
    assert "direction-error" in page.get_attribute("#dir-forward", "aria-describedby").split()
    ctx.close()


@pytest.mark.parametrize("width", [390])
def test_backward_cards_fit_a_phone(browser, server_url, artifacts, width):
    ctx = browser.new_context(viewport={"width": width, "height": 800}, is_mobile=True)
    page = ctx.new_page()
    page.goto(server_url + "#dir=backward&kernel=plain-backward&n=100&d=16&causal=1")
    page.click("#count-button")
    idle(page)
    page.click("#check-button")
    idle(page)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    page.locator("#count-result").screenshot(path=str(artifacts / f"lab-backward-count-{width}.png"))
    page.locator("#check-result").screenshot(path=str(artifacts / f"lab-backward-check-{width}.png"))
    ctx.close()


# ---- Time: the WGSL backward kernels on SwiftShader ------------------------------

def gpu_plan(page, kernel, n, d, causal, instrumented=False):
    """planner's plan of one backward run on this page's adapter, as the lab's worker makes it."""
    import planner as plan
    probe = page.evaluate("""async () => {
        const g = await import('./static/js/gpu/index.js');
        const p = await g.probeGpu();
        return {limits: p.limits, subgroupMin: g.subgroupMinOf(p)};
    }""")
    return plan.gpu_plan({"n": n, "d": d, "causal": causal, "workgroup_bytes": 16384}, probe["limits"], [kernel],
                         probe["subgroupMin"], instrumented=instrumented)


RUN_BACKWARD_JS = """
async (job) => {
  const g = await import('./static/js/gpu/index.js');
  try {
    const r = await g.runBackward(job);
    return {ok: true, dQ: Array.from(r.dQ), dK: Array.from(r.dK), dV: Array.from(r.dV),
            counts: r.counts || null, shaders: r.shaders};
  } catch (e) {
    return {ok: false, kind: e.kind || e.name, message: e.message};
  }
}
"""


@pytest.mark.gpu
@pytest.mark.parametrize("kernel,n,d,causal", [("fused-backward", 100, 16, False),
                                               ("fused-backward", 65, 64, True),
                                               ("plain-backward", 77, 32, True),
                                               ("plain-backward", 64, 16, False)])
def test_instrumented_backward_counts_equal_the_emulator_and_gradients_pass_float64(lab, kernel, n, d, causal):
    from emulator.traffic import count
    params = {"direction": "backward", "kernel": kernel, "n": str(n), "d": str(d), "causal": causal,
              "seed": "5", "workgroup_bytes": "16384"}
    data = api.handle({"op": "backward_inputs", "params": params})["result"]
    offered = lab.evaluate("async () => (await navigator.gpu.requestAdapter()).limits.maxStorageBuffersPerShaderStage")
    try:
        plan = gpu_plan(lab, kernel, n, d, causal, instrumented=True)
    except api.InputError as e:
        assert offered < 9 and "maxStorageBuffersPerShaderStage" in e.message, e.message
        pytest.skip(f"this adapter offers {offered} storage buffers per stage; the instrumented dkv pass binds 9")
    r = lab.evaluate(RUN_BACKWARD_JS, {"plan": plan, "kernel": kernel, "instrumented": True,
                                       "data": {k: data[k] for k in ("Q", "K", "V", "O", "dO", "L")}})
    assert r["ok"], r
    want = count(kernel, n, d, causal, 16384)
    got = {t: c for t, c in r["counts"].items() if c["read"] or c["write"]}
    assert got == {t: {"read": want.reads[t], "write": want.writes[t]} for t in want.reads
                   if want.reads[t] or want.writes[t]}
    assert sum(c["read"] + c["write"] for c in got.values()) == want.total_bytes
    checked = api.handle({"op": "check_backward_output", "params": params,
                          "outputs": {t: r[t] for t in ("dQ", "dK", "dV")}})
    assert checked["ok"] and checked["result"]["passed"], checked


@pytest.mark.gpu
def test_the_broken_backward_fails_the_float64_check_on_the_gpu(lab):
    params = {"direction": "backward", "kernel": "fused-backward-no-D", "n": "90", "d": "16", "causal": True,
              "seed": "1", "workgroup_bytes": "16384"}
    data = api.handle({"op": "backward_inputs", "params": params})["result"]
    r = lab.evaluate(RUN_BACKWARD_JS, {"plan": gpu_plan(lab, "fused-backward-no-D", 90, 16, True),
                                       "kernel": "fused-backward-no-D",
                                       "data": {k: data[k] for k in ("Q", "K", "V", "O", "dO", "L")}})
    assert r["ok"], r
    rep = api.handle({"op": "check_backward_output", "params": params,
                      "outputs": {t: r[t] for t in ("dQ", "dK", "dV")}})["result"]
    assert not rep["tensors"]["dQ"]["passed"] and not rep["tensors"]["dK"]["passed"]
    assert rep["tensors"]["dV"]["passed"]


@pytest.mark.gpu
def test_time_backward_checks_then_times_on_the_gpu(browser, server_url, artifacts):
    """One Time run (about half a minute on SwiftShader), read at 1280 px, then the same card
    at 390 px: it fits the phone's width without scrolling sideways."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    page.goto(server_url + "#dir=backward&kernel=fused-backward-no-D&n=300&d=16&causal=1&M=16384&seed=4")
    page.click("#time-button")
    expect(page.locator("#time-result")).to_be_visible(timeout=300_000)
    idle(page, 300_000)
    assert page.inner_text("#lab-alert") == ""
    assert page.inner_text("#time-plain-backward-check") == "passed"
    assert page.inner_text("#time-fused-backward-check") == "passed"
    assert page.inner_text("#time-fused-backward-no-D-check") == "failed"
    assert page.locator("#time-fused-backward-no-D-ms").count() == 0
    assert float(page.inner_text("#time-fused-backward-ms").split()[0]) > 0
    assert "2.5 × the forward's 4·N²·d" in page.inner_text("#time-flop")
    assert f"N = {CHECK_MAX_N}" in page.inner_text("#time-body")  # checked at the check's limit
    # what the forward card carries: the software-adapter note, Count's bytes, GB/s, the spread, the chart
    software = page.inner_text("#time-software")
    assert "SwiftShader" in software and "CPU" in software
    assert "SwiftShader" in page.inner_text("#lab-status")
    for name in ("plain-backward", "fused-backward", "fused-backward-no-D"):
        want = api.handle({"op": "count", "params": {"direction": "backward", "kernel": name, "n": "300", "d": "16",
                                                     "causal": "1", "workgroup_bytes": "16384"}})
        assert page.inner_text(f"#time-{name}-bytes").split("\n")[0] == f"{want['result']['selected']['total_bytes']:,}"
    for name in ("plain-backward", "fused-backward"):
        bytes_ = int(page.inner_text(f"#time-{name}-bytes").split("\n")[0].replace(",", ""))
        ms = float(page.inner_text(f"#time-{name}-ms").split()[0])
        gbps = bytes_ / (ms / 1e3) / 1e9
        assert float(page.inner_text(f"#time-{name}-gbps")) == pytest.approx(gbps, rel=0.06, abs=0.01)
        low, high = (float(x) for x in page.inner_text(f"#time-{name}-spread").replace(" ms", "").split("–"))
        assert 0 < low <= ms <= high
    labels = page.locator("#time-chart svg > text").all_text_contents()
    assert "fused-backward" in labels and "1× = plain" in labels
    why = page.inner_text("#time-why")
    assert "recomputes S and P" in why and "arithmetic is the limit" in why and "SwiftShader" in why
    low_p, high_p = (float(x) for x in page.inner_text("#time-plain-backward-spread").replace(" ms", "").split("–"))
    low_f, high_f = (float(x) for x in page.inner_text("#time-fused-backward-spread").replace(" ms", "").split("–"))
    apart = high_f < low_p or high_p < low_f
    # The words on this adapter follow what it measured, one of three outcomes: a clear win,
    # a clear loss, or overlapping ranges, where neither is named (tests/test_js_time_stats.py
    # holds each outcome's words on fixed samples; here the run decides which one applies).
    # (Ranges that touch at the shown precision could fall either way, so they are left out.)
    if high_f != low_p and high_p != low_f:
        assert ("won here all the same" in why) is (high_f < low_p)
        assert ("did not win" in why) is (high_p < low_f)
        assert ("ranges overlap" in why) is not apart
        assert ("within the noise" in page.inner_text("#lab-status")) is not apart
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width
        page.locator("#time-result").screenshot(path=str(artifacts / f"lab-backward-time-{width}.png"))
    ctx.close()


@pytest.mark.gpu
def test_time_backward_past_the_adapters_limits_names_the_limit_and_a_size_that_fits(lab):
    """Bad input: plain-backward binds S (N x N float32) as one storage buffer; at N = 20,000
    that passes SwiftShader's maxStorageBufferBindingSize. The planner's refusal names the
    limit and an N that fits, next to N; the Time card already shown stays as it was."""
    settings(lab, n=64, d=16, kernel="fused-backward")
    lab.evaluate(COUNT_REQUESTS)
    lab.click("#time-button")
    expect(lab.locator("#time-result")).to_be_visible(timeout=300_000)
    idle(lab, 300_000)
    assert requests_sent(lab) == ["time", "time_checks"]   # one press, two worker requests
    before = lab.inner_text("#time-body")
    settings(lab, n=20000, d=16, kernel="fused-backward")
    lab.evaluate(COUNT_REQUESTS)
    lab.click("#time-button")
    idle(lab, 120_000)
    assert requests_sent(lab) == ["time"]
    message = lab.inner_text("#n-error")
    assert "maxStorageBufferBindingSize" in message and "Try N ≤ " in message, message
    assert lab.inner_text("#time-body") == before
