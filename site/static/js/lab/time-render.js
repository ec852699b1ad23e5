// The forward Time card: one row per distinct run (lab/time-stats.js distinctRuns),
// each with its samples' spread, the chart of speed-up beside the counted traffic
// ratio, and words that name a winner only where the spreads do not overlap.
import { ratioChart } from "../bars.js";
import { _, pgettext } from "../i18n.js";
import { $, status } from "./form.js";
import { fmt, msText, rate, sci, size, times } from "./format.js";
import { fillHtml, html, setHtml } from "./html.js";
import { compared, fastest, timeResult } from "./time-stats.js";

const LESSON = ["plain", "fused"];

// One sentence each on why a tuned kernel tiles differently (site/content/lab.toml [tuned]).
function tunedNotes() {
  try {
    return JSON.parse($("time-result").dataset.notes || "{}");
  } catch {
    return {};
  }
}

/** "1.20–1.31 ms": a result's fastest and slowest sample. */
export function spreadText(r) {
  return _("{low}–{high} ms", { low: msText(r.spread.low), high: msText(r.spread.high) });
}

/** A speed-up with "within the noise" where the two ranges overlap. */
export function speedupText(base, r) {
  const x = times(base.medianMs / r.medianMs);
  return compared(base, r) === "noise" ? _("{speedup} (within the noise)", { speedup: x }) : x;
}

/**
 * The time results of the timed kernels (timeResult objects, in timing order) and the
 * figures the card reads beside them: {results, stats: {kernel: {result, gbps,
 * intensity, speedup, fewer, traffic}}}. traffic: the emulator's count of that kernel.
 */
function timeStats(kernels, counts) {
  const results = [];
  const stats = {};
  for (const [name, k] of Object.entries(kernels)) {
    const traffic = counts[name] || (counts.timed || {})[name];
    if (!k || !traffic) continue;
    const result = timeResult({
      kernel: name,
      shaders: k.shaders,
      tiles: k.tiling,
      samplesMs: k.sampleMs,
      bytes: traffic.total_bytes,
      flop: k.flop,
    });
    results.push(result);
    stats[name] = {
      result,
      k,
      gbps: result.bytes / (result.medianMs / 1000) / 1e9,
      intensity: result.flop / result.bytes,
      fewer: counts.plain ? counts.plain.total_bytes / result.bytes : null,
      traffic,
    };
  }
  const plain = stats.plain && stats.plain.result;
  for (const st of Object.values(stats)) st.speedup = plain ? plain.medianMs / st.result.medianMs : null;
  return { results, stats };
}

function checkedCell(c, head) {
  if (!c) return "–";
  return c.passed
    ? html`<span class="verdict-pass">${head.passed}</span> (${sci(c.max_abs_error)})`
    : html`<span class="verdict-fail">${head.failed}</span> (${c.error ? c.error : sci(c.max_abs_error)})`;
}

/** A shader's file name that may wrap after each underscore, so a long one ("fused_rows_lanes.wgsl")
 * does not widen the table's first column past its card. */
function wrappable(file) {
  return String(file)
    .split("_")
    .map((part, i) => (i ? html`_<wbr>${part}` : part));
}

function timeRow(name, st, plain, check, head, workgroupBytes) {
  const { result, k, traffic } = st;
  const low = k.belowResolution ? " " + _("(below the timer's resolution)") : "";
  const timer =
    k.method === "timestamp"
      ? _("{samples} × GPU timestamps", { samples: String(k.samples) })
      : _("{samples} × wall clock", { samples: String(k.samples) });
  const shaders = result.shader.map((file, i) => (i ? html`<br>${wrappable(file)}` : wrappable(file)));
  const wb = Number(traffic.workgroup_bytes);
  const atM = wb === workgroupBytes ? `M = ${fmt(wb)} B` : _("{bytes} B of workgroup memory", { bytes: fmt(wb) });
  return html`<tr><th scope="row">${name}<br><span class="note">B_r = ${traffic.block_rows}, B_c = ${traffic.block_cols}, ${atM}</span><br><span class="note" id="time-${name}-shader">${shaders}</span></th>
      <td data-label="${head.bytes}">${fmt(result.bytes)}<br><span class="note">${size(result.bytes)}</span></td>
      <td data-label="${head.ms}"><span id="time-${name}-ms">${msText(result.medianMs)}${low}</span><br><span class="note" id="time-${name}-spread">${spreadText(result)}</span></td>
      <td data-label="GB/s" id="time-${name}-gbps">${rate(st.gbps)}</td>
      <td data-label="GFLOP/s" id="time-${name}-gflops">${rate(k.gflops)}</td>
      <td data-label="${head.intensity}" id="time-${name}-intensity">${rate(st.intensity)}</td>
      <td data-label="${head.speedup}" id="time-${name}-speedup">${name === "plain" || !plain ? "–" : speedupText(plain, result)}</td>
      <td data-label="${head.checked}" id="time-${name}-check">${checkedCell(check, head)}</td>
      <td data-label="${head.samples}">${timer}</td></tr>`;
}

/** One list item per timed tuned kernel: why it tiles differently, and at which M it ran. */
function tunedItems(tuned, stats, d, workgroupBytes) {
  const notes = tunedNotes();
  return tuned.map((name) => {
    const wb = Number(stats[name].traffic.workgroup_bytes);
    const m =
      wb === workgroupBytes
        ? _("Counted and run at M = {m} B, as the form says.", { m: fmt(wb) })
        : _(
            "Counted and run with its own {bytes} B of workgroup memory at d = {d}, not the form's M = {m} B: its tiles are fixed for each d.",
            { bytes: fmt(wb), d: String(d), m: fmt(workgroupBytes) },
          );
    const note = notes[name] || _("A fused kernel tuned for timing.");
    return html`<li id="time-${name}-note"><strong>${name}</strong>: ${note} ${m}</li>`;
  });
}

/** One line per kernel the plan says repeats another's run: it is timed once, in that row. */
function sameItems(same, d) {
  return same.map(({ kernel, as }) => {
    const words = LESSON.includes(as)
      ? _(
          "{kernel} at d = {d} is the lesson kernel {as}: same shader, same tiles, same constants. It is timed once, in {as}'s row.",
          { kernel, as, d: String(d) },
        )
      : _(
          "{kernel} at d = {d} runs the same shader at the same tiles and constants as {as}. It is timed once, in {as}'s row.",
          { kernel, as, d: String(d) },
        );
    return html`<li id="time-${kernel}-same">${words}</li>`;
  });
}

/** A translated sentence's {name} placeholders filled with plain text. */
const fill = (text, values) => String(text).replace(/\{(\w+)\}/g, (m, k) => (k in values ? values[k] : m));

/**
 * Who won, in words that name a winner only where the ranges do not overlap:
 * {fused: sentence with {fewer} and {speedup} left in, values, fastestWords, winner}.
 */
function verdicts(stats, results) {
  const f = stats.fused;
  const p = stats.plain;
  const out = { fused: "", values: {}, fastestWords: "", winner: null };
  if (f && p && f.fewer) {
    out.values = { fewer: times(f.fewer), speedup: times(f.speedup) };
    out.fused =
      compared(p.result, f.result) === "noise"
        ? _(
            "The lesson's fused kernel moves {fewer} fewer bytes than plain (counted); it ran {speedup} as fast (measured), a difference within the noise: the two ranges overlap.",
          )
        : _(
            "The lesson's fused kernel moves {fewer} fewer bytes than plain (counted) and ran {speedup} as fast (measured).",
          );
  }
  const best = fastest(results);
  out.winner = best.winner;
  if (best.winner) {
    out.fastestWords = _("Fastest: {kernel}; its slowest sample beat every other kernel's fastest.", {
      kernel: best.winner,
    });
  } else if (best.close.length > 1) {
    out.fastestWords = _("No kernel is clearly fastest: {kernels} are within the noise of each other.", {
      kernels: best.close.join(", "),
    });
  }
  return out;
}

function whyList(w, stats, plainFlop, winnerTuned) {
  const f = stats.fused;
  const p = stats.plain;
  return html`<ul>
        <li>${fillHtml(w.memory, {
          title: html`<strong>${w.memoryTitle}</strong>`,
          gflop: rate(plainFlop / 1e9),
          plain: rate(p ? p.intensity : 0),
          fused: rate(f ? f.intensity : 0),
        })}</li>
        <li>${fillHtml(w.invocations, {
          title: html`<strong>${w.invocationsTitle}</strong>`,
          br: f ? String(f.traffic.block_rows) : "–",
          n: fmt(f ? f.traffic.n : 0),
          workgroups: fmt(f ? f.traffic.query_tiles : 0),
        })}</li>
        <li>${fillHtml(w.untuned, {
          title: html`<strong>${w.untunedTitle}</strong>`,
          kernel: winnerTuned || "",
          speedup: winnerTuned ? times(stats[winnerTuned].speedup) : "",
        })}</li>
      </ul>`;
}

/** The card's words (outside the html`` literals, where Babel's extractor finds them). */
function cardWords({ n, d, causal, checkN, leftOut, wgLimit, winnerTuned }) {
  const needWords = (k) =>
    _("{kernel} needs {bytes} B of workgroup memory at d = {d}", { kernel: k.name, bytes: fmt(k.need), d: String(d) });
  const setup = { n: fmt(n), d: String(d), check_n: fmt(checkN) };
  return {
    software: _(
      "{adapter} runs WebGPU on this computer's CPU, not on a graphics chip. These times say nothing about a GPU's memory: they time CPU code, so do not read the lesson's claim from them.",
    ),
    setup: causal
      ? _(
          "N = {n}, d = {d}, causal, one head, float32, median of the samples and their spread (fastest–slowest). Before timing, each kernel ran once at N = {check_n} on the same seeded inputs as Check, and its output went through the float64 checker (largest error in brackets).",
          setup,
        )
      : _(
          "N = {n}, d = {d}, one head, float32, median of the samples and their spread (fastest–slowest). Before timing, each kernel ran once at N = {check_n} on the same seeded inputs as Check, and its output went through the float64 checker (largest error in brackets).",
          setup,
        ),
    wrong: _("A kernel gave wrong answers on this GPU: its time measures nothing useful."),
    table: _("Times on your GPU"),
    fewer: _("fewer bytes than plain (counted)"),
    fast: _("as fast as plain (measured)"),
    memory: _(
      "{title} Every kernel does the same {gflop} GFLOP. Plain does {plain} FLOP per byte it moves, fused {fused}. A GPU that can do more arithmetic per byte than a kernel asks for waits on memory, and there fewer bytes win; where the arithmetic is the slow part (a CPU adapter, a small N), fewer bytes buy little.",
    ),
    memoryTitle: _("Memory against arithmetic."),
    invocations: _(
      "{title} The lesson's fused kernel runs one workgroup per query tile of B_r = {br} rows, so at N = {n} it has {workgroups} workgroups in all, each of at most 256 invocations. A GPU hides memory waits by keeping many invocations busy; with few workgroups (a small N) much of it sits idle, whatever the bytes.",
    ),
    invocationsTitle: _("Invocations per workgroup."),
    untuned: winnerTuned
      ? _(
          "{title} The lesson's kernels are written to be read. The tuned kernels keep the same idea (S and P never leave the bench) with the arithmetic laid out for the hardware; the fastest here, {kernel}, ran {speedup} as fast as plain.",
        )
      : _(
          "{title} The lesson's kernels are written to be read. The tuned kernels keep the same idea (S and P never leave the bench) with the arithmetic laid out for the hardware.",
        ),
    untunedTitle: _("Untuned code."),
    tuned: _("Why the tuned kernels tile differently, each counted with its own tiles:"),
    same: _("Timed once:"),
    leftOut: _("Not timed here: {kernels}, and this GPU offers {offer} B.", {
      kernels: leftOut.map(needWords).join("; "),
      offer: fmt(wgLimit),
    }),
    gbps: _(
      "GB/s divides the emulator's byte count by the time; caches can make it exceed what memory alone delivers.",
    ),
  };
}

function tableHead(head) {
  return html`<thead><tr><th scope="col">${head.kernel}</th><th scope="col">${head.bytes}</th><th scope="col">${head.ms}</th><th scope="col">GB/s</th><th scope="col">GFLOP/s</th><th scope="col">${head.intensity}</th><th scope="col">${head.speedup}</th><th scope="col">${head.checked}</th><th scope="col">${head.samples}</th></tr></thead>`;
}

/** Bars of each kernel's measured speed-up beside its counted traffic ratio, against plain. */
export function drawRatios(container, stats, base = "plain") {
  const ratios = Object.entries(stats)
    .filter(([name, st]) => name !== base && st.speedup && st.fewer)
    .map(([name, st]) => ({ label: name, counted: st.fewer, measured: st.speedup }));
  if (!ratios.length) return;
  const ratioWords = (r) =>
    _("{kernel} moves {fewer} fewer bytes and ran {speedup} as fast", {
      kernel: r.label,
      fewer: times(r.counted),
      speedup: times(r.measured),
    });
  container.appendChild(
    ratioChart(ratios, {
      title: _("Against plain, for each kernel: {list}", { list: ratios.map(ratioWords).join("; ") }),
    }),
  );
}

/**
 * Draw a forward Time: result (gpu timeKernels), counts (the count reply at these
 * settings), opts {n, d, causal, workgroupBytes, checks, checkN, leftOut, wgLimit,
 * probe, same: [{kernel, as}]}.
 */
export function renderTime(result, counts, opts) {
  const { n, d, causal, workgroupBytes, checks = {}, checkN = 0, leftOut = [], wgLimit = 0, probe = {} } = opts;
  const same = opts.same || [];
  const kernels = result.kernels || {};
  const head = {
    kernel: _("Kernel"),
    bytes: _("Bytes (counted)"),
    ms: _("ms: median, spread (fastest–slowest)"),
    intensity: _("FLOP per byte"),
    speedup: _("Speed-up over plain"),
    checked: _("Checked first (N = {n})", { n: fmt(checkN) }),
    samples: _("Samples × timer"),
    passed: pgettext("check verdict", "passed"),
    failed: pgettext("check verdict", "failed"),
  };
  const { results, stats } = timeStats(kernels, counts);
  const plain = stats.plain && stats.plain.result;
  const rows = results.map((r) => timeRow(r.kernel, stats[r.kernel], plain, checks[r.kernel], head, workgroupBytes));
  const tuned = results.map((r) => r.kernel).filter((name) => !LESSON.includes(name));
  const wrong = Object.values(checks).some((c) => !c.passed);
  const software = probe.software;
  const said = verdicts(stats, results);
  const winnerTuned = said.winner && !LESSON.includes(said.winner) ? said.winner : null;
  const w = cardWords({ n, d, causal, checkN, leftOut, wgLimit, winnerTuned });
  const f = stats.fused;
  // What the clock says beside the count, in plain words.
  let verdict = " " + _("The count covers memory traffic only; the clock also depends on three other things:");
  if (software) {
    verdict =
      " " +
      _(
        "{adapter} runs on a CPU, so the measured number says nothing about a GPU's memory; on a GPU, the clock also depends on three other things:",
        { adapter: software },
      );
  } else if (f && f.speedup && f.speedup >= 0.8 * f.fewer && f.speedup <= 1.25 * f.fewer) {
    verdict =
      " " +
      _(
        "Here the clock roughly follows the count: this GPU spends its time moving bytes. Still, three other things count:",
      );
  }
  setHtml(
    $("time-body"),
    html`
    ${software ? html`<p class="time-software" id="time-software">${fillHtml(w.software, { adapter: html`<strong>${software}</strong>` })}</p>` : ""}
    <p>${w.setup}</p>
    ${wrong ? html`<p class="verdict-fail" id="time-check-warning">${w.wrong}</p>` : ""}
    <div class="table-scroll" tabindex="0" role="region" aria-label="${w.table}"><table class="numbers stack" id="time-table"><caption>${w.table}</caption>
      ${tableHead(head)}
      <tbody>${rows}</tbody></table></div>
    ${same.length ? html`<p>${w.same}</p><ul class="note" id="time-same">${sameItems(same, d)}</ul>` : ""}
    <div id="time-chart"></div>
    <ul class="legend-inline" aria-hidden="true"><li><span class="swatch sw-counted"></span>${w.fewer}</li><li><span class="swatch sw-measured"></span>${w.fast}</li></ul>
    <div class="time-why" id="time-why">
      <p><span id="time-verdict">${fillHtml(said.fused, {
        fewer: html`<strong id="time-fewer">${said.values.fewer}</strong>`,
        speedup: html`<strong id="time-speedup">${said.values.speedup}</strong>`,
      })}</span> <span id="time-fastest">${said.fastestWords}</span>${verdict}</p>
      ${whyList(w, stats, plain ? plain.flop : 0, winnerTuned)}
    </div>
    ${tuned.length ? html`<p>${w.tuned}</p><ul class="note" id="time-tuned">${tunedItems(tuned, stats, d, workgroupBytes)}</ul>` : ""}
    ${leftOut.length ? html`<p id="time-left-out">${w.leftOut}</p>` : ""}
    <p class="note">${result.flopConvention || ""} ${w.gbps} ${result.note || ""}</p>`,
  );
  drawRatios($("time-chart"), stats);
  $("time-result").hidden = false;
  status.textContent = timeStatus(said, software);
}

/** The status line after Time: fused against plain, and a fastest kernel only where it is clear. */
function timeStatus(said, software) {
  const parts = [_("Timed."), fill(said.fused, said.values), said.fastestWords].filter(Boolean);
  if (software)
    parts.push(_("{adapter} runs on the CPU: these times say nothing about a GPU's memory.", { adapter: software }));
  return parts.join(" ");
}
