// Numbers as the lab writes them.
export { size } from "../bars.js";

/** 1234567 → "1,234,567". */
export const fmt = (x) => Number(x).toLocaleString("en-US");

/** An error or bound in scientific notation, 3 significant figures. */
export const sci = (x) => (typeof x === "number" ? x.toExponential(2) : String(x));

/** Rates keep two significant figures even when tiny (SwiftShader at N = 64). */
export function rate(x) {
  if (!(x > 0)) return "–";
  return x >= 100 ? x.toFixed(0) : x >= 1 ? x.toFixed(1) : x.toPrecision(2);
}

/** Milliseconds: two decimals from 1 ms up, three significant figures below. */
export function msText(ms) {
  return ms >= 1 ? ms.toFixed(2) : ms.toPrecision(3);
}
