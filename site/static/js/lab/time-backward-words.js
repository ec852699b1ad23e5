// The backward Time card's sentence on why the measured ratio and the counted one
// differ. Pure (no DOM): tests/js_parity.mjs runs it under node. Its words follow the
// medians and their ranges (time-stats.js compared): a clear win, a clear loss, or,
// where the ranges overlap, both medians and both ranges and no winner named.
import { _ } from "../i18n.js";
import { msText, times } from "./format.js";
import { compared } from "./time-stats.js";

const range = (r) => _("{low}–{high} ms", { low: msText(r.spread.low), high: msText(r.spread.high) });

/** What the timing says of fused against plain: the medians, and the ranges where they overlap. */
function measured(plain, fused, outcome) {
  const values = {
    plain: plain.result.kernel,
    fused: fused.result.kernel,
    fewer: times(fused.fewer),
    speedup: times(fused.speedup),
    fused_ms: msText(fused.result.medianMs),
    plain_ms: msText(plain.result.medianMs),
    fused_range: range(fused.result),
    plain_range: range(plain.result),
  };
  if (outcome !== "noise")
    return _(
      "{fused} moves {fewer} fewer bytes than {plain} (counted) and ran {speedup} as fast (measured: a median of {fused_ms} ms against {plain_ms} ms).",
      values,
    );
  return _(
    "{fused} moves {fewer} fewer bytes than {plain} (counted). Its median was {fused_ms} ms against {plain_ms} ms ({speedup} as fast), but the ranges overlap ({fused_range} against {plain_range}), so this run does not show which is faster: time it again.",
    values,
  );
}

/** What this adapter's result says about the lesson's claim, for each outcome. */
function here(outcome, software) {
  if (!software)
    return _(
      "On a GPU that waits on memory (a large one at large N), the bytes saved can outweigh the extra arithmetic and the fused backward wins; where arithmetic is the limit, it loses. Which holds depends on the GPU, and on how well each kernel is tuned: the lesson's are written to be read.",
    );
  const adapter = { adapter: software };
  if (outcome === "faster")
    return _(
      "On {adapter}, a CPU adapter, arithmetic is the limit and bytes are cheaper than on a GPU, so the speed-up is not the count's ratio. The fused backward won here all the same: writing plain's N×N tables out and reading them back costs a CPU time too, more than fused spends recomputing P.",
      adapter,
    );
  if (outcome === "slower")
    return _(
      "On {adapter}, a CPU adapter, bytes are cheap and arithmetic is the limit, so recomputing P can cost more than the bytes it saves: here the fused backward did not win, whatever the count says.",
      adapter,
    );
  return _(
    "On {adapter}, a CPU adapter, bytes are cheap and arithmetic is the limit, so recomputing P can cost about as much as the bytes it saves.",
    adapter,
  );
}

/**
 * The card's paragraph on plain against fused: plain and fused are the card's stats
 * entries ({result: timeResult, speedup: plain's median ÷ fused's, fewer: plain's
 * counted bytes ÷ fused's}); software is the CPU adapter's name, or "" on a GPU.
 * Returns "" when either was not timed.
 */
export function whyWords(plain, fused, software) {
  if (!plain || !fused) return "";
  const outcome = compared(plain.result, fused.result);
  const cost = _(
    "The bytes are not the whole price: the fused backward never stores the N×N tables P and dS, so it recomputes S and P from Q, K and the saved logsumexp L, more arithmetic than plain does.",
  );
  return `${measured(plain, fused, outcome)} ${cost} ${here(outcome, software)}`;
}
