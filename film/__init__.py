"""The film: renders site/content/film.toml into WebVTT captions, a chapters
track, the transcript and the chapter list, and site/content/sources.toml
into the sources ledger.

build.py calls :func:`build` once per language (site/content/languages.toml)
with its template context and puts the result under ``film``; then
:func:`write_assets` writes ``media/captions.vtt``, ``media/chapters.vtt`` and
``media/film.json`` (another language's carry its tag: captions.pt-BR.vtt).
Timings, cue ids and sources live once, in film.toml; each language's words
in site/content/<code>/film.toml and sources.toml, keyed by id; its figures
are written by its own rules (film/film_figures.py Writer) and its captions are
held to its own reading speed (``read_max_wpm``).
Any malformed cue, typed number, missing figure, unknown source id, missing
or extra translation, or caption that reads too fast raises
:class:`FilmError`, which stops the build with a message naming the cue.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import i18n
from emulator.tiling import M_DEFAULT

from . import film_figures, script, vtt
from .film_figures import FilmError

__all__ = ["FilmError", "build", "write_assets", "ROOT"]

ROOT = Path(__file__).resolve().parent.parent
FILM_TOML = ROOT / "site" / "content" / "film.toml"
SOURCES_TOML = ROOT / "site" / "content" / "sources.toml"


def load_sources(path: Path, values: Mapping[str, Any], lang: str | None = None,
                 overlay: Path | None = None) -> list[dict]:
    """The sources ledger as a list of entries {'id','claim','source','url',
    'used_for','not_proven'} in language ``lang`` (its words from
    site/content/<lang>/sources.toml, or ``overlay``); text fields are
    templates rendered with ``values`` (StrictUndefined). Raises FilmError on
    a bad entry or a missing translation."""
    data = _translated(script.load(path), path, lang or i18n.default().code, overlay)
    out = []
    ids = set()
    for i, raw in enumerate(data.get("entry", [])):
        eid = raw.get("id")
        if not eid or eid in ids:
            raise FilmError(f"{path.name}: entry #{i + 1} has a missing or duplicate id {eid!r}")
        ids.add(eid)
        for key in ("claim", "source", "used_for", "not_proven"):
            if not str(raw.get(key, "")).strip():
                raise FilmError(f"{path.name}: entry {eid!r} lacks {key!r}")
        entry = {"id": eid, "url": raw.get("url", ""), "label": raw.get("label", eid),
                 "link_text": raw.get("link_label", raw.get("link_text", raw.get("url", "")))}
        # the entry's own identifiers (arXiv number, spec section) reach its
        # words as {{ ref.arxiv }}, so a translation never types them
        here = dict(values, ref={k: raw[k] for k in ("arxiv", "doi", "section") if k in raw})
        for key in ("claim", "source", "used_for", "not_proven"):
            entry[key] = script.render_text(raw[key], here, f"source {eid!r} {key}")
        out.append(entry)
    return out


def _data_keys(base: Any, over: Any, where: str) -> list[str]:
    """Dotted paths of the keys in an overlay ``over`` (of the English ``base``)
    that hold data, not words (languages.toml ``untranslated_keys``: id,
    start, end, sources...). A table keyed by cue id names ids, not keys."""
    out: list[str] = []
    if isinstance(over, Mapping):
        by_id = isinstance(base, list)
        for key, value in over.items():
            path = f"{where}.{key}"
            if by_id:
                sub = next((x for x in base if isinstance(x, Mapping) and x.get("id") == key), None)
            else:
                if key in i18n.untranslated_keys():
                    out.append(path)
                sub = base.get(key) if isinstance(base, Mapping) else None
            out += _data_keys(sub, value, path)
    elif isinstance(over, list):
        for i, item in enumerate(over):
            sub = base[i] if isinstance(base, list) and i < len(base) else None
            out += _data_keys(sub, item, f"{where}[{i}]")
    return out


def _translated(raw: dict, path: Path, code: str, overlay: Path | None = None) -> dict:
    """The script or ledger ``raw`` (read from ``path``) with language ``code``'s
    words laid on it (site/content/<code>/film.toml: captions keyed by cue id;
    sources.toml: entries keyed by id); timings, ids and sources stay the
    English file's. ``overlay`` overrides where the words are read from (tests).

    Raises FilmError when the overlay is missing, lacks any worded key the
    English file has (a cue's text, a chapter title, the question...), has a
    cue or key the English file lacks, or sets a data key (start, end, id,
    sources: those are shared by every language)."""
    lang = i18n.language(code)
    if lang.default:
        return raw
    if overlay is None:
        try:
            rel = Path(path).resolve().relative_to(i18n.CONTENT)
        except ValueError:
            return raw  # a script outside site/content (tests) has no translations
        overlay = i18n.overlay_path(lang, rel)
        where = f"{code}/{rel.as_posix()}"
    else:
        where = Path(overlay).name
    if not Path(overlay).exists():
        raise FilmError(f"{where} is missing: the {lang.name} words of {Path(path).name}")
    over = script.load(Path(overlay))
    data = _data_keys(raw, over, where)
    if data:
        raise FilmError(f"{where}: sets {', '.join(data)}; timings, ids and sources stay in "
                        f"{Path(path).name}, shared by every language")
    try:
        merged = i18n.merge(raw, over, where)
    except i18n.I18nError as exc:
        raise FilmError(str(exc)) from exc
    missing = i18n.missing_words(raw, over)
    if missing:
        raise FilmError(f"{where}: no {lang.name} words for {', '.join(missing)}")
    return merged


def build(context: Mapping[str, Any], film_toml: Path | None = None, sources_toml: Path | None = None,
          lang: str | None = None, overlays: Mapping[str, Path] | None = None) -> dict:
    """Render the film for the page, in language ``lang`` (BCP 47; default English).

    context: build.py's template context; uses ``facts`` (facts.json, dict) and
    ``counts`` (emulator figures keyed 'n4096_d16' etc.; missing keys are
    counted with emulator.traffic.count).
    A language other than the source one takes its words from
    site/content/<lang>/film.toml and sources.toml (``overlays``: {"film":
    path, "sources": path} instead, for tests): every caption, title and
    question, keyed by id; timings and ids stay the English script's, and its
    captions are checked against that language's ``read_max_wpm``. Figures are
    written by the language's rules (film/film_figures.py Writer).
    Returns the film dict, which build.py puts in the template context as
    ``film``: title, cues, chapters, question, runtime_s, runtime (m:ss),
    runtime_words, figures, captions_vtt, chapters_vtt, sources (the ledger
    entries), media (this language's file names) and tracks (every
    language's captions track, this one first).
    Raises FilmError on any invalid cue, figure, source or translation.
    """
    film_toml = Path(film_toml or FILM_TOML)
    sources_toml = Path(sources_toml or SOURCES_TOML)
    code = lang or i18n.default().code
    language = i18n.language(code)
    overlays = overlays or {}
    raw = script.load(film_toml)
    raw = _translated(raw, film_toml, code, overlays.get("film"))
    sizes = raw.get("numbers", {})
    values = film_figures.figures(context.get("counts"), context.get("facts"), raw.get("example", {}),
                             n=int(sizes["n"]), d_small=int(sizes["d"][0]), d_large=int(sizes["d"][1]),
                             workgroup_bytes=M_DEFAULT, lang=code, words=sizes.get("words"))
    film = script.render_script(raw, values, read_max_wpm=language.read_max_wpm, lang=code)
    sources = load_sources(sources_toml, values, code, overlays.get("sources"))
    source_ids = {s["id"] for s in sources}
    for cue in film["cues"]:
        for sid in cue["sources"]:
            if sid not in source_ids:
                raise FilmError(f"cue {cue['id']!r} cites unknown source {sid!r} (not in {sources_toml.name})")
        cue["clock"] = script.clock(cue["start_s"])
    for s in sources:
        s["cues"] = [c["id"] for c in film["cues"] if s["id"] in c["sources"]]
    for ch in film["chapters"]:
        ch["clock"] = script.clock(ch["start_s"])
    film["question"]["rewatch_clock"] = script.clock(film["question"]["rewatch_s"])
    film["runtime"] = script.clock(film["runtime_s"])
    # the runtime in words comes from the last caption's end, like the clock
    values["runtime"] = {"minutes": int(film["runtime_s"]) // 60, "seconds": int(film["runtime_s"]) % 60}
    words = raw.get("runtime_words", "{{ runtime.minutes }} minutes {{ runtime.seconds }} seconds")
    film["runtime_words"] = script.render_text(words, values, "runtime_words")
    film["figures"] = values
    film["captions_vtt"] = vtt.captions(film["cues"])
    film["chapters_vtt"] = vtt.chapters(film["chapters"])
    vtt.check_roundtrip(film["captions_vtt"], film["cues"])
    film["sources"] = sources
    film["media"] = media_names(code)
    film["speeds"] = list(raw.get("speeds", [1]))
    film["lang"] = code
    film["tracks"] = tracks(code)
    film["source_labels"] = {s["id"]: s["label"] for s in sources}
    film["cue_clock"] = {c["id"]: c["clock"] for c in film["cues"]}
    return film


def player_data(film: Mapping[str, Any]) -> dict:
    """What the player fetches on first Play (media/film.json): cues, chapters,
    the question (with its answer) and the figures the scenes draw from."""
    return {
        "title": film["title"],
        "runtime_s": film["runtime_s"],
        "cues": [{k: c[k] for k in ("id", "chapter", "start_s", "end_s", "text")} for c in film["cues"]],
        "chapters": [{k: c[k] for k in ("id", "title", "start_s", "end_s", "first_cue_s")} for c in film["chapters"]],
        "question": film["question"],
        "figures": film["figures"],
    }


def media_names(lang: str | None = None) -> dict:
    """File names of the film's media in language ``lang`` (BCP 47): the source
    language's are captions.vtt, chapters.vtt and film.json, another's carry
    its tag (captions.pt-BR.vtt)."""
    code = lang or i18n.default().code
    tag = "" if i18n.language(code).default else f".{code}"
    return {"captions": f"captions{tag}.vtt", "chapters": f"chapters{tag}.vtt", "film": f"film{tag}.json"}


def tracks(lang: str | None = None) -> list[dict]:
    """The captions tracks the player offers on a page in language ``lang``:
    one per declared language, {'srclang', 'label' (the language's own
    name), 'src' (file name under media/), 'default'}, the page's own first
    and default."""
    code = lang or i18n.default().code
    out = [{"srclang": x.code, "label": x.name, "src": media_names(x.code)["captions"], "default": x.code == code}
           for x in i18n.languages()]
    return sorted(out, key=lambda t: not t["default"])


def write_assets(film: Mapping[str, Any], out_dir: Path, lang: str | None = None) -> list[Path]:
    """Write the captions, chapters and player data (media_names(lang)) under
    out_dir/media (UTF-8). ``film`` is build()'s result. Returns the paths."""
    media = Path(out_dir) / "media"
    media.mkdir(parents=True, exist_ok=True)
    names = media_names(lang)
    paths = [media / names["captions"], media / names["chapters"], media / names["film"]]
    paths[0].write_text(film["captions_vtt"], encoding="utf-8")
    paths[1].write_text(film["chapters_vtt"], encoding="utf-8")
    paths[2].write_text(json.dumps(player_data(film), ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    return paths
