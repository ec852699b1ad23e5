// Scene 6, the question: what the film has shown, then (once answered) the
// count at d = 16 beside the learner's guess.
import { _, num } from "../../i18n.js";
import { dual, el, plainAndFused } from "../draw.js";

/** Asked: what the learner knows, no totals. Left half only: on a wide screen
 *  the question's panel covers the right half. */
function whatIsKnown(g, F) {
  const known = el(g, "g", {});
  const lines = [
    _("N = {n} rows, d = {d} numbers per row", { n: F.N, d: F.d16.d }),
    _("Q, K, V, O: N × d × {bytes} B = {kib} KiB each", { bytes: F.float_bytes, kib: F.d16.tensor_kib }),
    _("B_r = {rows} query rows → {tiles} query tiles", { rows: F.d16.B_r, tiles: F.d16.q_tiles }),
    _("the table, S or P: {mib} MiB", { mib: F.table.mib }),
    _("fused: Q in, O out, K and V in {tiles} times", { tiles: F.d16.q_tiles }),
    _("plain: the same, plus the table {times} times", { times: F.cross.times_raw }),
  ];
  lines.forEach((text, k) => el(known, "text", { x: 30, y: 110 + k * 44, class: "film-text" }, text));
  el(known, "text", { x: 30, y: 110 + lines.length * 44 + 20, class: "film-big" }, _("plain ÷ fused = ?"));
  el(known, "text", { x: 30, y: 50, class: "film-label" }, _("what the film has shown you:"));
  return known;
}

/** Answered: the count, and the learner's guess beside it. Returns the guess's text node. */
function theCount(counted, F) {
  el(
    counted,
    "text",
    { x: 480, y: 40, "text-anchor": "middle", class: "film-label" },
    `N = ${F.N}, d = ${num(F.d16.d)}`,
  );
  plainAndFused(counted, F.d16, [230, 360], 175, 460, 350);
  dual(
    counted,
    { x: 470, y: 200, class: "film-big" },
    _("count: {ratio} times less", { ratio: F.d16.ratio2 }),
    _("count: {ratio}×", { ratio: F.d16.ratio2 }),
  );
  el(counted, "text", { x: 470, y: 240, class: "film-label" }, `${F.d16.plain_bytes} ÷ ${F.d16.fused_bytes} B`);
  return el(counted, "text", { x: 470, y: 300, class: "film-big text-q film-guess" }, _("your guess: not given"));
}

/** Scene 6 on its group g, with the film's stage (see ../scenes.js). Returns
 *  {setGuess(text)}, which writes the learner's guess into the drawing. */
export function question(g, { F, T, hide, fadeIn, fadeOut }) {
  const known = whatIsKnown(g, F);
  const counted = el(g, "g", {});
  const guess = theCount(counted, F);
  hide(counted);
  fadeOut(known, T("answer"), 0.2);
  fadeIn(counted, T("answer") + 0.2);
  return {
    setGuess: (text) => {
      guess.textContent = text;
    },
  };
}
