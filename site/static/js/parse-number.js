// Numbers as people type them: the one parser behind every numeric field.
//
// The same rules as emulator/parse_number.py (read its docstring): both run the
// case table tests/number_cases.json and must agree on value, reason and
// message. The page uses this to answer a plainly bad value at once; the
// emulator, in Python, stays the judge of every lab request.
//
// parseNumber(text, {integer, label}) ->
//   {ok: true, value} | {ok: false, reason, message}
// reason: "empty" | "digits" | "not-a-number" | "ambiguous" | "not-integer" | "too-long" | "zero-division".
// With {fraction: true} (decimal fields only) one "a/b" or "a ÷ b" is read too.
//
// The page's language settles "4.096", "12.000" and "1,650" as its readers
// write numbers (i18n.js decimalMark; emulator/parse_number.py says how), and the
// messages are in the page's language (the same msgids as numbers.py).
import { _, decimalMark as pageDecimalMark } from "./i18n.js";

const SPACES = " \u00a0\u2009\u202f";
/** Digits before the decimal mark, leading zeros aside (numbers.py MAX_DIGITS): every such whole number is exact here. */
export const MAX_DIGITS = 15;
const BODY = /^[0-9.,_ \u00a0\u2009\u202f]+$/;
const OTHER_DIGIT = /\p{Nd}/u;

// control and format marks (Cc, Cf: bidi overrides, zero-width spaces), dropped from the value and the message alike
const visible = (text) => text.replace(/[\p{Cc}\p{Cf}]/gu, "");

function shown(text) {
  const kept = visible(text).trim();
  const chars = Array.from(kept);
  return chars.length <= 20 ? kept : chars.slice(0, 19).join("") + "…";
}

function message(label, text, reason, hint = ["", ""]) {
  if (reason === "empty") return label ? _("{label} is empty: type a number.", { label }) : _("Type a number.");
  const who = label || _("This field");
  switch (reason) {
    case "digits":
      return _("{label} takes the digits 0–9 only; “{text}” uses other digits.", { label: who, text });
    case "not-a-number":
      return _("{label} must be a number written with the digits 0–9; “{text}” is not.", { label: who, text });
    case "ambiguous":
      return _("“{text}” could be {one} or {other}. Type the one you mean.", { text, one: hint[0], other: hint[1] });
    case "too-long":
      return _("{label} takes at most {limit} digits; “{text}” has more.", { label: who, limit: MAX_DIGITS, text });
    case "zero-division":
      return _("“{text}” divides by zero: type a number, or a division by a number other than zero.", { text });
    default:
      return _("{label} must be a whole number, not {text}.", { label: who, text });
  }
}

const isDigits = (s) => /^[0-9]+$/.test(s);

function groupsOk(head, groups) {
  if (head.length < 1 || head.length > 3 || !isDigits(head)) return false;
  return groups.every((g) => g.length === 3 && isDigits(g));
}

function split(rawBody, integer) {
  let body = rawBody;
  for (const sep of SPACES.slice(1)) body = body.split(sep).join(" ");
  if (/(^|[^0-9])_|_($|[^0-9])/.test(body)) return "not-a-number";
  body = body.replace(/_/g, "");
  const marks = Array.from(body).filter((ch) => ch === "." || ch === ",");
  const kinds = new Set(marks);
  let decimalMark = null;
  let groupMark = body.includes(" ") ? " " : null;
  if (kinds.size === 2) {
    decimalMark = body[Math.max(body.lastIndexOf("."), body.lastIndexOf(","))];
    if (body.split(decimalMark).length !== 2 || groupMark) return "not-a-number";
    groupMark = decimalMark === "." ? "," : ".";
  } else if (kinds.size === 1) {
    const mark = marks[0];
    if (marks.length > 1) {
      if (groupMark) return "not-a-number";
      groupMark = mark;
    } else {
      const at = body.indexOf(mark);
      const head = body.slice(0, at);
      const tail = body.slice(at + 1);
      const looksGrouped =
        tail.length === 3 && isDigits(tail) && isDigits(head) && head.length <= 3 && head !== "0" && !groupMark;
      const commaDecimal = pageDecimalMark === ","; // pt-BR: "." groups, "," is the decimal mark
      if (looksGrouped && commaDecimal && mark === ".") {
        groupMark = mark; // "4.096", "12.000": thousands, as Brazilians write them
      } else if (looksGrouped && commaDecimal && !integer) {
        decimalMark = mark; // "1,650" is 1.65 where "," is the decimal mark
      } else if (looksGrouped) {
        if (!integer || tail === "000") {
          const t = tail.replace(/0+$/, "");
          const small = head + (t ? pageDecimalMark + t : "");
          return ["ambiguous", [small, head + tail]];
        }
        groupMark = mark;
      } else {
        decimalMark = mark;
      }
    }
  }
  let [whole, frac] = decimalMark ? body.split(decimalMark) : [body, ""];
  if (decimalMark === "," && frac === "") return "not-a-number";
  if (frac !== "" && !isDigits(frac)) return "not-a-number";
  if (groupMark) {
    const parts = whole.split(groupMark);
    if (!groupsOk(parts[0], parts.slice(1))) return "not-a-number";
    whole = parts.join("");
  }
  if (whole === "" && frac === "") return "not-a-number";
  if (whole && !isDigits(whole)) return "not-a-number";
  return [whole || "0", frac];
}

const FRACTION = /[/÷]/g;

// "a/b" or "a ÷ b" (one mark), each side a decimal number (numbers.py _fraction)
function fractionOf(text, label) {
  const [top, bottom] = text.split(FRACTION).map((side) => side.trim());
  const refuse = (reason) => ({ ok: false, reason, message: message(label, shown(text), reason) });
  if (!top || !bottom) return refuse("not-a-number");
  const a = parseNumber(top, { label });
  const b = parseNumber(bottom, { label });
  for (const side of [a, b]) if (!side.ok) return side;
  if (b.value === 0) return refuse("zero-division");
  return { ok: true, value: a.value / b.value };
}

/**
 * Read a number as a person typed it.
 * @param {string|number} raw the field's text
 * @param {{integer?: boolean, label?: string, fraction?: boolean}} options integer: whole-number
 *   field (N, d, M, seed, head); label: the field's visible name for messages;
 *   fraction: also read one division "a/b" (decimal fields only)
 * @returns {{ok: true, value: number} | {ok: false, reason: string, message: string}}
 */
export function parseNumber(raw, { integer = false, label = "", fraction = false } = {}) {
  const refuse = (reason, text, hint) => ({ ok: false, reason, message: message(label, text, reason, hint) });
  if (typeof raw === "number") {
    if (!Number.isFinite(raw)) return refuse("not-a-number", String(raw));
    if (Math.abs(raw) >= 10 ** MAX_DIGITS) return refuse("too-long", shown(String(raw)));
    if (integer && !Number.isInteger(raw)) return refuse("not-integer", String(raw));
    return { ok: true, value: raw };
  }
  const text = visible(raw == null ? "" : String(raw));
  if (fraction && !integer && (text.match(FRACTION) || []).length === 1) return fractionOf(text, label);
  const seen = shown(text);
  let body = text.trim().replace(/\u2212/g, "-");
  if (body === "") return refuse("empty", seen);
  if (Array.from(body).some((ch) => OTHER_DIGIT.test(ch) && !(ch >= "0" && ch <= "9"))) return refuse("digits", seen);
  let sign = 1;
  if (body[0] === "+" || body[0] === "-") {
    sign = body[0] === "-" ? -1 : 1;
    body = body.slice(1);
  }
  if (!BODY.test(body) || SPACES.includes(body[0]) || SPACES.includes(body[body.length - 1])) {
    return refuse("not-a-number", seen);
  }
  const parts = split(body, integer);
  if (typeof parts === "string") return refuse(parts, seen);
  if (parts[0] === "ambiguous") return refuse("ambiguous", seen, parts[1]);
  const [whole, frac] = parts;
  if (whole.replace(/^0+/, "").length > MAX_DIGITS) return refuse("too-long", seen);
  if (integer) {
    if (/[1-9]/.test(frac)) return refuse("not-integer", seen);
    return { ok: true, value: sign * Number(whole) };
  }
  return { ok: true, value: sign * Number(`${whole}.${frac || "0"}`) };
}
