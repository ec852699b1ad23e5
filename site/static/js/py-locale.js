// The page's language for the Python a worker runs (Pyodide): write the
// compiled gettext catalogs that build.py puts in py/bundle.json ("catalogs":
// {code: {locale, mo (base64), numbers}}) into Python's file system, then
// switch emulator/i18n.py to the worker's language.
import { lang } from "./i18n.js";

function bytes(base64) {
  const text = atob(base64);
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

/** Install `bundle.catalogs` under /cannery/locale and speak the worker's language. */
export function usePageLanguage(py, bundle) {
  for (const [code, entry] of Object.entries(bundle.catalogs || {})) {
    if (code !== lang) continue;
    const dir = `/cannery/locale/${entry.locale}`;
    py.FS.mkdirTree(`${dir}/LC_MESSAGES`);
    py.FS.writeFile(`${dir}/LC_MESSAGES/python.mo`, bytes(entry.mo));
    py.FS.writeFile(`${dir}/numbers.json`, JSON.stringify(entry.numbers));
  }
  py.runPython(`import emulator.i18n\nemulator.i18n.use(${JSON.stringify(lang)}, "/cannery/locale")`);
}

/** A worker's URL with the page's language, which the worker's i18n.js reads. */
export function workerUrl(url) {
  const out = new URL(url);
  out.searchParams.set("lang", lang);
  return out;
}
