// Sets the page's language for node, before any page module loads: import it first.
// site/static/js/i18n.js reads a worker's language from self.location (?lang=)
// and fetches its catalog; here CANNERY_LANG names the language and
// CANNERY_CATALOG a JSON file of the page catalog (i18n.js_messages), which the
// tests write from locale/<locale>/LC_MESSAGES/page.po.
import { readFileSync } from "node:fs";

const lang = process.env.CANNERY_LANG || "en";
const path = process.env.CANNERY_CATALOG;
const catalog = path ? JSON.parse(readFileSync(path, "utf-8")) : {};
globalThis.self = { location: { href: `http://localhost/?lang=${encodeURIComponent(lang)}` } };
globalThis.fetch = async () => ({ ok: true, json: async () => catalog });
