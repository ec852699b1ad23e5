// The manifest and the WGSL sources, fetched relative to the site's root (build.py copies
// kernels_wgsl/ to dist/kernels/), so the site works under any subpath.
import { GpuError, asGpuError, fail } from "./errors.js";
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

// WGSL from parts (planner/shaders.py join_source, byte for byte): a line that is only
// `// #include "parts/x.wgsl"` (relative to kernels/) is replaced by that part's text.
const INCLUDE = /^[ \t]*\/\/ #include "([^"]*)"[ \t]*$/;
const PART_PATH = /^[A-Za-z0-9_][\w.-]*(?:\/[A-Za-z0-9_][\w.-]*)*\.wgsl$/;

/**
 * `file` with its parts joined in, depth first, each part once (a later directive for a
 * part already joined becomes a comment saying so). `read(path)` resolves to a file's
 * text. Throws GpuError naming the file and line: "shader" for a bad path or a cycle,
 * "fetch" for a part that `read` cannot load.
 */
export async function joinSource(file, read) {
  const seen = new Set([file]);
  async function join(name, text, chain) {
    const lines = text.split("\n");
    for (const [i, line] of lines.entries()) {
      const m = INCLUDE.exec(line);
      if (!m) continue;
      const part = m[1];
      const where = `${name}, line ${i + 1}: #include "${part}"`;
      if (!PART_PATH.test(part))
        throw fail("shader", _("{where}: a part's path is relative to kernels/ and ends in .wgsl", { where }));
      if (chain.includes(part))
        throw fail("shader", _("{where} makes a cycle: {chain}", { where, chain: [...chain, part].join(" -> ") }));
      if (seen.has(part)) {
        lines[i] = `// (#include "${part}": already included above)`;
        continue;
      }
      seen.add(part);
      let partText;
      try {
        partText = await read(part);
      } catch (err) {
        throw new GpuError("fetch", _("{where}: could not load it: {error}", { where, error: err.message }), err);
      }
      const body = await join(part, partText, [...chain, part]);
      lines[i] = body.endsWith("\n") ? body.slice(0, -1) : body;
    }
    return lines.join("\n");
  }
  return join(file, await read(file), [file]);
}

/** The text of kernels/<file> with its parts joined (joinSource), fetched once. */
export async function loadSource(file) {
  if (!sourceCache.has(file)) {
    sourceCache.set(
      file,
      joinSource(file, (rel) => fetchText(`kernels/${rel}`)).catch((e) => {
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
