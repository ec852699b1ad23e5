"""The lab's float16 card in Chromium (SwiftShader WebGPU), in English and in Brazilian
Portuguese.

What is held here:
* nothing of the card (its module, its data) loads before its button is pressed;
* pressed, it shows the CPU mirror's result on the held-out rows: the rows lost without
  the max subtraction equal facts.json's count (overflow.held_out.float16), none with it;
* and the GPU's, where the adapter has shader-f16 (SwiftShader has not: the card then
  says "not on this GPU" and shows no GPU columns), row for row against the mirror;
* the card's own GPU path (Python's plan for each sentence, the heads of each sentence
  packed, the bits sent to Python, the GPU columns, the verdict), with a stand-in for
  gpu/index.js that answers with the mirror's bits: it agrees row for row, and says so
  when one answer is made to differ;
* a data file that does not load gets a message and leaves the card as it was;
* 0 axe violations on the card, light and dark; in pt-BR every word translated and every
  number written the Brazilian way.
One page per language, shared by its tests (Pyodide starts once per page): the English one
on SwiftShader, the pt-BR one with the stand-in GPU.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import serve
from playwright.sync_api import expect
from test_browser_a11y import AXE, TAGS

from i18n import numbers

pytestmark = [pytest.mark.browser, pytest.mark.gpu]

ROOT = Path(__file__).resolve().parent.parent
FACTS_OVERFLOW = json.loads((ROOT / "facts" / "facts.json").read_text("utf-8"))["overflow"]
SUMMARY = FACTS_OVERFLOW["held_out"]["float16"]
RIGHT, BROKEN = "fused-f16", "fused-f16-no-max"
PYTHON = 240_000  # ms: Pyodide's first start, then the mirror, on a shared CPU


def _open(browser, url, width=1280):
    ctx = browser.new_context(viewport={"width": width, "height": 900}, bypass_csp=True)  # for axe only
    page = ctx.new_page()
    page.seen = []
    page.console_errors = []
    page.on("request", lambda r: page.seen.append(r.url))
    page.on("console", lambda m: page.console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.console_errors.append(str(e)))
    page.goto(url)
    page.wait_for_function("() => window.cannery && window.cannery.lab")
    return ctx, page


def _run(page):
    """Press the card's button and wait until every head's result is shown."""
    before = list(page.seen)
    page.locator("#f16-button").click()
    expect(page.locator("#f16-body .f16-head")).to_have_count(len(SUMMARY["heads"]), timeout=PYTHON)
    expect(page.locator("#f16-button")).to_be_enabled(timeout=PYTHON)
    return before


def _probe(page):
    return page.evaluate("async () => (await import('/static/js/gpu/index.js')).probeGpu()")


@pytest.fixture(scope="module")
def card(browser, server_url):
    ctx, page = _open(browser, server_url + "#lab")
    page.before = _run(page)
    yield page
    ctx.close()


def _overlay(site: Path, root: Path, rel: str, body: str) -> Path:
    """``root``: the built ``site`` through symbolic links, but for the file at ``rel``,
    written with ``body``."""
    src, dst = site, root
    for part in Path(rel).parts:
        dst.mkdir(parents=True, exist_ok=True)
        for entry in src.iterdir():
            if entry.name != part:
                (dst / entry.name).symlink_to(entry)
        src, dst = src / part, dst / part
    dst.write_text(body, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def stand_in_url(built_site, tmp_path_factory):
    """The site with the stand-in GPU below in place of static/js/gpu/index.js, served on a
    port of its own. (A Playwright route would do it too, but a context with a route has
    every request of the lab's Python worker intercepted, and one such start once hung.)"""
    body = STAND_IN % (json.dumps(_stand_in_table()), BROKEN)
    root = _overlay(built_site, tmp_path_factory.mktemp("stand-in"), "static/js/gpu/index.js", body)
    server = serve(root)
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture(scope="module")
def card_pt(browser, stand_in_url):
    """The pt-BR page, with the stand-in GPU below in place of gpu/index.js."""
    ctx, page = _open(browser, stand_in_url + "pt-BR/index.html#lab")
    page.before = _run(page)
    yield page
    ctx.close()


def test_nothing_of_the_card_loads_before_it_is_pressed(card, server_url):
    early = [u for u in card.before if "float16" in u or "held_out_f16" in u]
    assert early == [], early
    later = [u[len(server_url):] for u in card.seen]
    assert "py/facts/held_out_f16.json" in later and "static/js/lab/float16.js" in later
    assert all(u.startswith(server_url) for u in card.seen), "a request left the origin"


def test_the_card_shows_the_mirrors_lost_rows_as_facts_json_counts_them(card):
    group = numbers("en").group
    lost = SUMMARY["rows_lost"]
    assert card.inner_text("#f16-cpu-broken") == group(lost[BROKEN])
    assert card.inner_text("#f16-cpu-right") == group(lost[RIGHT]) == "0"
    assert card.inner_text("#f16-lost") == group(lost[BROKEN])
    assert card.inner_text("#f16-over") == group(SUMMARY["overflowing_scores"])
    rows = card.locator("#f16-table tbody tr")
    expect(rows).to_have_count(len(SUMMARY["heads"]))
    for i, head in enumerate(SUMMARY["heads"]):
        cells = rows.nth(i).inner_text()
        assert f"layer {head['layer']}, head {head['head']}" in cells
        assert group(head["rows_lost"][BROKEN]) in cells
    # the picture marks exactly the lost rows, one mark per row of every head
    assert card.locator(".f16-strip span.lost").count() == lost[BROKEN]
    assert card.locator(".f16-strip .f16-line span").count() == SUMMARY["rows"]
    assert "With it, none do." in card.inner_text("#f16-headline")
    assert card.console_errors == []


def test_each_heads_lost_rows_are_named_with_their_reason(card):
    """A head that loses every row says so; the others name each lost row by its sentence
    and token, and say whether its largest score passes the edge (facts.json's threshold,
    ln 65,520) or stays below it while the running total l overflows."""
    edge = FACTS_OVERFLOW["threshold"]
    for i, head in enumerate(SUMMARY["heads"]):
        fig = card.locator("#f16-body .f16-head").nth(i)
        lost = head["rows_lost"][BROKEN]
        if lost == SUMMARY["rows_per_head"]:
            expect(fig.locator(".f16-rows")).to_have_text("Every row: each has a score past the edge.")
            continue
        items = fig.locator(".f16-rows li")
        expect(items).to_have_count(min(lost, 12) + (lost > 12))
        for text in items.all_inner_texts()[:12]:
            assert "(sentence " in text and ", token " in text and "its largest score, " in text, text
            score = float(text.split("its largest score, ")[1].split(",")[0])
            # the card's scores are the kernel's, formed in float16 (a rounding after every
            # product and sum, t to 2^-7 near 16): within 0.05 of facts.json's float64 scores
            assert score <= head["largest_score"] + 0.05, text
            assert ("passes the edge" in text) != ("stays below the edge" in text), text
            if abs(score - edge) > 0.01:  # shown to 2 places: a score at the edge reads either way
                assert ("passes the edge" in text) == (score > edge), text


def test_the_gpu_runs_the_kernels_where_it_has_shader_f16_and_says_so_where_not(card):
    probe = _probe(card)
    note = card.locator("#f16-gpu-note")
    group = numbers("en").group
    if probe["ok"] and probe["features"]["f16"]:
        expect(note).to_have_attribute("data-state", "ok")
        assert card.inner_text("#f16-gpu-broken") == card.inner_text("#f16-cpu-broken")
        assert card.inner_text("#f16-gpu-right") == "0"
        assert "row for row" in card.inner_text("#f16-agree")
    else:
        expect(note).to_have_attribute("data-state", "no-f16" if probe["ok"] else "none")
        if probe["ok"]:
            assert "Not on this GPU" in note.inner_text() and "shader-f16" in note.inner_text()
        assert card.locator("#f16-gpu-broken, #f16-gpu-right, #f16-agree").count() == 0
        # the mirror's result is there all the same
        assert card.inner_text("#f16-cpu-broken") == group(SUMMARY["rows_lost"][BROKEN])


def _axe(page, scheme):
    page.emulate_media(color_scheme=scheme)
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    return page.evaluate(
        """async (tags) => (await axe.run({include: ['#f16-card']}, {runOnly: {type: 'tag', values: tags},
             rules: {'target-size': {enabled: true}}, resultTypes: ['violations']}))
             .violations.map((v) => ({id: v.id, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' '))}))""",
        TAGS)


@pytest.mark.parametrize("lang", ["en", "pt-BR"])
def test_axe_finds_no_violations_on_the_card(card, card_pt, lang, artifacts):
    page = card if lang == "en" else card_pt
    if not AXE.exists():
        pytest.skip("node_modules/axe-core missing: run `npm ci`")
    found = {scheme: _axe(page, scheme) for scheme in ("light", "dark")}
    page.emulate_media(color_scheme="light")
    page.locator("#f16-card").screenshot(path=str(artifacts / f"lab-float16-{lang}.png"))
    assert found == {"light": [], "dark": []}


def test_the_card_in_pt_br_has_its_words_and_numbers(card_pt):
    group = numbers("pt-BR").group
    lost = SUMMARY["rows_lost"]
    assert card_pt.inner_text("#f16-cpu-broken") == group(lost[BROKEN])
    assert card_pt.inner_text("#f16-over") == group(SUMMARY["overflowing_scores"])
    assert group(SUMMARY["rows"]) in card_pt.inner_text("#f16-headline")
    text = card_pt.inner_text("#f16-card")
    for english in ("Without the", "rows", "head ", "CPU mirror", "Run in float16", "the edge"):
        assert english not in text, english
    for words in ("Rodar em float16", "espelho em CPU", "camada 0, cabeça", "Sem a subtração: sua GPU",
                  "linha por linha"):
        assert words in text, words
    assert card_pt.console_errors == []


def test_a_data_file_that_does_not_load_gets_a_message_and_nothing_is_lost(browser, server_url):
    ctx, page = _open(browser, server_url + "#lab")
    try:
        page.route("**/py/facts/held_out_f16.json", lambda route: route.fulfill(status=404, body="gone"))
        page.locator("#f16-button").click()
        expect(page.locator("#f16-alert")).to_contain_text("Could not load the held-out sentences: HTTP 404")
        expect(page.locator("#f16-button")).to_be_enabled()
        assert page.inner_text("#f16-body") == ""
        assert "The kernels run on your GPU" in page.inner_text("#f16-card")
    finally:
        ctx.close()


# ---- the card's GPU path, with a stand-in GPU ----------------------------------------------
# SwiftShader has no shader-f16, so the card's own GPU path (packing the heads of each
# sentence, sending the bits to Python, the GPU columns, the verdict) never runs above. Here
# gpu/index.js is replaced, for one page, by a module whose probe offers shader-f16 and whose
# runFloat16 answers with the CPU mirror's own bits (computed here in CPython), looked up by
# the Q the card packed: a card that packed the wrong rows or heads would not find them.
# The WGSL itself runs on a real GPU in tests/test_wgsl_native_f16.py.

STAND_IN = """
const TABLE = %s;
const state = { corrupt: false };
globalThis.canneryStandInGpu = state;
export async function probeGpu() {
  return { ok: true, adapterInfo: { vendor: "stand-in", architecture: "", device: "", description: "" },
           software: null, limits: {}, features: { timestamp: false, subgroups: false, f16: true } };
}
function fnv(bits) {  // FNV-1a over every bit pattern of Q: the run's fingerprint
  let h = 2166136261;
  for (const b of bits) h = Math.imul(h ^ b, 16777619) >>> 0;
  return h;
}
export function subgroupMinOf(probe) {
  return 0;
}
export async function runFloat16({ plan, kernel, Q, K, V }) {
  // the card must pass Python's plan (planner/__init__.py): float16, sized at 2 bytes an element
  const kp = plan.plans[kernel];
  const { n, d } = kp;
  for (const [name, a] of [["Q", Q], ["K", K], ["V", V]]) {
    if (kp.dtype !== "float16" || a.byteLength !== kp.buffers[name] || kp.buffers[name] !== 2 * kp.heads * n * d)
      throw new Error("not the planned run: " + name);
  }
  const key = kernel + ":" + n + ":" + fnv(Q);
  if (!(key in TABLE)) throw new Error("no such run: " + key);
  const O = Uint16Array.from(TABLE[key]);
  // corrupt: the sentence's first row of the first head comes back as zeros, finite
  if (state.corrupt && kernel === "%s") O.fill(0, 0, d);
  return { O, file: "fused_f16.wgsl" };
}
"""


def _fnv(bits) -> int:
    """The stand-in's fnv() in Python."""
    h = 2166136261
    for b in bits:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def _stand_in_table():
    from emulator import float16_mirrors as f16
    from emulator.tiling import make_tiling

    data = json.loads((ROOT / "facts" / "held_out_f16.json").read_text("utf-8"))
    inp = f16.held_out_inputs(data)
    d = inp["d"]
    table = {}
    for s, n in enumerate(inp["lengths"]):  # every sentence's Q differs, so no two runs share a key
        q = [x for h in inp["heads"] for row in h["Q"][s] for x in row]
        for kernel in f16.float16_kernels():
            t = make_tiling(kernel, n, d)
            out = []
            for h in inp["heads"]:
                run = getattr(f16, "fused" if kernel == RIGHT else "fused_no_max")
                o = run({"Q": h["Q"][s], "K": h["K"][s], "V": h["V"][s]}, t.block_rows, t.block_cols)["O"]
                out.extend(b for row in o for b in f16.to_bits(row))
            table[f"{kernel}:{n}:{_fnv(f16.to_bits(q))}"] = out
    return table


def test_the_cards_gpu_path_shows_the_gpu_columns_and_its_verdict(card_pt):
    """Last of the pt-BR page's tests: it changes the stand-in's answers."""
    page = card_pt
    group = numbers("pt-BR").group
    lost = SUMMARY["rows_lost"]
    expect(page.locator("#f16-gpu-note")).to_have_attribute("data-state", "ok")
    assert page.inner_text("#f16-gpu-broken") == page.inner_text("#f16-cpu-broken") == group(lost[BROKEN])
    assert page.inner_text("#f16-gpu-right") == "0"
    runs = SUMMARY["rows"] * len(SUMMARY["kernels"])
    assert f"{group(runs)} de {group(runs)} linhas são idênticas" in page.inner_text("#f16-agree")
    # the stand-in now keeps the first row of each sentence in the first head, where the
    # mirror loses every row: the card counts that many fewer and says they disagree
    assert SUMMARY["heads"][0]["rows_lost"][BROKEN] == SUMMARY["rows_per_head"]
    page.evaluate("globalThis.canneryStandInGpu.corrupt = true")
    page.locator("#f16-button").click()
    expect(page.locator("#f16-agree")).to_contain_text("discordam", timeout=PYTHON)
    assert page.inner_text("#f16-gpu-broken") == group(lost[BROKEN] - SUMMARY["sentences"])
    assert page.inner_text("#f16-cpu-broken") == group(lost[BROKEN])
    assert page.console_errors == []


def test_each_named_lost_row_shows_its_sentence_with_the_token_marked(card):
    """A lost row named as "“wa”, sentence 6, token 27" shows that sentence, the model's
    input, with the row's token marked (its WordPiece pieces joined into the word)."""
    tokens = json.loads((ROOT / "facts" / "held_out_f16.json").read_text(encoding="utf-8"))["tokens"]

    def words(ts):
        return re.sub(r"\W", "", "".join(t.removeprefix("##") for t in ts if t not in ("[CLS]", "[SEP]")))
    named = card.locator("#f16-body .f16-rows li:has(.f16-sentence)")
    assert named.count() > 0
    for i in range(named.count()):
        li = named.nth(i)
        text = li.inner_text()
        s, t = (int(x) for x in re.search(r"sentence (\d+), token (\d+)", text).groups())
        sentence = tokens[s - 1]
        shown = li.locator(".f16-sentence").inner_text().replace("[CLS]", "").replace("[SEP]", "")
        assert words([shown]) == words(sentence), text
        assert li.locator(".f16-sentence mark").inner_text() == sentence[t - 1].removeprefix("##"), text
        assert li.locator(".f16-sentence").get_attribute("lang") == "en"
