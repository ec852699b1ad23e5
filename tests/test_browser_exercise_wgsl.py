"""Exercise 4 (wgsl-kernel) in headless Chromium on SwiftShader WebGPU, under the
site's real CSP: the reference solution compiles in Tint, runs, passes every case with
bytes counted by the instrument equal to emulator.traffic.count; the wrong-rescale
shader fails with the checker's message naming a row and its query tile; a shader
that walks its whole row of keys straight from global memory (right O, right bytes)
is refused by the counted-loads check at its line; the barrier-in-a-branch shader is
refused with Tint's uniformity error and the static check's message, at their lines.
axe finds nothing; no CSP violation.
"""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from test_browser_a11y import AXE, assert_no_violations
from test_browser_exercise import WIDTHS, open_page, type_code

from emulator.traffic import count
from exercises import content

pytestmark = [pytest.mark.browser, pytest.mark.gpu]

SLUG = "wgsl-kernel"
PAGE = f"module/{SLUG}/index.html"
LONG = 240_000  # ms: Pyodide's first start plus SwiftShader runs on a busy two-core machine


def _src(step, name):
    entry = content.step(SLUG, step)
    if name.startswith("wrong/"):
        return content.wrong_answer(entry, name.removeprefix("wrong/"))
    return content.read(entry, name)


@pytest.fixture(scope="module")
def wpage(browser, server_url):
    ctx, page = open_page(browser, server_url + PAGE, shared=False)  # kept for the module
    has = page.evaluate("async () => Boolean(navigator.gpu && await navigator.gpu.requestAdapter())")
    if not has:
        ctx.close()
        pytest.skip("no WebGPU adapter in Chromium")
    expect(page.locator("#step-scratch .cm-editor")).to_be_visible()
    yield page
    ctx.close()


def _check(page, step):
    section = page.locator(f"#step-{step}")
    section.locator(".step-status").evaluate("e => { e.textContent = ''; }")
    section.locator(".check-button").click()
    expect(section.locator(".step-status")).not_to_have_text(re.compile(r"^$|…$"), timeout=LONG)
    expect(section.locator(".check-button")).to_be_enabled(timeout=LONG)
    return section


def test_the_editor_highlights_wgsl(wpage):
    # The Lezer WGSL mode marks keywords: spans inside the lines, not bare text.
    assert wpage.locator("#step-scratch .cm-line span").count() > 20
    expect(wpage.locator("#step-scratch .cm-content")).to_have_attribute("data-language", "wgsl")


def test_the_reference_solution_passes_with_the_emulators_bytes(wpage):
    type_code(wpage, "harden", _src("harden", "solution.wgsl"))
    section = _check(wpage, "harden")
    entry = content.step(SLUG, "harden")
    expect(section.locator(".step-status")).to_have_text(
        f"All {len(entry['cases'])} cases pass, with the bytes the emulator counts. Step passed.")
    expect(section.locator(".step-state")).to_have_text("passed")
    results = section.locator(".test-result")
    expect(results).to_have_count(len(entry["cases"]))
    for i, (n, d, causal, *_) in enumerate(entry["cases"]):
        want = count("fused", n, d, causal, entry["workgroup_bytes"]).total_bytes
        expect(results.nth(i)).to_contain_text(
            f"Bytes counted {want:,}, emulator {want:,}.")
    expect(section.locator(".wgsl-messages")).to_be_hidden()
    # Timing comes after a pass: the learner's kernel beside the project's fused kernel
    # (on a loaded machine SwiftShader may take over a second: "1,345.50 ms").
    section.locator(".time-button").click()
    ms = r"\d{1,3}(?:,\d{3})*\.\d\d ms"
    expect(section.locator(".step-status")).to_have_text(re.compile(
        rf"^At N = 1024, d = 64: your kernel {ms} \(median of 9, wall clock\), the project's fused "
        rf"kernel {ms} \((GPU timestamps|wall clock)\)\.$"), timeout=LONG)


def test_the_wrong_rescale_fails_with_the_checkers_row_and_tile(wpage):
    src = _src("scratch", "wrong/wrong_rescale.wgsl")
    type_code(wpage, "scratch", src)
    section = _check(wpage, "scratch")
    total = len(content.step(SLUG, "scratch")["cases"])
    expect(section.locator(".step-status")).to_have_text(re.compile(rf"^\d+ of {total} cases pass\.$"))
    # The same O from wgpu-py would get the same verdict; here the row and tile come
    # from emulator.accuracy on the O that Chromium read back.
    first = section.locator(".test-result.fail").first
    expect(first).to_contain_text(re.compile(r"N = 128, d = 64, full: row \d+ \(query tile \d+\) is off by "))
    expect(first).to_contain_text("beyond the bound")
    expect(section.locator(".step-state")).to_have_text("not passed yet")


def test_a_shader_whose_o_holds_inf_or_nan_gets_a_test_message_naming_row_and_column(wpage):
    # exp of the raw score overflows on the Q x 30 case and on the rows near +200: O read back
    # holds inf or NaN, which JSON cannot carry (it became null, and the judge a TypeError).
    type_code(wpage, "scratch", _src("scratch", "wrong/no_max_at_all.wgsl"))
    section = _check(wpage, "scratch")
    entry = content.step(SLUG, "scratch")
    total = len(entry["cases"])
    large = [c for c in entry["cases"] if len(c) > 3]
    expect(section.locator(".step-status")).to_have_text(f"{total - len(large)} of {total} cases pass.")
    expect(section.locator(".step-status")).not_to_contain_text("Error")
    fails = section.locator(".test-result.fail")
    expect(fails).to_have_count(len(large))
    for i in range(len(large)):
        # NaN or inf where the GPU's acc overflows too; zeros where only l does (acc / inf = 0).
        expect(fails.nth(i)).to_contain_text(re.compile(
            r": row \d+(, column \d+)? \(query tile \d+\) (holds (NaN|inf|-inf)|came out as zeros)"))
        expect(fails.nth(i)).to_contain_text(re.compile(r"(exp overflows f32 past|l overflowed to inf \(past) 88\.7"))
    expect(fails.last).to_contain_text("rows' scores shifted by +200 and −200 in turn")
    expect(section.locator(".step-state")).to_have_text("not passed yet")


def test_a_shader_that_reads_its_whole_row_of_keys_from_global_memory_is_refused_at_its_line(wpage):
    # Right O and right bytes on lavapipe (tests/test_exercise_wgsl.py): the counters never
    # see reads of k[...] outside load_k, so the source check does, and no case runs.
    src = _src("scratch", "wrong/row_max_from_global_memory.wgsl")
    line = next(i for i, text in enumerate(src.splitlines(), 1) if "k[base + j * D + c]" in text)
    type_code(wpage, "scratch", src)
    section = _check(wpage, "scratch")
    expect(section.locator(".step-status")).to_have_text("The source checks found 2 problem(s): see the messages.")
    item = section.locator(".wgsl-message", has_text="main reads k[...] straight from global memory")
    expect(item).to_contain_text("not through load_k: the counters cannot see those reads, and a tiled kernel "
                                 "reads k only into its tile in workgroup memory")
    expect(item.locator(".jump-to-line")).to_have_text(f"Line {line}")
    expect(section.locator(".step-results")).to_be_hidden()
    expect(section.locator(".step-state")).to_have_text("not passed yet")


def test_a_barrier_in_a_branch_gets_the_compiler_error_and_the_static_message_at_its_line(wpage):
    src = _src("harden", "wrong/barrier_in_branch.wgsl")
    line = next(i for i, text in enumerate(src.splitlines(), 1) if "workgroupBarrier();  // only rows" in text)
    type_code(wpage, "harden", src)
    section = _check(wpage, "harden")
    expect(section.locator(".step-status")).to_have_text(
        "Your shader did not compile: see the messages, at their lines.")
    items = section.locator(".wgsl-message")
    expect(items.filter(has_text="uniform")).not_to_have_count(0)  # Tint's uniformity analysis
    static = items.filter(has_text="workgroupBarrier() is inside a branch or loop")
    expect(static).to_have_count(1)
    expect(static.locator(".jump-to-line")).to_have_text(f"Line {line}")
    expect(section.locator(".step-results")).to_be_hidden()


def test_no_csp_violation_and_no_other_origin(wpage):
    assert wpage.evaluate("window.__csp") == []
    assert wpage.offsite == []


def test_the_cpu_mirror_runs_without_webgpu(browser, server_url):
    ctx, page = open_page(browser, server_url + PAGE)
    try:
        page.add_init_script("Object.defineProperty(navigator, 'gpu', {value: undefined})")
        page.reload()
        expect(page.locator(".wgsl-no-gpu")).to_be_visible()
        section = page.locator("#step-scratch")
        expect(section.locator(".run-button")).to_be_hidden()
        section.locator(".mirror-button").click()
        n, d, causal = content.step(SLUG, "scratch")["cases"][0][:3]
        want = count("fused", n, d, causal, 16384).total_bytes
        expect(section.locator(".test-result").first).to_contain_text(f"the walk moves {want:,} B", timeout=LONG)
        assert page.evaluate("window.__csp") == []
    finally:
        ctx.close()


def test_axe_finds_no_violations_with_results_and_messages_shown(browser, server_url, artifacts):
    if not AXE.exists():
        pytest.skip("node_modules/axe-core missing: run `npm ci`")
    ctx, page = open_page(browser, server_url + PAGE, bypass_csp=True, viewport=(WIDTHS[0], 900))
    try:
        expect(page.locator("#step-harden .cm-editor")).to_be_visible()
        section = page.locator("#step-harden")
        section.locator(".mirror-button").click()
        expect(section.locator(".test-result").first).to_be_visible(timeout=LONG)
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            assert_no_violations(page, f"exercise-wgsl-{width}", artifacts)
    finally:
        ctx.close()

