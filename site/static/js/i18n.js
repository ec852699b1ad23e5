// The page's words in the page's language.
//
// The catalog is Babel's: `python -m i18n update` extracts every _("...") and
// ngettext("...", "...", n) call of site/static/js into locale/*/page.po, and
// the build writes the translations as locale/<code>/page.json. Numbers are
// written by the browser's Intl.NumberFormat and plurals picked by
// Intl.PluralRules for the page's language. (gettext libraries for the browser
// evaluate a catalog's Plural-Forms with `new Function`, which the page's
// Content-Security-Policy forbids; Intl needs no code from the catalog.)
//
// A page says its language in <html lang>; a worker gets it as ?lang= in its URL.

const DEFAULT = "en";

function pageLanguage() {
  if (typeof document !== "undefined") return document.documentElement.lang || DEFAULT;
  return new URL(self.location.href).searchParams.get("lang") || DEFAULT;
}

/** The page's BCP 47 language tag ("en", "pt-BR"). */
export const lang = pageLanguage();

async function loadCatalog() {
  if (lang === DEFAULT) return {};
  try {
    const url = new URL(`../../locale/${lang}/page.json`, import.meta.url);
    const reply = await fetch(url);
    return reply.ok ? await reply.json() : {};
  } catch {
    return {}; // the English words still make a working page
  }
}

const catalog = await loadCatalog();
const plurals = new Intl.PluralRules(lang);
const formats = new Map();

function numberFormat(digits) {
  const key = digits === undefined ? "auto" : String(digits);
  if (!formats.has(key)) {
    const options =
      digits === undefined
        ? { maximumFractionDigits: 3 }
        : { minimumFractionDigits: digits, maximumFractionDigits: digits };
    formats.set(key, new Intl.NumberFormat(lang, options));
  }
  return formats.get(key);
}

/**
 * A number written the page language's way: num(285736960) → "285,736,960"
 * in English, "285.736.960" in pt-BR; num(16.5, 1) → "16.5" / "16,5".
 * digits: decimals always shown (default: up to 3, as needed).
 */
export function num(x, digits) {
  const value = Number(x);
  if (!Number.isFinite(value)) return String(x);
  return numberFormat(digits).format(value);
}

/** The decimal mark of the page's language ("." or ","). */
export const decimalMark = num(1.5, 1).replace(/\d/g, "");

/**
 * `text` with its {name} placeholders filled from `params` (numbers written with num()),
 * for words already in the page's language (a table the build wrote from Python's).
 */
export function fill(text, params) {
  if (!params) return text;
  return text.replace(/\{(\w+)\}/g, (whole, name) => {
    if (!(name in params)) return whole;
    const value = params[name];
    return typeof value === "number" ? num(value) : String(value);
  });
}

/**
 * The translation of `msgid`, with {name} placeholders filled from `params`
 * (numbers are written with num()). Untranslated messages stay in English.
 */
export function _(msgid, params) {
  const text = catalog[msgid];
  return fill(typeof text === "string" ? text : msgid, params);
}

/**
 * The translation of `msgid` in `context`, for a word that two places translate
 * differently (gettext's pgettext; the catalog keys it "context\u0004msgid"):
 * pgettext("check verdict", "passed") → "passou", where a step's state says "concluída".
 */
export function pgettext(context, msgid, params) {
  const text = catalog[`${context}\u0004${msgid}`];
  return fill(typeof text === "string" ? text : msgid, params);
}

/**
 * The singular or plural message for `n`, translated, with {n} and the other
 * placeholders filled: ngettext("{n} row", "{n} rows", 3) → "3 rows".
 */
export function ngettext(singular, plural, n, params) {
  const forms = catalog[singular];
  const values = { n, ...params };
  if (Array.isArray(forms)) {
    // gettext orders the forms [one, other] for both of our languages
    return fill(plurals.select(n) === "one" ? forms[0] : forms[forms.length - 1], values);
  }
  return fill(n === 1 ? singular : plural, values);
}
