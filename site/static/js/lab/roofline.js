// The roofline of the visitor's GPU under Time, and the H200's measured
// figures for a visitor whose browser cannot time the kernels, or times them on a CPU
// (item 4). Loaded only when Time is pressed (time.js imports it then).
//
// Roofs: the copy bandwidth and float32 FMA rate that gpu/probes.js measures (the plan is
// Python's, planner/__init__.py probe_plan). Points: each timed kernel at its FLOP (the Time
// card's convention) over its bytes (the emulator's count, Count's numbers), at its
// measured GFLOP/s; plain's passes at their counted intensity, on the roof (they are not
// timed alone here). The H200's figures come from data/measured-h200.json, which build.py
// writes from bench/results/ (course/measured.py); nothing here types a figure.
import { NARROW, el } from "../bars.js";
import { _, pgettext } from "../i18n.js";
import { $, status } from "./form.js";
import { fmt, msText, rate, size, times } from "./format.js";
import { fillHtml, html, setHtml } from "./html.js";
import { placeLabels } from "./roofline-labels.js";

let table = null;

/** The H200's measured figures (build.py's data/measured-h200.json), fetched once. */
export function measuredTable() {
  if (!table) {
    table = fetch(new URL("../../../data/measured-h200.json", import.meta.url)).then((res) => {
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      return res.json();
    });
    table.catch(() => {
      table = null;
    });
  }
  return table;
}

/** The measured size nearest the form's: the same causal first, then the nearest d, then N. */
export function nearestSize(sizes, { n, d, causal }) {
  const cost = (s) => [s.causal === causal ? 0 : 1, Math.abs(Math.log2(s.d / d)), Math.abs(Math.log2(s.n / n))];
  const better = (a, b) => {
    const x = cost(a);
    const y = cost(b);
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i] < y[i];
    return false;
  };
  return (sizes || []).reduce((best, s) => (best === null || better(s, best) ? s : best), null);
}

const roofAt = (roof, intensity) => Math.min(roof.flopPerSecond, roof.bytesPerSecond * intensity);
const underWhich = (roof, intensity) => (intensity < roof.ridge ? "memory" : "arithmetic");

// ---- the chart ---------------------------------------------------------------------------

// A phone draws the chart in fewer units, so that its words (13 units there, 12 here;
// .roofline text in cannery.css) are 11 px or more at 390 px.
const WIDE = { W: 640, H: 380, M: { left: 74, right: 18, top: 16, bottom: 48 }, size: 12 };
const PHONE = { W: 360, H: 300, M: { left: 52, right: 8, top: 14, bottom: 42 }, size: 13 };

function logScale(lo, hi, a, b) {
  const l0 = Math.log10(lo);
  const l1 = Math.log10(hi);
  return (v) => a + ((Math.log10(v) - l0) / (l1 - l0)) * (b - a);
}

function decades(values) {
  const good = values.filter((v) => v > 0 && Number.isFinite(v));
  return [10 ** Math.floor(Math.log10(Math.min(...good) / 1.5)), 10 ** Math.ceil(Math.log10(Math.max(...good) * 1.5))];
}

function roofLine(roof, X, Y, x0, x1) {
  const ridge = Math.min(Math.max(roof.ridge, x0), x1);
  const pts = [
    [x0, roofAt(roof, x0)],
    [ridge, roofAt(roof, ridge)],
    [x1, roofAt(roof, x1)],
  ];
  return pts.map(([x, y]) => `${X(x).toFixed(1)},${Y(y / 1e9).toFixed(1)}`).join(" ");
}

// The chart last drawn is drawn again when the phone layout starts or stops applying
// (a phone turned, a window narrowed), so that its words keep their size (as Count's).
let redraw = null;
window.matchMedia(NARROW).addEventListener("change", () => redraw && redraw());

function chart(points, roof, h200, words, narrow = window.matchMedia(NARROW).matches) {
  const { W, H, M, size } = narrow ? PHONE : WIDE;
  const xs = [roof.ridge, ...points.map((p) => p.intensity), ...h200.points.map((p) => p.intensity)];
  if (h200.roof) xs.push(h200.roof.ridge);
  const [x0, x1] = decades(xs);
  const ys = [
    roof.flopPerSecond / 1e9,
    roofAt(roof, x0) / 1e9,
    ...points.map((p) => p.gflops),
    ...h200.points.map((p) => p.gflops),
  ];
  if (h200.roof) ys.push(h200.roof.flopPerSecond / 1e9, roofAt(h200.roof, x0) / 1e9);
  const [y0, y1] = decades(ys);
  const X = logScale(x0, x1, M.left, W - M.right);
  const Y = logScale(y0, y1, H - M.bottom, M.top);
  const svg = el("svg", {
    viewBox: `0 0 ${W} ${H}`,
    class: narrow ? "roofline is-narrow" : "roofline",
    role: "img",
    "aria-labelledby": "roofline-title roofline-desc",
    id: "roofline-chart",
  });
  svg.appendChild(el("title", { id: "roofline-title" }, words.title));
  svg.appendChild(el("desc", { id: "roofline-desc" }, words.desc));
  for (let v = x0; v <= x1 * 1.0001; v *= 10) {
    svg.appendChild(el("line", { x1: X(v), x2: X(v), y1: M.top, y2: H - M.bottom, class: "grid" }));
    svg.appendChild(el("text", { x: X(v), y: H - M.bottom + 16, "text-anchor": "middle" }, rate(v)));
  }
  for (let v = y0; v <= y1 * 1.0001; v *= 10) {
    svg.appendChild(el("line", { x1: M.left, x2: W - M.right, y1: Y(v), y2: Y(v), class: "grid" }));
    svg.appendChild(el("text", { x: M.left - 6, y: Y(v) + 4, "text-anchor": "end" }, rate(v)));
  }
  svg.appendChild(el("text", { x: (M.left + W - M.right) / 2, y: H - 8, "text-anchor": "middle" }, words.xAxis));
  svg.appendChild(
    el(
      "text",
      {
        x: 14,
        y: (M.top + H - M.bottom) / 2,
        transform: `rotate(-90 14 ${(M.top + H - M.bottom) / 2})`,
        "text-anchor": "middle",
      },
      words.yAxis,
    ),
  );
  if (h200.roof)
    svg.appendChild(el("polyline", { points: roofLine(h200.roof, X, Y, x0, x1), class: "roof roof-h200" }));
  const marks = []; // every point, H200's too, for the labels: {x, y, label, cls}
  for (const p of h200.points) {
    const dot = el("circle", { cx: X(p.intensity), cy: Y(p.gflops), r: 4, class: "pt-h200" });
    dot.appendChild(el("title", {}, p.words));
    svg.appendChild(dot);
    marks.push({ x: X(p.intensity), y: Y(p.gflops), label: `H200 ${p.label}`, cls: "pt-label pt-h200-label" });
  }
  svg.appendChild(el("polyline", { points: roofLine(roof, X, Y, x0, x1), class: "roof", id: "roofline-roof" }));
  const ridge = el("circle", { cx: X(roof.ridge), cy: Y(roof.flopPerSecond / 1e9), r: 5, class: "ridge" });
  ridge.appendChild(el("title", {}, words.ridge));
  svg.appendChild(ridge);
  svg.appendChild(
    el("text", { x: X(roof.ridge) + 8, y: Y(roof.flopPerSecond / 1e9) - 8, class: "ridge-label" }, words.ridge),
  );
  for (const p of points) {
    const cx = X(p.intensity);
    const cy = Y(p.gflops);
    const mark =
      p.kind === "pass"
        ? el("rect", { x: cx - 4.5, y: cy - 4.5, width: 9, height: 9, class: "pt-pass", "data-kernel": p.label })
        : el("circle", { cx, cy, r: 6, class: "pt-kernel", "data-kernel": p.label });
    mark.appendChild(el("title", {}, p.words));
    svg.appendChild(mark);
    marks.push({ x: cx, y: cy, label: p.label, cls: "pt-label" });
  }
  // the visitor's points first: where space is short, theirs get the first places
  const order = [...marks.filter((m) => m.cls === "pt-label"), ...marks.filter((m) => m.cls !== "pt-label")];
  const bounds = { left: M.left + 2, right: W - M.right, top: M.top, bottom: H - M.bottom - 2 };
  for (const l of placeLabels(order, bounds, size)) {
    const cls = l.marks.every((i) => order[i].cls !== "pt-label") ? "pt-label pt-h200-label" : "pt-label";
    svg.appendChild(el("text", { x: l.x, y: l.y, "text-anchor": l.anchor, class: cls }, l.text));
  }
  return svg;
}

// ---- the words --------------------------------------------------------------------------

function pointWords(p, roof) {
  const where =
    underWhich(roof, p.intensity) === "memory" ? _("under the memory roof") : _("under the arithmetic roof");
  return p.kind === "pass"
    ? _("{label}: {intensity} FLOP per byte, {where}; not timed alone, drawn on the roof ({gflops} GFLOP/s at most)", {
        label: p.label,
        intensity: rate(p.intensity),
        where,
        gflops: rate(p.gflops),
      })
    : _("{label}: {intensity} FLOP per byte, {gflops} GFLOP/s measured, {share} of the roof there, {where}", {
        label: p.label,
        intensity: rate(p.intensity),
        gflops: rate(p.gflops),
        share: `${rate((100 * p.gflops * 1e9) / roofAt(roof, p.intensity))} %`,
        where,
      });
}

function lessonWords(points, roof, counted) {
  const plain = points.find((p) => p.kind === "kernel" && p.role === "plain");
  const fused = points.find((p) => p.kind === "kernel" && p.role === "fused");
  if (!plain || !fused) return "";
  const allowed = roofAt(roof, fused.intensity) / roofAt(roof, plain.intensity);
  const a = underWhich(roof, plain.intensity);
  const b = underWhich(roof, fused.intensity);
  const share = (p) => (p.gflops * 1e9) / roofAt(roof, p.intensity);
  const faster =
    counted.speedup && counted.speedup > 1.25 * allowed
      ? " " +
        _(
          "It ran faster than the roofs allow because {plain} ran at only {share} of its roof: what slows it here is neither its bytes nor its arithmetic but what the count leaves out.",
          { plain: plain.label, share: `${rate(100 * share(plain))} %` },
        )
      : "";
  const figures = {
    plain: plain.label,
    fused: fused.label,
    fewer: times(counted.fewer),
    allowed: times(allowed),
    speedup: counted.speedup ? times(counted.speedup) : "–",
  };
  return lessonSentence(a, b, figures) + faster;
}

function lessonSentence(a, b, figures) {
  if (a === "memory" && b === "memory")
    return _(
      "{plain} and {fused} both sit left of the ridge, under the memory roof: on this GPU their time follows their bytes, so the speed-up can come near the traffic ratio, {fewer} (the roofs allow {allowed}; it ran {speedup}).",
      figures,
    );
  if (a === "memory")
    return _(
      "{plain} sits under the memory roof and {fused} under the arithmetic roof: fewer bytes help only until arithmetic is the limit, so the roofs allow a speed-up of {allowed}, less than the traffic ratio, {fewer} (it ran {speedup}).",
      figures,
    );
  return _(
    "{plain} and {fused} both sit right of the ridge, under the arithmetic roof: this GPU moves these bytes faster than it does the arithmetic, so fewer bytes buy little; the roofs allow {allowed} against a traffic ratio of {fewer} (it ran {speedup}).",
    figures,
  );
}

function figureTable(points, roof, w) {
  const rows = points.map(
    (p) => html`<tr><th scope="row">${p.label}</th>
      <td data-label="${w.bytes}">${fmt(p.bytes)}<br><span class="note">${size(p.bytes)}</span></td>
      <td data-label="FLOP">${fmt(p.flop)}</td>
      <td data-label="${w.intensity}" class="roof-intensity">${rate(p.intensity)}</td>
      <td data-label="GFLOP/s">${p.kind === "pass" ? w.notTimed : rate(p.gflops)}</td>
      <td data-label="${w.roofThere}">${rate(roofAt(roof, p.intensity) / 1e9)}</td>
      <td data-label="${w.under}">${underWhich(roof, p.intensity) === "memory" ? w.memory : w.arithmetic}</td></tr>`,
  );
  return html`<div class="table-scroll" tabindex="0" role="region" aria-label="${w.tableTitle}"><table class="numbers stack" id="roofline-table"><caption>${w.tableTitle}</caption>
    <thead><tr><th scope="col">${w.point}</th><th scope="col">${w.bytes}</th><th scope="col">FLOP</th><th scope="col">${w.intensity}</th><th scope="col">GFLOP/s</th><th scope="col">${w.roofThere}</th><th scope="col">${w.under}</th></tr></thead>
    <tbody>${rows}</tbody></table></div>`;
}

/**
 * Draw this GPU's roofline into `container`.
 * results: {points: [{label, kind: "kernel"|"pass", role ("plain", "fused" or none),
 *   bytes (counted), flop, gflops (measured; null for a pass)}], counted: {fewer,
 *   speedup} (fused against plain), software (the software adapter's name or null),
 *   h200: {points: [{label, intensity, gflops}], roof: {bytesPerSecond, flopPerSecond,
 *   ridge} or null, source} or null, passesNote}.
 * probes: gpu/probes.js measureProbes's answer (B/s, FLOP/s, ridge FLOP per byte).
 */
export function renderRoofline(container, results, probes) {
  const roof = { bytesPerSecond: probes.bytesPerSecond, flopPerSecond: probes.flopPerSecond, ridge: probes.ridge };
  const points = results.points
    .filter((p) => p.bytes > 0 && p.flop > 0)
    .map((p) => {
      const intensity = p.flop / p.bytes;
      const q = { ...p, intensity, gflops: p.kind === "pass" ? roofAt(roof, intensity) / 1e9 : p.gflops };
      return { ...q, words: pointWords(q, roof) };
    });
  const h200 = results.h200 || { points: [], roof: null };
  const h200Points = h200.points.map((p) => ({
    ...p,
    words: _("NVIDIA H200, {label}: {intensity} FLOP per byte, {gflops} GFLOP/s", {
      label: p.label,
      intensity: rate(p.intensity),
      gflops: rate(p.gflops),
    }),
  }));
  const figures = {
    gbps: rate(roof.bytesPerSecond / 1e9),
    gflops: rate(roof.flopPerSecond / 1e9),
    ridge: rate(roof.ridge),
  };
  const w = {
    heading: _("The roofline of your GPU"),
    title: _("Roofline of your GPU: GFLOP/s against FLOP per byte, both on log scales"),
    xAxis: _("FLOP per byte (counted bytes)"),
    yAxis: "GFLOP/s",
    ridge: _("ridge: {ridge} FLOP per byte", figures),
    roofs: _(
      "Measured on your GPU just now: copy {gbps} GB/s (bytes read plus written), float32 fused multiply-add {gflops} GFLOP/s (2 FLOP each). The roofs meet at the ridge, {ridge} FLOP per byte: a kernel that does fewer FLOP per byte than that waits on memory; one that does more waits on arithmetic.",
      figures,
    ),
    software: results.software
      ? _(
          "{adapter} runs WebGPU on this computer's CPU: these roofs are the CPU's, its memory and its vector units, not a graphics chip's.",
          { adapter: results.software },
        )
      : "",
    tableTitle: _("The roofline's points"),
    point: pgettext("roofline", "Point"),
    bytes: _("Bytes (counted)"),
    intensity: _("FLOP per byte"),
    roofThere: _("Roof there (GFLOP/s)"),
    under: _("Under the"),
    memory: _("memory roof"),
    arithmetic: _("arithmetic roof"),
    notTimed: _("not timed alone"),
    convention: _(
      "FLOP by the Time card's convention (the matrix products, 2 FLOP a multiply-add); plain's passes: 2·N²·d for scores and for PV, {softmax} FLOP a score for the softmax (as the native benchmark counts them), causal half. Bytes: the emulator's count. A point below its roof lost time to what the count leaves out: untuned code, idle invocations, waiting.",
      { softmax: String(results.softmaxFlop) },
    ),
    h200: h200.roof
      ? _("Faint: the NVIDIA H200's roofline and points, measured with the same probes ({source}).", {
          source: h200.source,
        })
      : h200Points.length
        ? _(
            "Faint: the NVIDIA H200's measured points ({source}). Its roofline has not been measured with these probes yet, so no H200 roof is drawn.",
            { source: h200.source },
          )
        : "",
  };
  const listed = points.map((p) => p.words).join("; ");
  w.desc = `${w.roofs} ${listed}.${h200Points.length ? " " + h200Points.map((p) => p.words).join("; ") + "." : ""}`;
  const lesson = lessonWords(points, roof, results.counted || {});
  setHtml(
    container,
    html`<h4>${w.heading}</h4>
    ${w.software ? html`<p class="time-software" id="roofline-software">${w.software}</p>` : ""}
    <p id="roofline-figures" data-bytes-per-second="${String(roof.bytesPerSecond)}" data-flop-per-second="${String(roof.flopPerSecond)}">${w.roofs}</p>
    <div class="roofline-pair"><div class="roofline-figure" id="roofline-figure"></div>${figureTable(points, roof, w)}</div>
    ${lesson ? html`<p id="roofline-words">${lesson}</p>` : ""}
    <p class="note">${w.convention} ${results.passesNote || ""}</p>
    ${w.h200 ? html`<p class="note" id="roofline-h200-note">${w.h200}</p>` : ""}`,
  );
  const figure = $("roofline-figure");
  const draw = () => chart(points, roof, { points: h200Points, roof: h200.roof }, w);
  const old = figure.querySelector("#roofline-chart");
  if (old) old.replaceWith(draw());
  else figure.appendChild(draw());
  redraw = () => {
    const now = figure.isConnected && figure.querySelector("#roofline-chart");
    if (now) now.replaceWith(draw());
  };
  container.hidden = false;
}

// ---- the H200's figures (item 4) ----------------------------------------------------------

function h200Words(source) {
  return fillHtml(_("From {file}, measured on {date} with {command}"), {
    file: html`<code>${source.file}</code>`,
    date: source.date,
    command: html`<code class="command">${source.command}</code>`,
  });
}

/**
 * What a plain baseline as well made as the fused kernels (course/measured.py fair_plain:
 * plain-reg, timed in one run beside every fused kernel) says at the shown size's d and
 * mask, at its nearest N: HTML, or "" where that run has no such size.
 */
function fairPlainWords(fair, s) {
  const same = ((fair && fair.sizes) || []).filter((f) => f.d === s.d && f.causal === s.causal);
  const f = nearestSize(same, s);
  if (!f) return "";
  const words = _(
    "Against a plain baseline as well made as the fused kernels, fusing buys less. {kernel} keeps plain's three passes and the bytes they move, with fused-reg's register blocks and vec4 loads. On the same card at N = {n}, d = {d}, it took {plain_reg_ms} ms; the fastest fused kernel of that run at any limits, {fused}, took {fused_ms} ms, {ratio} as fast, where against the lesson's plain ({plain_ms} ms, written to be read) it is {lesson_ratio} as fast. The smaller ratio is the fairer measure of what fusing saves on this GPU. {kernel} needs more workgroup memory than WebGPU grants by default, so it was timed at the device's largest limits, and Time does not run it.",
    {
      kernel: fair.kernel,
      n: fmt(f.n),
      d: String(f.d),
      plain_reg_ms: msText(f.plain_reg_ms),
      fused: f.fused.kernel,
      fused_ms: msText(f.fused.medianMs),
      ratio: times(f.plain_reg_ms / f.fused.medianMs),
      plain_ms: f.plain_ms ? msText(f.plain_ms) : "–",
      lesson_ratio: f.plain_ms ? times(f.plain_ms / f.fused.medianMs) : "–",
    },
  );
  // where plain-reg beat every fused kernel (d = 128 on the H200), say why on the same screen
  const why =
    f.plain_reg_ms < f.fused.medianMs
      ? " " +
        _(
          "Here {kernel} was faster than every fused kernel: at this d both run near the arithmetic roof, so the bytes that fusing saves no longer set the pace.",
          { kernel: fair.kernel },
        )
      : "";
  return html`${words}${why} ${h200Words(fair)}.`;
}

/**
 * The H200's measured figures at the measured size nearest p's (the form's), into
 * `container`, labelled as measured on an NVIDIA H200. why: "no-webgpu" or "software".
 */
export async function renderMeasured(container, p, why, software = null) {
  let data;
  try {
    data = await measuredTable();
  } catch (err) {
    const words = _("The H200's measured figures could not be loaded ({error}).", { error: err.message });
    setHtml(container, html`<p>${words}</p>`);
    container.hidden = false;
    return;
  }
  const direction = p.direction === "backward" ? "backward" : "forward";
  const source = data[direction];
  if (!source) return;
  // a size the form does not hold as a number: the form's own default (lab.toml, as built)
  const formDefault = (id) => Number($(id).defaultValue);
  const want = { n: Number(p.n) || formDefault("n"), d: Number(p.d) || formDefault("d"), causal: Boolean(p.causal) };
  const s = nearestSize(source.sizes, want);
  if (!s) return;
  const plain = s.kernels.find((k) => k.kernel.startsWith("plain"));
  const dirWord = direction === "backward" ? _("Backward") : _("Forward");
  const maskWord = s.causal ? pgettext("attention mask", "causal") : pgettext("attention mask", "full");
  const w = {
    title: _("Measured on an {device}, not on your GPU", { device: source.device }),
    why:
      why === "software"
        ? _("{adapter} runs on the CPU, so here are real GPU times for comparison:", { adapter: software })
        : _("This browser cannot time the kernels on a GPU, so here are real times from one:"),
    size: _(
      "{direction} pass at the measured size nearest yours: N = {n}, d = {d}, {mask}, {heads} heads, float32 (your form: N = {your_n}, d = {your_d}).",
      {
        direction: dirWord,
        n: fmt(s.n),
        d: String(s.d),
        mask: maskWord,
        heads: String(s.heads),
        your_n: fmt(want.n),
        your_d: String(want.d),
      },
    ),
    caption: _("Times on an NVIDIA H200 (all heads)"),
    kernel: _("Kernel"),
    gbps: _("GB/s (counted bytes)"),
    intensity: _("FLOP per byte"),
    speedup: plain ? _("Speed-up over {plain}", { plain: plain.kernel }) : _("Speed-up over plain"),
    mask:
      s.causal === want.causal
        ? ""
        : want.causal
          ? _(
              "The H200 was timed here with full attention only: your form's causal mask skips about half the tile pairs, so its times would be about half these.",
            )
          : _(
              "The H200 was timed here with the causal mask only: your form's full attention visits every tile pair, about twice the work.",
            ),
    roofline: data.roofline
      ? data.roofline.flop_roof === "sgemm"
        ? _(
            "Its roofline: copy {gbps} GB/s by the lab's copy probe, measured on {date} with {command}; float32 {gflops} GFLOP/s, the SGEMM the forward benchmark recorded on the same card (PyTorch, no TF32), above the lab's FMA probe's {fma} GFLOP/s, since a kernel can pass the probe's rate; ridge {ridge} FLOP per byte.",
            {
              gbps: rate(data.roofline.bytes_per_second / 1e9),
              gflops: rate(data.roofline.flop_per_second / 1e9),
              fma: rate(data.roofline.fma_flop_per_second / 1e9),
              ridge: rate(data.roofline.ridge_flop_per_byte),
              date: data.roofline.date,
              command: data.roofline.command,
            },
          )
        : _(
            "Its roofline, by the same probes as the lab's: copy {gbps} GB/s, float32 {gflops} GFLOP/s, ridge {ridge} FLOP per byte, measured on {date} with {command}.",
            {
              gbps: rate(data.roofline.bytes_per_second / 1e9),
              gflops: rate(data.roofline.flop_per_second / 1e9),
              ridge: rate(data.roofline.ridge_flop_per_byte),
              date: data.roofline.date,
              command: data.roofline.command,
            },
          )
      : _("The H200's roofline (copy bandwidth and float32 rate by the lab's probes) has not been measured yet."),
  };
  const rows = s.kernels.map(
    (k) => html`<tr><th scope="row">${k.kernel}</th><td data-label="ms">${rate(k.medianMs)}</td>
      <td data-label="GFLOP/s">${rate(k.gflops)}</td><td data-label="${w.gbps}">${rate(k.gbps)}</td>
      <td data-label="${w.intensity}">${rate(k.intensity)}</td>
      <td data-label="${w.speedup}">${plain && k !== plain ? times(plain.medianMs / k.medianMs) : "–"}</td></tr>`,
  );
  // kernels the plan says repeat another's run (course/measured.py _fold, plan.same_runs), as Time folds them
  const sameWords = ({ kernel, as }) =>
    _("{kernel} runs the same shaders at the same tiles and constants as {as}: it is timed once, in {as}'s row.", {
      kernel,
      as,
    });
  const same = (s.same || []).map((x) => html`<li id="h200-${x.kernel}-same">${sameWords(x)}</li>`);
  const fair = direction === "forward" ? fairPlainWords(data.fair_plain, s) : "";
  setHtml(
    container,
    html`<section class="h200-figures" aria-labelledby="h200-title"><h4 id="h200-title">${w.title}</h4>
    <p>${w.why} ${w.size} ${w.mask}</p>
    <div class="table-scroll" tabindex="0" role="region" aria-label="${w.caption}"><table class="numbers stack" id="h200-table"><caption>${w.caption}</caption>
      <thead><tr><th scope="col">${w.kernel}</th><th scope="col">ms</th><th scope="col">GFLOP/s</th><th scope="col">${w.gbps}</th><th scope="col">${w.intensity}</th><th scope="col">${w.speedup}</th></tr></thead>
      <tbody>${rows}</tbody></table></div>
    ${same.length ? html`<ul class="note" id="h200-same">${same}</ul>` : ""}
    <p class="note" id="h200-source">${h200Words(source)}.</p>
    ${fair ? html`<p id="h200-fair">${fair}</p>` : ""}
    <p class="note" id="h200-roofline">${w.roofline}</p></section>`,
  );
  container.hidden = false;
}

/** Time could not reach a GPU (no WebGPU, no adapter): show the H200's figures instead. */
export async function showMeasuredInstead(p) {
  $("time-result").hidden = false;
  await renderMeasured($("time-h200"), p, "no-webgpu");
}

// ---- after Time ------------------------------------------------------------------------

function forwardPoints(result, counts, softmaxFlop) {
  const points = [];
  for (const [name, k] of Object.entries(result.kernels || {})) {
    const traffic = counts[name] || (counts.timed || {})[name];
    if (!k || !traffic) continue;
    const role = name === "plain" || name === "fused" ? name : null;
    points.push({ label: name, kind: "kernel", role, bytes: traffic.total_bytes, flop: k.flop, gflops: k.gflops });
  }
  const plain = counts.plain;
  const half = plain.causal ? 0.5 : 1;
  const n2 = plain.n * plain.n * half;
  const flop = { scores: 2 * n2 * plain.d, softmax: softmaxFlop * n2, pv: 2 * n2 * plain.d };
  for (const [pass, f] of Object.entries(flop)) {
    const bytes = (plain.per_pass || {})[pass];
    if (bytes) points.push({ label: `plain: ${pass}`, kind: "pass", bytes, flop: f, gflops: null });
  }
  return points;
}

function backwardPoints(result, counts) {
  const traffic = {
    [counts.plain.kernel]: counts.plain,
    [counts.fused.kernel]: counts.fused,
    [counts.selected.kernel]: counts.selected,
  };
  return Object.entries(result.kernels || {})
    .filter(([name]) => traffic[name])
    .map(([name, k]) => ({
      label: name,
      kind: "kernel",
      role: name === counts.plain.kernel ? "plain" : name === counts.fused.kernel ? "fused" : null,
      bytes: traffic[name].total_bytes,
      flop: k.flop,
      gflops: k.gflops,
    }));
}

function h200Layer(data, direction, want) {
  const source = data && data[direction];
  const s = source && nearestSize(source.sizes, want);
  if (!s) return null;
  const pts = [
    ...s.kernels,
    ...(direction === "forward" ? s.passes.map((p) => ({ ...p, kernel: `plain: ${p.pass}` })) : []),
  ];
  const roof = data.roofline
    ? {
        bytesPerSecond: data.roofline.bytes_per_second,
        flopPerSecond: data.roofline.flop_per_second,
        ridge: data.roofline.ridge_flop_per_byte,
      }
    : null;
  return {
    points: pts
      .filter((k) => k.intensity > 0)
      .map((k) => ({ label: k.kernel, intensity: k.intensity, gflops: k.gflops })),
    roof,
    source: `${source.file}, ${source.date}; N = ${fmt(s.n)}, d = ${s.d}`,
  };
}

/**
 * After Time: measure the probes (once a visit), then draw the roofline into
 * #time-roofline and, on a software adapter, the H200's figures into #time-h200.
 * {g: the gpu module, probe: probeGpu's answer, result: the timing, counts: Count's reply,
 * direction: "forward" or "backward", params: the form, probePlan: the probes' plan for
 * this adapter as lab_api's "time" reply brings it, {ok, result | errors}}. Never throws:
 * a failure is a sentence in the card, and the times already shown stay.
 */
export async function rooflineAfterTime({ g, probe, result, counts, direction, params, probePlan }) {
  const container = $("time-roofline");
  const before = status.textContent;
  try {
    status.textContent = _("Measuring your GPU's copy bandwidth and arithmetic rate (2 s at most)…");
    if (!probePlan.ok) throw new Error(probePlan.errors[0].message);
    const probes = await g.measureProbes(probePlan.result, JSON.stringify(probe.adapterInfo || {}));
    let data = null;
    try {
      data = await measuredTable();
    } catch {
      data = null; // the roofline stands without the H200's layer
    }
    const s = counts.selected;
    const want = { n: Number(s.n), d: Number(s.d), causal: Boolean(s.causal) };
    const softmaxFlop = data ? data.conventions.softmax_flop_per_score : 0;
    const points =
      direction === "backward" ? backwardPoints(result, counts) : forwardPoints(result, counts, softmaxFlop);
    const kernels = result.kernels || {};
    const plainName = direction === "backward" ? counts.plain.kernel : "plain";
    const fusedName = direction === "backward" ? counts.fused.kernel : "fused";
    const counted = {
      fewer: counts.plain.total_bytes / counts.fused.total_bytes,
      speedup:
        kernels[plainName] && kernels[fusedName] ? kernels[plainName].medianMs / kernels[fusedName].medianMs : null,
    };
    renderRoofline(
      container,
      {
        points,
        counted,
        software: probe.software,
        h200: h200Layer(data, direction, want),
        softmaxFlop,
        passesNote:
          direction === "backward"
            ? _("The backward kernels' passes are not drawn: Time does not time them alone.")
            : "",
      },
      probes,
    );
    if (probe.software) await renderMeasured($("time-h200"), params, "software", probe.software);
    status.textContent = before;
  } catch (err) {
    const words = _("The roofline could not be measured on this GPU ({error}). The times above stand.", {
      error: (err && err.message) || String(err),
    });
    setHtml(container, html`<p>${words}</p>`);
    container.hidden = false;
    status.textContent = before;
  }
}
