// Progress files as files: the name an export is saved under, the text a page shows of a
// name it did not write (a file's name, a learner's), merging an imported file into what
// this browser holds, ordering passes by instant, and the class table as CSV. Pure: no
// page, no storage (tests/test_progress_files.py runs it under node).
import { instant, stepState } from "./progress-schema.js";

/** The export's file name without a learner's name. */
export const BASE_NAME = "cannery-progress";
/** The most characters of a learner's name an export's file name keeps. */
export const FILE_NAME_MAX = 60;

// Bidirectional controls (Unicode UAX 9: embeddings, overrides, isolates, marks): a name that
// holds one can reverse the words printed after it.
const BIDI = /[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g;

/** `text` with its bidirectional controls taken out, for showing a name the page did not write. */
export function plainText(text) {
  return String(text).replace(BIDI, "");
}

/**
 * The file name an export is saved under: cannery-progress-ana-silva.json for "Ana Silva".
 * Safe on every file system: letters lose their accents (NFKD, marks dropped), everything
 * but letters and digits becomes one hyphen, small letters, at most FILE_NAME_MAX
 * characters; the fixed prefix keeps it clear of reserved names (CON, NUL, COM1, ...),
 * of a leading dot, and of slashes. A name with no letter or digit gives cannery-progress.json.
 */
export function exportFileName(name) {
  const slug = Array.from(
    plainText(name || "")
      .normalize("NFKD")
      .replace(/\p{M}/gu, "")
      .toLowerCase()
      .replace(/[^\p{L}\p{N}]+/gu, "-")
      .replace(/^-+|-+$/g, ""),
  )
    .slice(0, FILE_NAME_MAX)
    .join("")
    .replace(/-+$/, "");
  return slug ? `${BASE_NAME}-${slug}.json` : `${BASE_NAME}.json`;
}

/** Two spellings of one learner's name compare equal: NFC, spaces folded, case folded. */
export function learnerKey(name) {
  return plainText(name).normalize("NFC").trim().replace(/\s+/gu, " ").toLocaleLowerCase("und");
}

/** The latest of ISO 8601 times, compared as instants (an offset counts), or null. */
export function latest(times) {
  let best = null;
  for (const t of times) if (!Number.isNaN(instant(t)) && (best === null || instant(t) > instant(best))) best = t;
  return best;
}

const RANK = { todo: 0, revealed: 1, passed: 2 };

/**
 * Merge an imported progress state into the current one: for a step both hold, the record
 * that went further (passed, then passed after the reveal, then not yet; a tie keeps the
 * current); a step only one holds is kept; the current name, else the file's.
 */
export function mergeStates(current, incoming) {
  const steps = { ...current.steps };
  for (const [key, record] of Object.entries(incoming.steps)) {
    const mine = steps[key];
    if (!mine || RANK[stepState(record)] > RANK[stepState(mine)]) steps[key] = record;
  }
  const merged = { ...current, version: Math.max(current.version, incoming.version), steps };
  if (!merged.name && incoming.name) merged.name = incoming.name;
  return merged;
}

// A cell a spreadsheet would run as a formula (OWASP, "CSV injection"): = + - @, tab, return.
const FORMULA = /^[=+\-@\t\r]/;

/** One CSV field (RFC 4180): a formula-looking text gets a leading ', and a field with a
 * comma, a quote or a line break is quoted, its quotes doubled. */
export function csvField(value) {
  let text = plainText(value === null || value === undefined ? "" : value);
  if (FORMULA.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** Rows (lists of values) as CSV text, lines ended by CRLF (RFC 4180). */
export function csvText(rows) {
  return rows.map((row) => row.map(csvField).join(",") + "\r\n").join("");
}
