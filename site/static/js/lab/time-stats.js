// What Time may say about its samples: each kernel's spread, and a winner only where
// the spreads do not overlap. Pure (no DOM, no WebGPU): tests/js_parity.mjs runs it
// under node. The result objects made here are what every Time card draws from.

/**
 * The spread of a kernel's samples (ms each, one per timed repeat after warm-up):
 * {low, high} (the fastest and slowest sample), {q1, q3} (the quartiles, linear
 * interpolation between order statistics) and the median. Throws TypeError for no
 * sample or a sample that is not a positive finite number.
 */
export function spreadOf(samplesMs) {
  const sorted = [...samplesMs].map(Number).sort((a, b) => a - b);
  if (!sorted.length || !sorted.every((x) => Number.isFinite(x) && x > 0)) {
    throw new TypeError("spreadOf needs one or more positive sample times (ms)");
  }
  const at = (q) => {
    const pos = (sorted.length - 1) * q;
    const lo = Math.floor(pos);
    const hi = Math.ceil(pos);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
  };
  return { low: sorted[0], q1: at(0.25), median: at(0.5), q3: at(0.75), high: sorted[sorted.length - 1] };
}

/**
 * One timed row as the cards and charts read it: {kernel, shader: [.wgsl files run, in
 * order], tiles: {block_rows, block_cols, workgroup_bytes}, samplesMs (sorted), medianMs,
 * spread: spreadOf(samplesMs), bytes (the emulator's count: Count's number), flop}.
 */
export function timeResult({ kernel, shaders, tiles, samplesMs, bytes, flop }) {
  const spread = spreadOf(samplesMs);
  return {
    kernel,
    shader: [...(shaders || [])],
    tiles: { ...tiles },
    samplesMs: [...samplesMs].sort((a, b) => a - b),
    medianMs: spread.median,
    spread,
    bytes,
    flop,
  };
}

/** Whether two results' sample ranges [low, high] overlap (then neither clearly wins). */
export function overlaps(a, b) {
  return !(a.spread.high < b.spread.low || b.spread.high < a.spread.low);
}

/**
 * How `other` ran against `base`: "faster" or "slower" where their ranges do not
 * overlap, "noise" where they do.
 */
export function compared(base, other) {
  if (overlaps(base, other)) return "noise";
  return other.spread.high < base.spread.low ? "faster" : "slower";
}

/**
 * The fastest of `results` (two or more): {winner: kernel or null, close: [kernels]}.
 * winner is the kernel of the smallest median when its slowest sample beats every
 * other kernel's fastest; otherwise null, and close lists the kernels whose ranges
 * overlap the fastest's (it first), a difference within the noise.
 */
export function fastest(results) {
  if (results.length < 2) return { winner: null, close: results.map((r) => r.kernel) };
  const best = results.reduce((a, b) => (b.medianMs < a.medianMs ? b : a));
  const close = results.filter((r) => r !== best && overlaps(best, r)).map((r) => r.kernel);
  return close.length ? { winner: null, close: [best.kernel, ...close] } : { winner: best.kernel, close: [] };
}

/**
 * The kernels to time, once each: `kernels` less those the plan says repeat another's
 * run (plan.same_run, planner/__init__.py same_runs: same shaders, tiles, workgroup size
 * and constants). Returns {timed: [kernels], same: [{kernel, as}]}.
 */
export function distinctRuns(kernels, sameRun = {}) {
  const timed = [];
  const same = [];
  for (const kernel of kernels) {
    const as = sameRun[kernel];
    if (as && kernels.includes(as)) same.push({ kernel, as });
    else if (!timed.includes(kernel)) timed.push(kernel);
  }
  return { timed, same };
}
