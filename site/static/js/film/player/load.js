// Loading, on the first Play (or seek) only: media/film.json, GSAP, ../scenes.js,
// and the captions and chapters tracks.
import { _, lang } from "../../i18n.js";

function loadScript(url) {
  return new Promise((resolve, reject) => {
    if (window.gsap) {
      resolve();
      return;
    }
    const s = document.createElement("script");
    s.src = url;
    s.onload = () => resolve();
    s.onerror = () => reject(new Error(`could not load ${url}`));
    document.head.append(s);
  });
}

/** One <track> in the player's <video>, its cues loaded but drawn by the player.
 *  Resolves once the track has fired load (true) or error (false). */
function addTrack(video, kind, src, label, srclang, isDefault) {
  const tr = document.createElement("track");
  tr.kind = kind;
  tr.src = new URL(src, document.baseURI).href;
  tr.srclang = srclang;
  tr.label = label;
  tr.default = Boolean(isDefault);
  const settled = new Promise((resolve) => {
    tr.addEventListener("load", () => resolve(true), { once: true });
    tr.addEventListener("error", () => resolve(false), { once: true });
  });
  video.append(tr);
  tr.track.mode = "hidden"; // load the cues; the player draws captions itself
  return settled;
}

// Setting a track's mode only schedules its fetch: the request starts in a
// later task. The returned promise settles once each track has fired load
// or error, so "loaded" (window.canneryFilm) means every file of the first Play arrived.
function attachTracks(root, video) {
  // one captions track per language, each labelled in its own language: the
  // page's first and default, then the chapters (in the page's language),
  // then the other languages' captions
  let tracks = [];
  try {
    tracks = JSON.parse(root.dataset.tracks || "[]");
  } catch {
    tracks = [];
  }
  if (!tracks.length) tracks = [{ src: null, srclang: lang, label: lang, default: true }];
  const captions = (t) =>
    addTrack(
      video,
      "captions",
      t.src ? root.dataset.media + t.src : root.dataset.captions,
      t.label,
      t.srclang,
      t.default,
    );
  const [own, ...others] = tracks;
  return Promise.all([
    captions(own),
    addTrack(video, "chapters", root.dataset.chapters, root.dataset.chaptersLabel || _("Chapters"), lang, true),
    ...others.map(captions),
  ]);
}

/** p.load(): fetch and build the film once; later calls return the same promise. */
export function installLoading(p) {
  const { root, ui, st } = p;
  p.load = () => {
    if (!st.loading) {
      st.loading = (async () => {
        const base = document.baseURI;
        const [film, mod] = await Promise.all([
          fetch(new URL(root.dataset.film, base)).then((r) => {
            if (!r.ok) throw new Error(`media/film.json: HTTP ${r.status}`);
            return r.json();
          }),
          import("../scenes.js"),
          // GSAP sits at the site's root, whichever language's folder the page is in
          loadScript(new URL("../../../../vendor/gsap/gsap.min.js", import.meta.url).href),
        ]);
        st.film = film;
        // the film plays at once; the tracks (for the browser's own caption
        // and chapter lists) finish loading alongside
        attachTracks(root, ui.video).then(() => {
          st.tracksSettled = true;
        });
        st.scenes = mod.createFilm(ui.host, film, window.gsap);
        if (st.record) st.scenes.setGuess(p.guessText(st.record));
        ui.poster.hidden = true;
        ui.host.hidden = false;
        root.classList.add("is-loaded");
        p.draw();
      })().catch((err) => {
        st.loading = null;
        p.say(
          _("The film could not load: {error}. Reload the page to try again; the transcript below has every line.", {
            error: err.message,
          }),
        );
        throw err;
      });
    }
    return st.loading;
  };
}
