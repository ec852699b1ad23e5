// Time: the WGSL kernels on the visitor's GPU (../gpu/), each checked against
// float64 first. The GPU code turns every WebGPU failure into one GpuError
// {kind, message}; showGpuFailure is this file's one path for all of them, and
// Count and Check never depend on the GPU.
import { client } from "./client.js";
import { renderCount } from "./count.js";
import { $, alertBox, clearErrors, markShown, readForm, setBusy, showErrors, status, writeHash } from "./form.js";
import { fmt, msText, rate, sci } from "./format.js";
import { html, setHtml } from "./html.js";
import { resultOf } from "./reply.js";

let gpuModule = null;
let lastGpuFailure = null;

async function gpu() {
  if (!gpuModule) {
    try {
      gpuModule = await import("../gpu/index.js");
    } catch (err) {
      throw { kind: "fetch", message: `The page could not load its WebGPU code (${err.message}).` };
    }
  }
  return gpuModule;
}

// Failures after which a fresh device may well work.
const RETRYABLE = new Set(["device-lost", "out-of-memory", "validation", "internal", "fetch"]);

function renderGpuCard(probe) {
  const info = probe.adapterInfo || {};
  const lim = probe.limits || {};
  const feat = probe.features || {};
  const yes = (b) => (b ? "yes" : "no");
  const name = [info.vendor, info.architecture].filter(Boolean).join(", ") || "not reported";
  const sizes =
    info.subgroupMinSize === info.subgroupMaxSize
      ? `${info.subgroupMinSize}`
      : `${info.subgroupMinSize}–${info.subgroupMaxSize}`;
  setHtml(
    $("gpu-card"),
    html`<div class="gpu-card"><h4>Your GPU</h4><dl>
    <dt>Adapter</dt><dd>${name}</dd>
    ${info.description ? html`<dt>Description</dt><dd>${info.description}</dd>` : ""}
    <dt>Workgroup memory</dt><dd>${fmt(lim.maxComputeWorkgroupStorageSize || 0)} B</dd>
    <dt>Largest storage buffer</dt><dd>${fmt(lim.maxStorageBufferBindingSize || 0)} B</dd>
    <dt>Invocations per workgroup</dt><dd>${fmt(lim.maxComputeInvocationsPerWorkgroup || 0)}</dd>
    <dt>Timestamp queries</dt><dd>${yes(feat.timestamp)}</dd>
    <dt>Subgroups</dt><dd>${yes(feat.subgroups)}${feat.subgroups && info.subgroupMinSize ? ` (${sizes} invocations)` : ""}</dd>
    <dt>16-bit floats (f16)</dt><dd>${yes(feat.f16)}</dd></dl></div>`,
  );
}

/** The one place a GPU failure becomes words: #lab-alert (role=alert) and a Retry button. */
function showGpuFailure(err) {
  const kind = (err && err.kind) || "internal";
  let message = (err && err.message) || String(err);
  if (kind === "shader") message = `Your browser could not compile one of the WGSL kernels: ${message}.`;
  if (!/Count and Check still work/.test(message)) {
    message += " Count and Check still work: they run in Python, not on the GPU.";
  }
  lastGpuFailure = kind;
  alertBox.dataset.kind = kind;
  alertBox.textContent = message;
  $("time-retry").hidden = !RETRYABLE.has(kind);
  status.textContent = "Time did not run.";
}

export async function doTime() {
  clearErrors();
  $("time-retry").hidden = true;
  const p = readForm();
  setBusy(true, "time");
  try {
    status.textContent = "Looking for a WebGPU adapter…";
    const g = await gpu();
    if (lastGpuFailure && RETRYABLE.has(lastGpuFailure)) g.resetDevice();
    lastGpuFailure = null;
    const probe = await g.probeGpu();
    if (!probe.ok) {
      showGpuFailure(probe.error || { kind: "no-adapter", message: probe.reason });
      return;
    }
    renderGpuCard(probe);
    // The emulator decides whether this size fits this GPU (emulator/api.py gpu_plan)...
    const pyPlan = resultOf(await client.request("gpu_plan", p, { limits: probe.limits }), showErrors);
    if (!pyPlan) return;
    const counts = resultOf(await client.request("count", p), showErrors);
    if (!counts) return;
    renderCount(counts);
    markShown("count-result", p);
    const s = counts.selected;
    const n = Number(s.n);
    const d = Number(s.d);
    const workgroupBytes = Number(s.workgroup_bytes);
    // ...and the page's planner names every other limit a kernel can pass
    // (invocations per workgroup, workgroups per dispatch, buffers per stage).
    const manifest = await g.loadManifest();
    const plan = g.planDevice(manifest, { kernels: ["plain", "fused"], n, d, workgroupBytes }, probe.limits);
    if (!plan.fits) {
      showErrors([{ field: plan.refusal.field, message: plan.refusal.message }]);
      return;
    }
    status.textContent = "Timing the plain and fused kernels on your GPU…";
    // The lesson's kernels, plus the tuned fused kernels that fit this GPU's
    // workgroup memory (the manifest says how much each declares).
    const kernels = ["plain", "fused"];
    const wgLimit = Number((probe.limits || {}).maxComputeWorkgroupStorageSize || 16384);
    const leftOut = [];
    for (const [name, t] of Object.entries(counts.timed || {})) {
      const need = Number(t.workgroup_bytes);
      if (need <= wgLimit) kernels.push(name);
      else leftOut.push({ name, need });
    }
    // Check before timing: every kernel's output at a small ragged size goes
    // back to Python and through the float64 checker, so a wrong kernel can
    // never report a speed-up unnoticed. One device for the checks and the timing.
    await g.openDevice({ kernels, n, d, heads: 1, workgroupBytes, extraLimits: pyPlan.required_limits });
    const checkN = Math.min(n, 300);
    const checks = {};
    const data = resultOf(await client.request("inputs", { ...p, n: String(checkN) }), showErrors);
    if (!data) return;
    for (const kernel of kernels) {
      status.textContent = `Checking ${kernel} on your GPU at N = ${fmt(checkN)} before timing it…`;
      const run = await g.runAttention({
        kernel,
        n: checkN,
        d,
        causal: Boolean(s.causal),
        Q: Float32Array.from(data.Q),
        K: Float32Array.from(data.K),
        V: Float32Array.from(data.V),
        workgroupBytes,
      });
      const rep = await client.request(
        "check_output",
        { ...p, kernel, n: String(checkN) },
        { outputs: Array.from(run.O) },
      );
      checks[kernel] = rep.ok ? rep.result : { passed: false, max_abs_error: NaN, error: rep.errors[0].message };
    }
    status.textContent = "Timing the kernels on your GPU…";
    const result = await g.timeKernels({ n, d, causal: Boolean(s.causal), heads: 1, kernels, workgroupBytes });
    writeHash(p);
    renderTime(result, counts, { n, d, causal: Boolean(s.causal), checks, checkN, leftOut, wgLimit });
    markShown("time-result", p);
  } catch (err) {
    showGpuFailure(err);
  } finally {
    setBusy(false);
  }
}

function renderTime(result, counts, { n, d, causal, checks = {}, checkN = 0, leftOut = [], wgLimit = 0 }) {
  const kernels = result.kernels || {};
  const rows = [];
  const plain = kernels.plain;
  for (const [name, k] of Object.entries(kernels)) {
    const traffic = counts[name] || (counts.timed || {})[name];
    if (!k || !traffic) continue;
    const bytes = traffic.total_bytes;
    const ms = k.medianMs;
    const low = k.belowResolution ? " (below the timer's resolution)" : "";
    const speed = plain && name !== "plain" ? `${(plain.medianMs / ms).toFixed(2)}×` : "–";
    const c = checks[name];
    const checked = !c
      ? "–"
      : c.passed
        ? html`<span class="verdict-pass">passed</span> (${sci(c.max_abs_error)})`
        : html`<span class="verdict-fail">failed</span> (${c.error ? c.error : sci(c.max_abs_error)})`;
    const shaders = (k.shaders || []).map((file, i) => (i ? html`<br>${file}` : file));
    rows.push(html`<tr><th scope="row">${name}<br><span class="note">B_r = ${traffic.block_rows}, B_c = ${traffic.block_cols}</span><br><span class="note" id="time-${name}-shader">${shaders}</span></th>
      <td id="time-${name}-ms">${msText(ms)}${low}</td>
      <td>${rate(k.gflops)}</td><td>${fmt(bytes)}</td><td>${rate(bytes / (ms / 1000) / 1e9)}</td>
      <td id="time-${name}-speedup">${speed}</td>
      <td id="time-${name}-check">${checked}</td>
      <td>${k.samples} × ${k.method === "timestamp" ? "GPU timestamps" : "wall clock"}</td></tr>`);
  }
  const speedup = result.speedup;
  const fastest = Object.entries(kernels)
    .filter(([name]) => name !== "plain" && name !== "fused")
    .map(([name, k]) => [name, plain ? plain.medianMs / k.medianMs : null]);
  const fastNote = fastest.length
    ? html`<p>The lesson's fused kernel gives each query row one invocation, like the film's picture; the tuned
       kernels (${fastest.map(([name]) => name).join(", ")}) tile differently, so each has its own count above.
       Fusion saves bytes; a fast kernel also needs its arithmetic laid out for the hardware.</p>`
    : "";
  const wrong = Object.values(checks).some((c) => !c.passed);
  setHtml(
    $("time-body"),
    html`
    <p>N = ${fmt(n)}, d = ${d}${causal ? ", causal" : ""}, one head, float32, median of the samples.
      Before timing, each kernel ran once at N = ${fmt(checkN)} on the same seeded inputs as Check, and its output
      went through the float64 checker (largest error in brackets).</p>
    ${wrong ? html`<p class="verdict-fail" id="time-check-warning">A kernel gave wrong answers on this GPU: its time measures nothing useful.</p>` : ""}
    <div class="table-scroll" tabindex="0" role="region" aria-label="Times on your GPU"><table class="numbers"><caption>Times on your GPU</caption>
      <thead><tr><th scope="col">Kernel</th><th scope="col">ms</th><th scope="col">GFLOP/s</th><th scope="col">Bytes (counted)</th><th scope="col">GB/s</th><th scope="col">Speed-up over plain</th><th scope="col">Checked first (N = ${fmt(checkN)})</th><th scope="col">Samples × timer</th></tr></thead>
      <tbody>${rows}</tbody></table></div>
    ${speedup ? html`<p>Fused (the lesson's kernel) speed-up over plain: <strong id="time-speedup">${speedup.toFixed(2)}×</strong>.</p>` : ""}
    ${fastNote}
    ${leftOut.length ? html`<p id="time-left-out">Not timed here: ${leftOut.map((k) => `${k.name} needs ${fmt(k.need)} B of workgroup memory at d = ${d}`).join("; ")}, and this GPU offers ${fmt(wgLimit)} B.</p>` : ""}
    <p class="note">${result.flopConvention || ""} GB/s divides the emulator's byte count by the time;
      caches can make it exceed what memory alone delivers. ${result.note || ""}</p>`,
  );
  $("time-result").hidden = false;
  const best = fastest.filter(([, x]) => x).sort((a, b) => b[1] - a[1])[0];
  status.textContent = speedup
    ? `Timed: the lesson's fused kernel is ${speedup.toFixed(2)} times as fast as plain` +
      (best ? `, ${best[0]} ${best[1].toFixed(2)} times.` : ".")
    : "Timed.";
}
