// Time: the WGSL kernels on the visitor's GPU (../gpu/), each checked against
// float64 first. The GPU code turns every WebGPU failure into one GpuError
// {kind, message}; showGpuFailure is this file's one path for all of them, and
// Count and Check never depend on the GPU.
import { ratioChart } from "../bars.js";
import { _, pgettext } from "../i18n.js";
import { client } from "./client.js";
import { renderCount } from "./count.js";
import { $, alertBox, clearErrors, markShown, readForm, setBusy, showErrors, status, writeHash } from "./form.js";
import { fmt, msText, rate, sci, size, times } from "./format.js";
import { fillHtml, html, setHtml } from "./html.js";
import { resultOf } from "./reply.js";

let gpuModule = null;
let lastGpuFailure = null;

export async function gpu() {
  if (!gpuModule) {
    try {
      gpuModule = await import("../gpu/index.js");
    } catch (err) {
      throw { kind: "fetch", message: _("The page could not load its WebGPU code ({error}).", { error: err.message }) };
    }
  }
  return gpuModule;
}

// Failures after which a fresh device may well work.
const RETRYABLE = new Set(["device-lost", "out-of-memory", "validation", "internal", "fetch"]);

export function renderGpuCard(probe) {
  const info = probe.adapterInfo || {};
  const lim = probe.limits || {};
  const feat = probe.features || {};
  const yes = (b) => (b ? _("yes") : _("no"));
  const name = [info.vendor, info.architecture].filter(Boolean).join(", ") || _("not reported");
  const sizes =
    info.subgroupMinSize === info.subgroupMaxSize
      ? `${info.subgroupMinSize}`
      : `${info.subgroupMinSize}–${info.subgroupMaxSize}`;
  // Words outside the html`` literals, where Babel's extractor finds them.
  const w = {
    title: _("Your GPU"),
    adapter: _("Adapter"),
    description: _("Description"),
    workgroup: _("Workgroup memory"),
    buffer: _("Largest storage buffer"),
    invocations: _("Invocations per workgroup"),
    timestamps: _("Timestamp queries"),
    subgroups: _("Subgroups"),
    f16: _("16-bit floats (f16)"),
    subgroupSizes:
      feat.subgroups && info.subgroupMinSize ? _("yes ({sizes} invocations)", { sizes }) : yes(feat.subgroups),
  };
  setHtml(
    $("gpu-card"),
    html`<div class="gpu-card"><h4>${w.title}</h4><dl>
    <dt>${w.adapter}</dt><dd>${name}</dd>
    ${info.description ? html`<dt>${w.description}</dt><dd>${info.description}</dd>` : ""}
    <dt>${w.workgroup}</dt><dd>${fmt(lim.maxComputeWorkgroupStorageSize || 0)} B</dd>
    <dt>${w.buffer}</dt><dd>${fmt(lim.maxStorageBufferBindingSize || 0)} B</dd>
    <dt>${w.invocations}</dt><dd>${fmt(lim.maxComputeInvocationsPerWorkgroup || 0)}</dd>
    <dt>${w.timestamps}</dt><dd>${yes(feat.timestamp)}</dd>
    <dt>${w.subgroups}</dt><dd>${w.subgroupSizes}</dd>
    <dt>${w.f16}</dt><dd>${yes(feat.f16)}</dd></dl></div>`,
  );
}

/** The one place a GPU failure becomes words: #lab-alert (role=alert) and a Retry button. */
export function showGpuFailure(err) {
  const kind = (err && err.kind) || "internal";
  let message = (err && err.message) || String(err);
  if (kind === "shader")
    message = _("Your browser could not compile one of the WGSL kernels: {error}.", { error: message });
  const still = _("Count and Check still work: they run in Python, not on the GPU.");
  if (!message.includes(still.split(":")[0])) message += " " + still;
  lastGpuFailure = kind;
  alertBox.dataset.kind = kind;
  alertBox.textContent = message;
  $("time-retry").hidden = !RETRYABLE.has(kind);
  status.textContent = _("Time did not run.");
}

let controller = null;

/** Stop Time after the sample it is on; the results shown before stay. */
export function cancelTime() {
  if (controller) controller.abort();
  status.textContent = _("Cancelling Time after this step…");
}

function stopIfCancelled() {
  if (controller && controller.signal.aborted) throw { kind: "cancelled", message: _("Time cancelled.") };
}

/** The result of a worker reply during Time; stops (as cancelled) if Cancel was pressed meanwhile. */
function timeResult(reply) {
  stopIfCancelled();
  return resultOf(reply, showErrors);
}

export async function doTime() {
  clearErrors();
  $("time-retry").hidden = true;
  const p = readForm();
  controller = new AbortController();
  const signal = controller.signal;
  setBusy(true, "time");
  try {
    status.textContent = _("Looking for a WebGPU adapter…");
    const g = await gpu();
    if (lastGpuFailure && RETRYABLE.has(lastGpuFailure)) g.resetDevice();
    lastGpuFailure = null;
    const probe = await g.probeGpu();
    if (!probe.ok) {
      showGpuFailure(probe.error || { kind: "no-adapter", message: probe.reason });
      return;
    }
    renderGpuCard(probe);
    stopIfCancelled();
    // The emulator plans every run (emulator/plan.py): whether this size fits this GPU,
    // each kernel's tiles, shaders and dispatches, and the limits to ask for. Time runs
    // the lesson's kernels, plus the tuned fused kernels that fit this GPU's workgroup
    // memory ("optional": the others come back in left_out).
    const gpuParams = { limits: probe.limits, subgroup_min_size: g.subgroupMinOf(probe), instrumented: false };
    const plan = timeResult(await client.request("gpu_plan", p, { ...gpuParams, optional: "timed" }));
    if (!plan) return;
    const counts = timeResult(await client.request("count", p));
    if (!counts) return;
    renderCount(counts);
    markShown("count-result", p);
    const s = counts.selected;
    const n = Number(s.n);
    const d = Number(s.d);
    const causal = Boolean(s.causal);
    const workgroupBytes = Number(s.workgroup_bytes);
    const kernels = ["plain", "fused", ...plan.optional];
    const wgLimit = Number((probe.limits || {}).maxComputeWorkgroupStorageSize || 16384);
    const leftOut = plan.left_out.map((k) => ({ name: k.kernel, need: k.need }));
    // Check before timing: every kernel's output at a small ragged size goes
    // back to Python and through the float64 checker, so a wrong kernel can
    // never report a speed-up unnoticed. One device for the checks and the timing.
    await g.openDevice(plan);
    const checkN = Math.min(n, 300);
    const checkPlan = timeResult(
      await client.request("gpu_plan", { ...p, n: String(checkN) }, { ...gpuParams, kernels }),
    );
    if (!checkPlan) return;
    const checks = {};
    const data = timeResult(await client.request("inputs", { ...p, n: String(checkN) }));
    if (!data) return;
    for (const [i, kernel] of kernels.entries()) {
      status.textContent = _("Checking on your GPU before timing: kernel {i} of {k} ({kernel}), N = {n}…", {
        i: String(i + 1),
        k: String(kernels.length),
        kernel,
        n: fmt(checkN),
      });
      const run = await g.runAttention({
        plan: checkPlan,
        kernel,
        Q: Float32Array.from(data.Q),
        K: Float32Array.from(data.K),
        V: Float32Array.from(data.V),
      });
      stopIfCancelled();
      const rep = await client.request(
        "check_output",
        { ...p, kernel, n: String(checkN) },
        { outputs: Array.from(run.O) },
      );
      stopIfCancelled();
      checks[kernel] = rep.ok ? rep.result : { passed: false, max_abs_error: NaN, error: rep.errors[0].message };
    }
    const result = await g.timeKernels({
      plan,
      kernels,
      signal,
      onProgress: ({ kernel, index, kernels: of, sample, samples }) => {
        status.textContent = _("Timing on your GPU: kernel {i} of {k} ({kernel}), sample {sample} of {samples}…", {
          i: String(index),
          k: String(of),
          kernel,
          sample: String(Math.min(sample + 1, samples)),
          samples: String(samples),
        });
      },
    });
    writeHash(p);
    renderTime(result, counts, { n, d, causal, workgroupBytes, checks, checkN, leftOut, wgLimit, probe });
    markShown("time-result", p);
  } catch (err) {
    if (err && err.kind === "cancelled") {
      status.textContent = _("Time cancelled. Earlier results are kept.");
    } else {
      showGpuFailure(err);
    }
  } finally {
    controller = null;
    setBusy(false);
  }
}

// One sentence each on why a tuned kernel tiles differently (site/content/lab.toml [tuned]).
function tunedNotes() {
  try {
    return JSON.parse($("time-result").dataset.notes || "{}");
  } catch {
    return {};
  }
}

/**
 * The time table's rows, one per timed kernel, and the figures the rest of the card reads:
 * {rows, ratios: [{label, counted, measured}], stats: {kernel: {bytes, ms, gbps, intensity,
 * speedup, fewer, traffic}}}.
 */
function timeRows(kernels, counts, checks, head, workgroupBytes) {
  const plain = kernels.plain;
  const rows = [];
  const ratios = [];
  const stats = {};
  for (const [name, k] of Object.entries(kernels)) {
    const traffic = counts[name] || (counts.timed || {})[name];
    if (!k || !traffic) continue;
    const bytes = traffic.total_bytes;
    const ms = k.medianMs;
    const st = {
      bytes,
      ms,
      gbps: bytes / (ms / 1000) / 1e9,
      intensity: k.flop / bytes,
      speedup: plain ? plain.medianMs / ms : null,
      fewer: counts.plain ? counts.plain.total_bytes / bytes : null,
      traffic,
    };
    stats[name] = st;
    if (name !== "plain" && st.speedup && st.fewer)
      ratios.push({ label: name, counted: st.fewer, measured: st.speedup });
    const low = k.belowResolution ? " " + _("(below the timer's resolution)") : "";
    const c = checks[name];
    const checked = !c
      ? "–"
      : c.passed
        ? html`<span class="verdict-pass">${head.passed}</span> (${sci(c.max_abs_error)})`
        : html`<span class="verdict-fail">${head.failed}</span> (${c.error ? c.error : sci(c.max_abs_error)})`;
    const timer =
      k.method === "timestamp"
        ? _("{samples} × GPU timestamps", { samples: String(k.samples) })
        : _("{samples} × wall clock", { samples: String(k.samples) });
    const shaders = (k.shaders || []).map((file, i) => (i ? html`<br>${file}` : file));
    const wb = Number(traffic.workgroup_bytes);
    const atM = wb === workgroupBytes ? `M = ${fmt(wb)} B` : _("{bytes} B of workgroup memory", { bytes: fmt(wb) });
    rows.push(html`<tr><th scope="row">${name}<br><span class="note">B_r = ${traffic.block_rows}, B_c = ${traffic.block_cols}, ${atM}</span><br><span class="note" id="time-${name}-shader">${shaders}</span></th>
      <td data-label="${head.bytes}">${fmt(bytes)}<br><span class="note">${size(bytes)}</span></td>
      <td data-label="ms" id="time-${name}-ms">${msText(ms)}${low}</td>
      <td data-label="GB/s" id="time-${name}-gbps">${rate(st.gbps)}</td>
      <td data-label="GFLOP/s" id="time-${name}-gflops">${rate(k.gflops)}</td>
      <td data-label="${head.intensity}" id="time-${name}-intensity">${rate(st.intensity)}</td>
      <td data-label="${head.speedup}" id="time-${name}-speedup">${name === "plain" ? "–" : times(st.speedup)}</td>
      <td data-label="${head.checked}" id="time-${name}-check">${checked}</td>
      <td data-label="${head.samples}">${timer}</td></tr>`);
  }
  return { rows, ratios, stats };
}

/** One list item per tuned kernel: why it tiles differently, and at which M it ran. */
function tunedItems(tuned, stats, d, workgroupBytes) {
  const notes = tunedNotes();
  return tuned.map((name) => {
    const t = stats[name] ? stats[name].traffic : {};
    const wb = Number(t.workgroup_bytes);
    const m =
      wb === workgroupBytes
        ? _("Counted and run at M = {m} B, as the form says.", { m: fmt(wb) })
        : _(
            "Counted and run with its own {bytes} B of workgroup memory at d = {d}, not the form's M = {m} B: its tiles are fixed for each d.",
            {
              bytes: fmt(wb),
              d: String(d),
              m: fmt(workgroupBytes),
            },
          );
    const note = notes[name] || _("A fused kernel tuned for timing.");
    return html`<li id="time-${name}-note"><strong>${name}</strong>: ${note} ${m}</li>`;
  });
}

/** The status line after Time: fused's counted and measured ratios, and the best tuned kernel. */
function timeStatus(f, best, software) {
  const summary = { fewer: f ? times(f.fewer) : "", speedup: f ? times(f.speedup) : "" };
  if (!(f && f.speedup)) return _("Timed.");
  return (
    (best.length
      ? _(
          "Timed: the lesson's fused kernel moves {fewer} fewer bytes and ran {speedup} as fast as plain; {kernel} {best}.",
          {
            ...summary,
            kernel: best[0][0],
            best: times(best[0][1]),
          },
        )
      : _("Timed: the lesson's fused kernel moves {fewer} fewer bytes and ran {speedup} as fast as plain.", summary)) +
    (software
      ? " " + _("{adapter} runs on the CPU: these times say nothing about a GPU's memory.", { adapter: software })
      : "")
  );
}

function renderTime(result, counts, opts) {
  const { n, d, causal, workgroupBytes, checks = {}, checkN = 0, leftOut = [], wgLimit = 0, probe = {} } = opts;
  const kernels = result.kernels || {};
  const plain = kernels.plain;
  const head = {
    kernel: _("Kernel"),
    bytes: _("Bytes (counted)"),
    intensity: _("FLOP per byte"),
    speedup: _("Speed-up over plain"),
    checked: _("Checked first (N = {n})", { n: fmt(checkN) }),
    samples: _("Samples × timer"),
    passed: pgettext("check verdict", "passed"),
    failed: pgettext("check verdict", "failed"),
  };
  const { rows, ratios, stats } = timeRows(kernels, counts, checks, head, workgroupBytes);
  const tuned = Object.keys(kernels).filter((name) => name !== "plain" && name !== "fused");
  const tunedList = tunedItems(tuned, stats, d, workgroupBytes);
  const wrong = Object.values(checks).some((c) => !c.passed);
  const software = probe.software;
  const f = stats.fused;
  const p = stats.plain;
  const best = tuned.map((name) => [name, stats[name] && stats[name].speedup]).filter(([, x]) => x);
  best.sort((a, b) => b[1] - a[1]);
  const lead =
    f && f.speedup
      ? fillHtml(_("Fused moves {fewer} fewer bytes than plain (counted) and ran {speedup} as fast (measured)."), {
          fewer: html`<strong id="time-fewer">${times(f.fewer)}</strong>`,
          speedup: html`<strong id="time-speedup">${times(f.speedup)}</strong>`,
        })
      : "";
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
  const needWords = (k) =>
    _("{kernel} needs {bytes} B of workgroup memory at d = {d}", { kernel: k.name, bytes: fmt(k.need), d: String(d) });
  // Words outside the html`` literals, where Babel's extractor finds them.
  const setup = { n: fmt(n), d: String(d), check_n: fmt(checkN) };
  const w = {
    software: _(
      "{adapter} runs WebGPU on this computer's CPU, not on a graphics chip. These times say nothing about a GPU's memory: they time CPU code, so do not read the lesson's claim from them.",
    ),
    setup: causal
      ? _(
          "N = {n}, d = {d}, causal, one head, float32, median of the samples. Before timing, each kernel ran once at N = {check_n} on the same seeded inputs as Check, and its output went through the float64 checker (largest error in brackets).",
          setup,
        )
      : _(
          "N = {n}, d = {d}, one head, float32, median of the samples. Before timing, each kernel ran once at N = {check_n} on the same seeded inputs as Check, and its output went through the float64 checker (largest error in brackets).",
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
    untuned: best.length
      ? _(
          "{title} The lesson's kernels are written to be read. The tuned kernels keep the same idea (S and P never leave the bench) with the arithmetic laid out for the hardware; the fastest here, {kernel}, ran {speedup} as fast as plain.",
        )
      : _(
          "{title} The lesson's kernels are written to be read. The tuned kernels keep the same idea (S and P never leave the bench) with the arithmetic laid out for the hardware.",
        ),
    untunedTitle: _("Untuned code."),
    tuned: _("Why the tuned kernels tile differently, each counted with its own tiles:"),
    leftOut: _("Not timed here: {kernels}, and this GPU offers {offer} B.", {
      kernels: leftOut.map(needWords).join("; "),
      offer: fmt(wgLimit),
    }),
    gbps: _(
      "GB/s divides the emulator's byte count by the time; caches can make it exceed what memory alone delivers.",
    ),
  };
  setHtml(
    $("time-body"),
    html`
    ${software ? html`<p class="time-software" id="time-software">${fillHtml(w.software, { adapter: html`<strong>${software}</strong>` })}</p>` : ""}
    <p>${w.setup}</p>
    ${wrong ? html`<p class="verdict-fail" id="time-check-warning">${w.wrong}</p>` : ""}
    <div class="table-scroll" tabindex="0" role="region" aria-label="${w.table}"><table class="numbers stack" id="time-table"><caption>${w.table}</caption>
      <thead><tr><th scope="col">${head.kernel}</th><th scope="col">${head.bytes}</th><th scope="col">ms</th><th scope="col">GB/s</th><th scope="col">GFLOP/s</th><th scope="col">${head.intensity}</th><th scope="col">${head.speedup}</th><th scope="col">${head.checked}</th><th scope="col">${head.samples}</th></tr></thead>
      <tbody>${rows}</tbody></table></div>
    <div id="time-chart"></div>
    <ul class="legend-inline" aria-hidden="true"><li><span class="swatch sw-counted"></span>${w.fewer}</li><li><span class="swatch sw-measured"></span>${w.fast}</li></ul>
    <div class="time-why" id="time-why">
      <p>${lead}${verdict}</p>
      <ul>
        <li>${fillHtml(w.memory, {
          title: html`<strong>${w.memoryTitle}</strong>`,
          gflop: rate(plain ? plain.flop / 1e9 : 0),
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
          kernel: best.length ? best[0][0] : "",
          speedup: best.length ? times(best[0][1]) : "",
        })}</li>
      </ul>
    </div>
    ${tuned.length ? html`<p>${w.tuned}</p><ul class="note" id="time-tuned">${tunedList}</ul>` : ""}
    ${leftOut.length ? html`<p id="time-left-out">${w.leftOut}</p>` : ""}
    <p class="note">${result.flopConvention || ""} ${w.gbps} ${result.note || ""}</p>`,
  );
  const ratioWords = (r) =>
    _("{kernel} moves {fewer} fewer bytes and ran {speedup} as fast", {
      kernel: r.label,
      fewer: times(r.counted),
      speedup: times(r.measured),
    });
  if (ratios.length) {
    $("time-chart").appendChild(
      ratioChart(ratios, {
        title: _("Against plain, for each kernel: {list}", { list: ratios.map(ratioWords).join("; ") }),
      }),
    );
  }
  $("time-result").hidden = false;
  status.textContent = timeStatus(f, best, software);
}
