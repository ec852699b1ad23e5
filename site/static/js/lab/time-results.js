// The one place Time's results leave the card that measured them: the forward and
// backward cards hand their rows here (lab/time-stats.js timeResult objects: kernel,
// shader, tiles, samplesMs, medianMs, spread, bytes, flop), into #time-extra. A chart
// that reads them (a roofline: renderRoofline(container, results)) is called from
// showResults and nowhere else.

let latest = { direction: null, results: [] };

/** The rows of the last Time shown: {direction: "forward" | "backward" | null, results}. */
export function timeResults() {
  return { direction: latest.direction, results: latest.results.map((r) => ({ ...r })) };
}

/** Keep the results of the Time just drawn; `container` (#time-extra) is theirs to draw in. */
export function showResults(container, results, direction) {
  latest = { direction, results: [...results] };
  if (container) container.replaceChildren();
}
