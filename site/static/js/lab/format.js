// Numbers as the lab writes them, in the page's language (i18n.js): the same
// digits in every language, with its marks: 285,736,960 / 285.736.960,
// 3.99e-7 / 3,99e-7, 16.5 / 16,5.
import { decimalMark, num } from "../i18n.js";

export { size } from "../bars.js";

/** A number JavaScript wrote with "." as its decimal mark, with the page's mark instead. */
export const marked = (text) => String(text).replace(".", decimalMark);

/** 1234567 → "1,234,567" (pt-BR "1.234.567"). */
export const fmt = (x) => num(x);

/** An error or bound in scientific notation, 3 significant figures: 3.99e-7 (pt-BR 3,99e-7). */
export const sci = (x) => (typeof x === "number" ? marked(x.toExponential(2)) : String(x));

/** x with `places` decimals, the page's mark, no grouping: (1.26, 2) → "1.26" / "1,26". */
export const fixed = (x, places) => marked(Number(x).toFixed(places));

/** Rates keep two significant figures even when tiny (SwiftShader at N = 64); from 100 up,
 *  whole numbers with the page's grouping, as 3,913 GB/s (pt-BR 3.913). */
export function rate(x) {
  if (!(x > 0)) return "–";
  if (x >= 100) return fmt(Math.round(x));
  return marked(x >= 1 ? x.toFixed(1) : x.toPrecision(2));
}

/** Milliseconds: two decimals from 1 ms up, three significant figures below. */
export function msText(ms) {
  return marked(ms >= 1 ? ms.toFixed(2) : ms.toPrecision(3));
}

/** A ratio as "12.3×" (10 and above) or "4.56×". */
export const times = (x) => marked(x >= 10 ? x.toFixed(1) : x.toFixed(2)) + "×";
