"""The film in every declared language: the same cues and timings,
each language's words, figures written by its own rules, and captions that
read at that language's pace. The build must stop on a missing or extra
cue, a data key in an overlay, or a caption that reads too fast.
"""
from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import babel.numbers
import pytest
from hypothesis import given
from hypothesis import strategies as st

import build
import film
import i18n
from film import film_figures, script
from film.film_figures import FilmError

PT = "pt-BR"
OVERLAY_FILM = i18n.CONTENT / PT / "film.toml"
OVERLAY_SOURCES = i18n.CONTENT / PT / "sources.toml"
# a figure in running text: digits with their separators (never part of a
# name such as float32 or fp16, never a superscript exponent)
FIGURE = re.compile(r"(?<![\w.,])[0-9](?:[0-9.,]*[0-9])?(?![\w])")


@pytest.fixture(scope="module")
def ctx() -> dict:
    with open(build.ROOT / "facts" / "facts.json", encoding="utf-8") as f:
        facts = json.load(f)
    return {"counts": build.lesson_counts(), "facts": facts}


@pytest.fixture(scope="module")
def en(ctx) -> dict:
    return film.build(ctx)


@pytest.fixture(scope="module")
def pt(ctx) -> dict:
    return film.build(ctx, lang=PT)


def values(text: str, locale: str) -> list:
    """Every figure in ``text`` read by ``locale``'s rules (strict: a number
    written by another locale's rules raises NumberFormatError)."""
    return sorted(babel.numbers.parse_decimal(tok, locale=locale, strict=True) for tok in FIGURE.findall(text))


def overlay_copy(tmp_path: Path, edit) -> Path:
    """A copy of the pt-BR film overlay, as TOML text changed by ``edit``."""
    path = tmp_path / "film.toml"
    path.write_text(edit(OVERLAY_FILM.read_text(encoding="utf-8")), encoding="utf-8")
    return path


# ---------- the same film, another language's words ----------

def test_every_language_has_the_same_cues_timings_and_chapters(ctx, en):
    for lang in i18n.languages():
        other = film.build(ctx, lang=lang.code)
        assert [(c["id"], c["start"], c["end"], c["chapter"], c["sources"]) for c in other["cues"]] == \
               [(c["id"], c["start"], c["end"], c["chapter"], c["sources"]) for c in en["cues"]], lang.code
        assert [(c["id"], c["start_s"], c["end_s"]) for c in other["chapters"]] == \
               [(c["id"], c["start_s"], c["end_s"]) for c in en["chapters"]]
        for key in ("stop_s", "resume_s", "answer", "within", "near", "rewatch_s", "answer_cue"):
            assert other["question"][key] == en["question"][key], key


def test_the_pt_br_film_has_its_own_words_for_every_caption_title_and_question(en, pt):
    for a, b in zip(en["cues"], pt["cues"], strict=True):
        assert a["text"] != b["text"], f"cue {a['id']!r} is still in English"
    for a, b in zip(en["chapters"], pt["chapters"], strict=True):
        assert a["title"] != b["title"], a["id"]
    for key in ("prompt", "right", "hint", "close", "reveal", "rewatch_title"):
        assert en["question"][key] != pt["question"][key], key
    assert pt["title"] != en["title"]
    for a, b in zip(en["sources"], pt["sources"], strict=True):
        for key in ("claim", "source", "used_for", "not_proven"):
            assert a[key] != b[key], (a["id"], key)


def test_the_written_vtt_files_carry_each_languages_cues_under_the_same_ids(tmp_path, en, pt):
    webvtt = pytest.importorskip("webvtt")
    film.write_assets(en, tmp_path)
    film.write_assets(pt, tmp_path, lang=PT)
    a = list(webvtt.read(tmp_path / "media" / "captions.vtt"))
    b = list(webvtt.read(tmp_path / "media" / "captions.pt-BR.vtt"))
    assert [(c.identifier, c.start, c.end) for c in a] == [(c.identifier, c.start, c.end) for c in b]
    assert [c.text for c in b] == [film.vtt.escape(c["text"]) for c in pt["cues"]]
    data = json.loads((tmp_path / "media" / "film.pt-BR.json").read_text(encoding="utf-8"))
    assert data["figures"]["d16"]["plain_bytes"] == "285.736.960"
    assert data["figures"]["d16"]["plain_raw"] == 285736960  # raw values stay numbers


# ---------- numbers by each language's rules ----------

def test_pt_br_figures_are_written_by_brazilian_rules_from_the_same_data(en, pt):
    f, e = pt["figures"], en["figures"]
    assert (e["d16"]["plain_bytes"], f["d16"]["plain_bytes"]) == ("285,736,960", "285.736.960")
    assert (e["d16"]["fused_bytes"], f["d16"]["fused_bytes"]) == ("17,301,504", "17.301.504")
    assert (e["d16"]["ratio"], f["d16"]["ratio"]) == ("16.5", "16,5")
    assert (e["d16"]["plain_mib"], f["d16"]["plain_mib"]) == ("272.5", "272,5")
    assert (e["ex"]["l"], f["ex"]["l"]) == ("1.553", "1,553")
    assert (e["N"], f["N"]) == ("4,096", "4.096")
    assert f["ex"]["e_minus_m"] == e["ex"]["e_minus_m"] == "e⁻³"
    assert f["cross"]["times"] == "quatro" and e["cross"]["times"] == "four"
    assert f["ex"]["table"]["P"][0] == [x.replace(".", ",") for x in e["ex"]["table"]["P"][0]]
    # raw values are the same numbers in every language
    assert f["d16"]["plain_raw"] == e["d16"]["plain_raw"] and f["ex"]["l_raw"] == e["ex"]["l_raw"]
    assert f["ex"]["steps"] == e["ex"]["steps"]


def test_each_pt_br_caption_says_the_same_numbers_as_the_english_one(en, pt):
    # read by each language's own rules, the figures of a caption are the same
    # values; an English-written number in a pt-BR caption reads as another
    # value (1.553 is one thousand five hundred and fifty-three) or not at all
    for a, b in zip(en["cues"], pt["cues"], strict=True):
        assert values(b["text"], "pt_BR") == values(a["text"], "en"), a["id"]
    for key in ("prompt", "right", "hint", "reveal"):
        assert values(pt["question"][key], "pt_BR") == values(en["question"][key], "en"), key


def test_no_english_formatted_number_in_the_pt_br_captions_file(tmp_path, pt):
    film.write_assets(pt, tmp_path, lang=PT)
    text = (tmp_path / "media" / "captions.pt-BR.vtt").read_text(encoding="utf-8")
    body = "\n".join(line for line in text.splitlines() if "-->" not in line)
    assert not re.search(r"\d,\d{3},\d{3}", body), "English thousands separators"
    assert not re.search(r"(?<![\d.])\d+\.\d{1,2}(?!\d)", body), "an English decimal point"
    for token in FIGURE.findall(body):
        babel.numbers.parse_decimal(token, locale="pt_BR", strict=True)
    assert "285.736.960" in body and "16,5" in body and "1,553" in body


def test_the_value_scan_catches_an_english_number_in_a_pt_br_caption():
    assert values("l = 1,553", "pt_BR") != values("l = 1.553", "pt_BR")
    with pytest.raises(babel.numbers.NumberFormatError):
        values("São 285,736,960 bytes", "pt_BR")


def test_the_runtime_in_words_is_in_the_pages_language(en, pt):
    minutes, seconds = int(en["runtime_s"]) // 60, int(en["runtime_s"]) % 60
    assert en["runtime_words"] == f"{minutes} minutes {seconds} seconds"
    assert pt["runtime_words"] == f"{minutes} minutos e {seconds} segundos"


def test_the_runtime_in_words_has_singulars_too():
    one = {"runtime": {"minutes": 1, "seconds": 1}}
    en_words = script.load(film.FILM_TOML)["runtime_words"]
    pt_words = script.load(OVERLAY_FILM)["runtime_words"]
    assert script.render_text(en_words, one, "en") == "1 minute 1 second"
    assert script.render_text(pt_words, one, "pt") == "1 minuto e 1 segundo"


@given(st.floats(min_value=0, max_value=1e9, allow_nan=False), st.integers(min_value=0, max_value=4))
def test_a_writer_shows_the_same_digits_in_every_language(x, places):
    en_text = film_figures.Writer("en").fixed(x, places)
    assert en_text == film_figures.fixed(x, places)  # English exactly as before
    assert film_figures.Writer(PT).fixed(x, places) == en_text.replace(".", ",")


@given(st.integers(min_value=0, max_value=2**42))
def test_mib_and_group_follow_the_language(n):
    assert film_figures.Writer("en").mib(n) == film_figures.mib(n)
    assert film_figures.Writer("en").group(n) == film_figures.group(n)
    swap = str.maketrans({",": ".", ".": ","})
    assert film_figures.Writer(PT).mib(n) == film_figures.mib(n).translate(swap)
    assert film_figures.Writer(PT).group(n) == film_figures.group(n).translate(swap)


# ---------- the build stops on a bad translation ----------

def test_a_missing_pt_br_cue_stops_the_build(ctx, tmp_path):
    path = overlay_copy(tmp_path, lambda t: re.sub(r'\[cues\.rerun\]\ntext = "[^"]*"\n', "", t))
    with pytest.raises(FilmError, match=r"cues\.rerun\.text"):
        film.build(ctx, lang=PT, overlays={"film": path})


def test_a_missing_chapter_title_or_question_stops_the_build(ctx, tmp_path):
    path = overlay_copy(tmp_path, lambda t: re.sub(r'\nhint = "[^"]*"', "", t))
    with pytest.raises(FilmError, match=r"question\.hint"):
        film.build(ctx, lang=PT, overlays={"film": path})
    path = overlay_copy(tmp_path, lambda t: t.replace('[chapters.count]\ntitle = "A contagem"\n', ""))
    with pytest.raises(FilmError, match=r"chapters\.count\.title"):
        film.build(ctx, lang=PT, overlays={"film": path})


def test_an_extra_pt_br_cue_stops_the_build(ctx, tmp_path):
    path = overlay_copy(tmp_path, lambda t: t + '\n[cues.encore]\ntext = "Mais uma."\n')
    with pytest.raises(FilmError, match="encore"):
        film.build(ctx, lang=PT, overlays={"film": path})


@pytest.mark.parametrize("key, value", [("start", '"00:01.000"'), ("end", '"00:09.000"'),
                                        ("sources", '["emulator"]'), ("chapter", '"plain"')])
def test_an_overlay_may_not_move_a_cue_or_change_its_data(ctx, tmp_path, key, value):
    path = overlay_copy(tmp_path, lambda t: t.replace('[cues.hook]\n', f'[cues.hook]\n{key} = {value}\n'))
    with pytest.raises(FilmError, match=rf"cues\.hook\.{key}"):
        film.build(ctx, lang=PT, overlays={"film": path})


def test_a_missing_overlay_stops_the_build(ctx, tmp_path):
    with pytest.raises(FilmError, match="missing"):
        film.build(ctx, lang=PT, overlays={"film": tmp_path / "none.toml"})
    with pytest.raises(FilmError, match="missing"):
        film.build(ctx, lang=PT, overlays={"sources": tmp_path / "none.toml"})


def test_a_missing_source_translation_stops_the_build(ctx, tmp_path):
    text = OVERLAY_SOURCES.read_text(encoding="utf-8")
    path = tmp_path / "sources.toml"
    path.write_text(re.sub(r'\[entry\.dao2023\]\nlabel = "[^"]*"\nclaim = "[^"]*"\n', "[entry.dao2023]\n", text),
                    encoding="utf-8")
    with pytest.raises(FilmError, match=r"entry\.dao2023\.(label|claim)"):
        film.build(ctx, lang=PT, overlays={"sources": path})


def test_a_pt_br_caption_that_reads_too_fast_stops_the_build(ctx, tmp_path):
    wordy = "Cada palavra desta legenda comprida demais " * 4
    path = overlay_copy(tmp_path, lambda t: re.sub(r'(\[cues\.never\]\ntext = )"[^"]*"', rf'\1"{wordy.strip()}."', t))
    with pytest.raises(FilmError, match=r"cue 'never'.*\[pt-BR\].*words per minute"):
        film.build(ctx, lang=PT, overlays={"film": path})


def test_reading_speed_is_checked_against_each_languages_own_limit(pt):
    cues = [{"id": c["id"], "start": c["start"], "end": c["end"], "text": c["text"]} for c in pt["cues"]]
    limit = i18n.language(PT).read_max_wpm
    script.validate_cues(cues, read_max_wpm=limit, lang=PT)
    fastest = max(len(c["text"].split()) / ((c["end_s"] - c["start_s"]) / 60) for c in pt["cues"])
    assert fastest <= limit
    # a language that reads slower than this one's fastest caption would fail
    with pytest.raises(FilmError, match="words per minute"):
        script.validate_cues(cues, read_max_wpm=fastest - 1, lang=PT)


def test_every_declared_language_has_a_read_max_wpm_and_its_captions_meet_it(ctx):
    with open(i18n.LANGUAGES_TOML, "rb") as f:
        declared = tomllib.load(f)["languages"]
    assert all(int(x["read_max_wpm"]) > 0 for x in declared)
    for lang in i18n.languages():
        f = film.build(ctx, lang=lang.code)
        for c in f["cues"]:
            assert len(c["text"].split()) / ((c["end_s"] - c["start_s"]) / 60) <= lang.read_max_wpm, c["id"]
        assert script.RUNTIME_MIN_S <= f["runtime_s"] <= script.RUNTIME_MAX_S


def test_the_player_offers_every_languages_captions_the_pages_own_first(en, pt):
    assert [t["srclang"] for t in pt["tracks"]][0] == PT and pt["tracks"][0]["default"]
    assert [t["srclang"] for t in en["tracks"]][0] == "en" and en["tracks"][0]["default"]
    assert {t["src"] for t in pt["tracks"]} == {"captions.vtt", "captions.pt-BR.vtt"}
    assert {t["label"] for t in pt["tracks"]} == {x.name for x in i18n.languages()}
    assert sum(t["default"] for t in pt["tracks"]) == 1
