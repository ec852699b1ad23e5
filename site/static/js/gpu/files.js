// The manifest and the WGSL sources, fetched relative to the site's root (build.py copies
// kernels_wgsl/ to dist/kernels/), so the site works under any subpath.
import { asGpuError, fail } from "./errors.js";
import { _ } from "../i18n.js";

let manifestPromise = null;
const sourceCache = new Map();

// The site's root, from this module's own address (static/js/gpu/files.js), so pages
// below the root (module/wgsl-kernel/) find kernels/ too.
const SITE_ROOT = new URL("../../../", import.meta.url);

function pageUrl(rel) {
  return new URL(rel, SITE_ROOT).href;
}

async function fetchText(rel) {
  let res;
  try {
    res = await fetch(pageUrl(rel));
  } catch (err) {
    throw fail("fetch", _("Could not load {file}: {error}", { file: rel, error: err.message }), err);
  }
  if (!res.ok)
    throw fail("fetch", _("Could not load {file}: HTTP {status}.", { file: rel, status: String(res.status) }));
  return res.text();
}

/** kernels/manifest.json, parsed once. */
export function loadManifest() {
  manifestPromise =
    manifestPromise ||
    fetchText("kernels/manifest.json")
      .then(JSON.parse)
      .catch((err) => {
        manifestPromise = null;
        throw asGpuError(err, "fetch");
      });
  return manifestPromise;
}

/** The text of kernels/<file>, fetched once. */
export async function loadSource(file) {
  if (!sourceCache.has(file)) {
    sourceCache.set(
      file,
      fetchText(`kernels/${file}`).catch((e) => {
        sourceCache.delete(file);
        throw e;
      }),
    );
  }
  return sourceCache.get(file);
}

/** The instrumented build: uncomment every line starting with the manifest's marker. */
export function instrumentSource(src, marker = "// @instrument: ") {
  const esc = marker.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return src.replace(new RegExp("^(\\s*)" + esc, "gm"), "$1");
}
