"""The tiles, as they walk: the lab's picture of the schedule Count counts, in Chromium.

One page is shared by the module so Pyodide boots once; it is opened with a
request log, so its first test can weigh what the page loads before anything
is pressed. The picture's numbers come from the worker's op "walk"
(emulator/walk.py); tests/test_walk.py holds them to traffic.count in CPython,
and here the last step's tally is held to the Count card's own figure.
"""
from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

PYTHON = 180_000  # ms: Pyodide's first start on a busy two-core machine
WEIGHT_LIMIT = 150 * 1024  # bytes the lesson page may load before Play, gzip-compressed
WALK_FILES = ("static/js/lab/walk/", "static/css/walk.css")
AXE = Path(__file__).resolve().parent.parent / "node_modules" / "axe-core" / "axe.min.js"
# Counts requestAnimationFrame calls: the walk must tween with CSS (which reduced motion drops), never with rAF.
RAF_COUNTER = """(() => { window.__raf = 0; const raf = window.requestAnimationFrame.bind(window);
  window.requestAnimationFrame = (fn) => { window.__raf += 1; return raf(fn); }; })();"""


def open_logged(browser, url, width=1280):
    """A page under the real CSP with every finished response recorded as
    page.loaded: [(url, body bytes, gzip-compressed bytes)]."""
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    page = ctx.new_page()
    page.console_errors = []
    page.on("console", lambda m: page.console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.console_errors.append(f"pageerror: {e}"))
    page.loaded = []

    def done(request):
        response = request.response()
        body = response.body() if response else b""
        page.loaded.append((request.url, len(body), len(gzip.compress(body, compresslevel=6))))

    page.on("requestfinished", done)
    page.add_init_script(RAF_COUNTER)
    page.goto(url)
    page.wait_for_load_state("networkidle")
    return ctx, page


@pytest.fixture(scope="module")
def lab(browser, server_url):
    ctx, page = open_logged(browser, server_url)
    yield page
    ctx.close()


def settings(page, *, direction="forward", kernel, n, d, causal):
    page.locator(f"#dir-{direction}").check()
    page.locator("#kernel").select_option(kernel)
    page.locator("#n").fill(str(n))
    page.locator("#d").fill(str(d))
    page.locator("#causal").set_checked(causal)


def count_and_open(page, kernel, n):
    """Press Count, wait for its figure, open the picture, wait until it shows this kernel at N = n;
    returns Count's bytes."""
    page.locator("#count-button").click()
    expect(page.locator("#lab-form")).not_to_have_attribute("aria-busy", "true", timeout=PYTHON)
    expect(page.locator("#count-body")).to_contain_text(f"N = {n:,}")
    if not page.locator("#walk").evaluate("d => d.open"):
        page.locator("#walk > summary").click()
    view = page.locator("#walk-view")
    expect(view).to_have_attribute("data-shows", f"{kernel} {n}", timeout=PYTHON)
    expect(page.locator("#walk-message")).to_be_empty()
    return int(page.inner_text("#count-total").split()[0].replace(",", ""))


def done(page) -> int:
    return int(page.get_attribute("#walk-view", "data-done"))


def walk_animations(page, action: str) -> list:
    """Run `action` (a statement) and, in the same task, the CSS animations and transitions
    then running on the picture: [[kind, property]]. Styles are read before and after the
    action, so a move between the two starts its transition, if any, at once."""
    return page.evaluate(f"""() => {{
        const walk = document.getElementById('walk');
        const frames = walk.querySelectorAll('.walk-walker, .walk-cursor, .walk-band');
        for (const node of frames) getComputedStyle(node).transform;  // where they stand before
        {action};
        for (const node of frames) getComputedStyle(node).transform;  // and after: any tween starts now
        return document.getAnimations().filter((a) => a.effect && a.effect.target && walk.contains(a.effect.target))
            .map((a) => [a.constructor.name, a.transitionProperty || a.animationName || '']);
    }}""")


def test_nothing_of_the_walk_loads_before_it_is_asked_for_and_the_page_stays_light(lab, browser, server_url):
    """Before anything is pressed the lesson page loads at most 150 KB, compressed as a
    static host serves it (gzip), in both languages, and none of the picture's files."""
    for page, lang in ((lab, "en"), (None, "pt-BR")):
        ctx = None
        if page is None:
            ctx, page = open_logged(browser, server_url + "pt-BR/")
        urls = [u for u, _raw, _gz in page.loaded]
        assert urls and all(u.startswith(server_url) for u in urls)
        assert not [u for u in urls if any(f in u for f in WALK_FILES + ("pyodide", "py/bundle.json"))], urls
        weight = sum(gz for _u, _raw, gz in page.loaded)
        assert 20_000 < weight <= WEIGHT_LIMIT, (lang, weight, sorted(page.loaded, key=lambda x: -x[2])[:5])
        if ctx:
            ctx.close()
    # Opening the picture is what loads it: its module, its stylesheet, then Python for its numbers.
    lab.locator("#walk > summary").click()
    expect(lab.locator("#walk-view")).to_be_visible(timeout=PYTHON)
    urls = [u for u, _raw, _gz in lab.loaded]
    assert any("static/js/lab/walk/index.js" in u for u in urls)
    assert any("static/css/walk.css" in u for u in urls)
    lab.locator("#walk > summary").click()  # closed again, as a learner might


@pytest.mark.parametrize("direction,kernel,n,d,causal", [
    ("forward", "plain", 77, 128, False),
    ("forward", "fused", 300, 64, True),
    ("backward", "fused-backward", 65, 16, True),
    ("backward", "plain-backward", 1000, 32, False),
], ids=lambda x: str(x))
def test_the_last_step_tallies_counts_bytes(lab, direction, kernel, n, d, causal):
    settings(lab, direction=direction, kernel=kernel, n=n, d=d, causal=causal)
    bytes_ = count_and_open(lab, kernel, n)
    steps = int(lab.get_attribute("#walk-view", "data-steps"))
    expect(lab.locator("#walk-total")).to_have_text(f"0 of {bytes_:,} bytes")
    lab.locator("#walk-end").click()
    assert done(lab) == steps
    expect(lab.locator("#walk-total")).to_have_text(f"{bytes_:,} of {bytes_:,} bytes")
    expect(lab.locator("#walk-now")).to_contain_text(f"The walk is done: {bytes_:,} bytes moved")
    # the tally's rows add up to its total
    cells = lab.locator("#walk-tally tbody td").all_inner_texts()
    assert sum(int(c.replace(",", "")) for c in cells) == bytes_
    assert lab.console_errors == []


def test_the_picture_steps_by_keyboard_and_says_each_step(lab):
    settings(lab, kernel="fused", n=300, d=64, causal=True)  # B_r = 32, B_c = 16
    count_and_open(lab, "fused", 300)
    lab.locator("#walk-step").focus()
    for _ in range(3):
        lab.keyboard.press("ArrowRight")
    assert done(lab) == 3
    now = lab.locator("#walk-now")
    expect(now).to_have_attribute("aria-live", "polite")
    expect(now).to_have_text(re.compile(r"^Step 3 of 129, pass fused: key tile 1 \(rows 16–31\) walks past query "
                                        r"tile 0 \(rows 0–31\) on the bench\. It reads K 4,096 B and V 4,096 B from "
                                        r"global memory\..* 17 of this row's 19 tile pairs lie past the diagonal and "
                                        r"are skipped\. Tally so far: 24,576 of .* bytes\.$"))
    expect(lab.locator("#walk-bench")).to_contain_text("query tile 0 (rows 0–31)")
    lab.keyboard.press("ArrowLeft")
    assert done(lab) == 2
    lab.keyboard.press("Enter")  # the focused Step button
    assert done(lab) == 3
    lab.keyboard.press("End")
    assert done(lab) == 129
    expect(lab.locator("#walk-step")).to_have_attribute("aria-disabled", "true")
    lab.keyboard.press("Home")
    assert done(lab) == 0
    expect(now).to_contain_text("Before the walk")
    # Space on the drawing plays and pauses; the live region keeps quiet while it plays
    lab.locator("#walk-stage").focus()
    lab.keyboard.press("Space")
    expect(lab.locator("#walk-play")).to_have_text("Pause")
    expect(now).to_have_attribute("aria-live", "off")
    expect(lab.locator("#walk-view")).not_to_have_attribute("data-done", "0")
    lab.keyboard.press("Space")
    expect(lab.locator("#walk-play")).to_have_text("Play")
    expect(now).to_have_attribute("aria-live", "polite")
    paused = done(lab)
    assert 0 < paused <= 129
    assert lab.get_attribute("#walk-view", "data-done") == str(paused)


def test_with_reduced_motion_the_frames_jump_and_play_goes_step_by_step(lab):
    settings(lab, kernel="fused", n=300, d=64, causal=True)
    count_and_open(lab, "fused", 300)
    step = "document.getElementById('walk-step').click()"
    lab.locator("#walk-stage").focus()
    lab.keyboard.press("Home")
    # load Q, then key tile 0 streams past. The walker glides there from where the last test's
    # Play left it; that glide is finished at once, since a move back to where a glide began
    # (key tile 1, if Play paused there) is a reversal CSS shortens to nothing (CSS Transitions
    # Level 1, section 3: the reversing shortening factor), and no transition would run.
    lab.evaluate(f"() => {{ {step}; {step}; for (const a of document.getAnimations()) a.finish(); }}")
    # without a preference the walker glides from key tile 0 to key tile 1: a CSS transition
    lab.emulate_media(reduced_motion="no-preference")
    moving = walk_animations(lab, step)
    assert ["CSSTransition", "transform"] in moving, moving
    lab.emulate_media(reduced_motion="reduce")
    lab.keyboard.press("Home")
    lab.evaluate(f"() => {{ {step}; {step}; }}")
    assert walk_animations(lab, step) == []  # key tile 0 to key tile 1, at once
    # the walker already stands on the key tile being read: the frame jumped
    jumped = lab.evaluate("""() => {
        const box = (n) => n.getBoundingClientRect();
        const walker = box(document.querySelector('.walk-walker'));
        const mark = box(document.querySelector('.walk-svg .seg-K.mk-now'));
        return Math.abs((walker.left + walker.right) / 2 - (mark.left + mark.right) / 2); }""")
    assert jumped < 1
    # Play takes discrete steps on a timer, without animation frames
    lab.evaluate("() => { window.__raf = 0; }")
    before = done(lab)
    lab.locator("#walk-play").click()
    expect(lab.locator("#walk-view")).not_to_have_attribute("data-done", str(before))
    assert walk_animations(lab, "0") == []
    lab.locator("#walk-play").click()
    assert lab.evaluate("window.__raf") == 0
    assert done(lab) > before
    lab.emulate_media(reduced_motion="no-preference")


def test_at_large_n_each_square_says_how_many_tiles_it_stands_for(lab):
    settings(lab, kernel="fused", n=65536, d=64, causal=True)  # 2,048 query tiles, 4,096 key tiles
    bytes_ = count_and_open(lab, "fused", 65536)
    expect(lab.locator("#walk-group")).to_have_text(
        "Too many tiles to draw one by one: each square stands for 32 query tiles × 64 key tiles, walking side "
        "by side, as a GPU runs many workgroups at once.")
    assert lab.locator("#walk-drawing rect.sq").count() == 64 * 64
    lab.locator("#walk-step").click()
    lab.locator("#walk-step").click()
    expect(lab.locator("#walk-now")).to_contain_text("key tiles 0–63 (rows 0–1,023) walk past query tiles 0–31 "
                                                     "(rows 0–1,023) on the bench")
    lab.locator("#walk-end").click()
    expect(lab.locator("#walk-total")).to_have_text(f"{bytes_:,} of {bytes_:,} bytes")
    # a bad value keeps the picture, says why, and marks it out of date
    lab.locator("#n").fill("0")
    lab.locator("#n").dispatch_event("change")
    expect(lab.locator("#walk-message")).to_have_text(re.compile("N must be at least 1"))
    expect(lab.locator("#walk-view")).to_have_class(re.compile("stale"))
    expect(lab.locator("#walk-total")).to_have_text(f"{bytes_:,} of {bytes_:,} bytes")


def test_axe_finds_no_violations_with_the_picture_open(lab, artifacts):
    if not AXE.exists():
        pytest.skip("node_modules/axe-core missing: run `npm ci`")
    settings(lab, direction="backward", kernel="fused-backward", n=300, d=32, causal=True)
    count_and_open(lab, "fused-backward", 300)
    for _ in range(40):
        lab.locator("#walk-step").click()
    lab.locator("#walk").scroll_into_view_if_needed()
    lab.evaluate(AXE.read_text(encoding="utf-8") + "\n;0")  # evaluated by DevTools: the page's CSP stays on
    for scheme in ("light", "dark"):
        lab.emulate_media(color_scheme=scheme)
        violations = lab.evaluate("""async () => (await axe.run(document, {
            runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa']},
            rules: {'target-size': {enabled: true}}, resultTypes: ['violations']})).violations
            .map((v) => [v.id, v.nodes.map((n) => n.target.join(' ')).slice(0, 3)])""")
        assert violations == [], (scheme, violations)
    lab.emulate_media(color_scheme="light")


def test_screenshots_of_the_walk(lab, artifacts):
    """Forward plain, forward fused causal and backward fused, a few steps in, each drawn at a
    desktop's and then a phone's width, where nothing may scroll sideways."""
    for name, direction, kernel, n, d, causal, steps in (
        ("forward-plain", "forward", "plain", 1000, 64, False, 80),
        ("forward-fused-causal", "forward", "fused", 4096, 16, True, 300),
        ("backward-fused", "backward", "fused-backward", 1000, 32, True, 60),
    ):
        lab.set_viewport_size({"width": 1280, "height": 900})
        settings(lab, direction=direction, kernel=kernel, n=n, d=d, causal=causal)
        count_and_open(lab, kernel, n)
        lab.locator("#walk-stage").focus()
        lab.keyboard.press("Home")
        # the keys are tested above; here the steps are taken in one go
        lab.evaluate("(k) => { for (let i = 0; i < k; i++) document.getElementById('walk-step').click(); }", steps)
        assert done(lab) == steps
        for width in (1280, 390):
            lab.set_viewport_size({"width": width, "height": 900})
            lab.locator("#walk").screenshot(path=str(artifacts / f"walk-{name}-{width}.png"))
            overflow = lab.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 0, (name, width, overflow)
    lab.set_viewport_size({"width": 1280, "height": 900})
    assert lab.console_errors == []
