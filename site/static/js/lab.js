// The lab: Count, Check and Time. Every rule about inputs lives in the Python
// emulator (emulator/tiling.py); this file only sends the raw form values and
// shows what comes back. Results already shown stay until a new one replaces them.
import { EmulatorClient } from "./emulator-client.js";
import { barChart, size } from "./bars.js";

const $ = (id) => document.getElementById(id);
const FIELDS = ["kernel", "n", "d", "workgroup_bytes", "seed", "input"];
const TENSORS = ["Q", "K", "V", "S", "P", "O"];
const fmt = (x) => Number(x).toLocaleString("en-US");
const sci = (x) => (typeof x === "number" ? x.toExponential(2) : String(x));

const form = $("lab-form");
const status = $("lab-status");
const alertBox = $("lab-alert");
const boot = $("boot");
const bootBar = $("boot-progress");
const bootLabel = $("boot-label");
const buttons = { count: $("count-button"), check: $("check-button"), time: $("time-button"), cancel: $("cancel-button") };

const client = new EmulatorClient({
  onProgress: ({ stage, percent }) => {
    bootLabel.textContent = stage;
    bootBar.value = percent;
    boot.hidden = percent >= 100;
  },
});

// ---- form state <-> URL fragment (a teacher can share a link) -------------
function readForm() {
  return {
    kernel: $("kernel").value,
    n: $("n").value,
    d: $("d").value,
    causal: $("causal").checked,
    workgroup_bytes: $("workgroup_bytes").value,
    seed: $("seed").value,
    input: form.querySelector("input[name=input]:checked").value,
    head: $("head").value,
  };
}

function writeHash(p) {
  const q = new URLSearchParams({ kernel: p.kernel, n: p.n, d: p.d, causal: p.causal ? "1" : "0", M: p.workgroup_bytes });
  if (p.input === "model") {
    q.set("input", "model");
    q.set("head", p.head);
  } else {
    q.set("seed", p.seed);
  }
  history.replaceState(null, "", "#" + q.toString());
}

function readHash() {
  const raw = location.hash.replace(/^#/, "");
  if (!raw.includes("=")) return false;
  const q = new URLSearchParams(raw);
  if ([...q.keys()].every((k) => k === "t")) return false; // #t=3:31 is the film's
  if (q.has("kernel")) {
    const k = q.get("kernel");
    if ([...$("kernel").options].some((o) => o.value === k)) $("kernel").value = k;
  }
  if (q.has("n")) $("n").value = q.get("n");
  if (q.has("d")) $("d").value = q.get("d");
  if (q.has("M")) $("workgroup_bytes").value = q.get("M");
  if (q.has("causal")) $("causal").checked = q.get("causal") === "1";
  if (q.has("seed")) $("seed").value = q.get("seed");
  if (q.get("input") === "model") {
    $("input-model").checked = true;
    if (q.has("head") && [...$("head").options].some((o) => o.value === q.get("head"))) $("head").value = q.get("head");
  } else if (q.has("input")) {
    $("input-random").checked = true;
  }
  return true;
}

// A shared link opens at the lab, with its settings filled in.
function openFromLink() {
  if (!readHash()) return;
  $("lab").scrollIntoView();
  status.textContent = "The settings from your link are filled in below. Press Count, Check or Time.";
}

// ---- messages ---------------------------------------------------------------
function clearErrors() {
  for (const f of FIELDS) {
    const box = $(`${f}-error`);
    if (box) box.textContent = "";
    const input = $(f === "input" ? "input-model" : f);
    if (input) input.removeAttribute("aria-invalid");
  }
  alertBox.textContent = "";
  delete alertBox.dataset.kind;
}

function showErrors(errors) {
  const spoken = [];
  for (const e of errors) {
    const box = $(`${e.field}-error`);
    if (box) {
      box.textContent = e.message;
      const input = $(e.field === "input" ? "input-model" : e.field);
      if (input) input.setAttribute("aria-invalid", "true");
      spoken.push(e.message);
    } else {
      alertBox.textContent = e.message;  // role=alert reads it; the status does not repeat it
    }
  }
  status.textContent = spoken.join(" ");
  // Focus stays where the learner is; the message sits next to its field
  // (linked by aria-describedby) and the summary above is read out.
}

// While Python or the GPU works, the action buttons say so with aria-disabled
// rather than the disabled attribute: a disabled button drops keyboard focus to
// <body>, and a keyboard user would lose their place.
let busy = false;
function setBusy(on, what) {
  busy = on;
  for (const key of ["count", "check", "time"]) {
    if (on) buttons[key].setAttribute("aria-disabled", "true");
    else buttons[key].removeAttribute("aria-disabled");
  }
  form.setAttribute("aria-busy", on ? "true" : "false");
  const cancelHadFocus = document.activeElement === buttons.cancel;
  buttons.cancel.hidden = !on || what !== "check";
  if (!on && !client.ready) boot.hidden = true;  // a failed start leaves no stuck progress bar
  if (cancelHadFocus && buttons.cancel.hidden) buttons.check.focus();
}

// Run one action unless another is running (Enter held down, double clicks).
function guarded(action) {
  return (event) => {
    if (event) event.preventDefault();
    if (busy) return;
    action();
  };
}

// ---- Results stay, but say when they are out of date ----------------------------
const shown = {};  // card id -> the settings its result was computed for
function settingsKey(card, p) {
  const base = [p.kernel, p.n, p.d, p.causal, p.workgroup_bytes];
  if (card === "check-result") base.push(p.input, p.input === "model" ? p.head : p.seed);
  return JSON.stringify(base);
}

function markShown(card, p) {
  shown[card] = settingsKey(card, p);
  markStale();
}

function markStale() {
  const p = readForm();
  for (const [card, key] of Object.entries(shown)) {
    const el = $(card);
    const stale = settingsKey(card, p) !== key;
    el.classList.toggle("stale", stale);
    let note = el.querySelector(".stale-note");
    if (!note) {
      note = document.createElement("p");
      note.className = "stale-note";
      el.querySelector("h3").after(note);
    }
    note.hidden = !stale;
    note.textContent = stale ? "These results are for earlier settings; press the button again to update them." : "";
  }
}

// ---- Count -------------------------------------------------------------------
function trafficTable(t, caption) {
  const rows = TENSORS.filter((name) => t.reads[name] || t.writes[name]).map((name) =>
    `<tr><td><span class="tensor t-${name}">${name}</span></td><td>${fmt(t.reads[name])}</td><td>${fmt(t.writes[name])}</td></tr>`
  ).join("");
  return `<table class="numbers"><caption>${caption}</caption>
    <thead><tr><th scope="col">Tensor</th><th scope="col">Read (bytes)</th><th scope="col">Written (bytes)</th></tr></thead>
    <tbody>${rows}</tbody>
    <tfoot><tr><th scope="row">Total</th><td colspan="2">${fmt(t.total_bytes)} bytes (${size(t.total_bytes)})</td></tr></tfoot></table>`;
}

function renderCount(r) {
  const s = r.selected;
  const body = $("count-body");
  const causal = s.causal ? ", causal" : "";
  body.innerHTML = `
    <p>${r.label}, N = ${fmt(s.n)}, d = ${s.d}${causal}, M = ${fmt(s.workgroup_bytes)} B:
       tiles of B_r = ${s.block_rows} query rows and B_c = ${s.block_cols} key rows (${fmt(s.query_tiles)} query ${s.query_tiles === 1 ? "tile" : "tiles"}).</p>
    <p class="big-number" id="count-total">${fmt(s.total_bytes)} bytes</p>
    <p>${size(s.total_bytes)} to and from global memory, one head, float32.</p>
    ${trafficTable(s, "Bytes per tensor, " + r.label)}
    <p>Plain moves <strong id="count-plain">${fmt(r.plain.total_bytes)}</strong> bytes, fused
       <strong id="count-fused">${fmt(r.fused.total_bytes)}</strong>: the plain kernel moves
       <strong id="count-ratio">${r.ratio.toFixed(1)}</strong> times as much.</p>
    <div id="count-chart"></div>
    <ul class="legend-inline" aria-hidden="true">${TENSORS.map((t) => `<li><span class="swatch sw-${t}"></span>${t}</li>`).join("")}</ul>`;
  const rows = [{ label: "Plain", traffic: r.plain }, { label: "Fused", traffic: r.fused }];
  for (const [name, t] of Object.entries(r.timed || {})) {
    rows.push({ label: t.label.length > 16 ? name : t.label, traffic: t });
  }
  $("count-chart").appendChild(barChart(rows, {
    title: `Bytes moved at N = ${fmt(s.n)}, d = ${s.d}: plain ${size(r.plain.total_bytes)}, fused ${size(r.fused.total_bytes)}`,
  }));
  if (Object.keys(r.timed || {}).length) {
    const notes = Object.entries(r.timed).map(([name, t]) =>
      `<li>${escapeHtml(name)}, ${escapeHtml(t.label)}: B_r = ${t.block_rows}, B_c = ${t.block_cols}, ${fmt(t.workgroup_bytes)} B of workgroup memory, ${fmt(t.total_bytes)} bytes moved.</li>`).join("");
    body.insertAdjacentHTML("beforeend", `<p class="note">Time also runs tuned fused kernels, on GPUs with enough workgroup memory for them. They tile differently from the lesson's kernel, so each has its own count:</p><ul class="note">${notes}</ul>`);
  }
  $("count-result").hidden = false;
  $("count-result").classList.remove("stale");
}

async function doCount() {
  clearErrors();
  const p = readForm();
  setBusy(true, "count");
  status.textContent = client.ready ? "Counting…" : "Starting Python, then counting…";
  const reply = await client.request("count", p);
  setBusy(false);
  if (!reply.ok) {
    if (!reply.cancelled) showErrors(reply.errors);
    return null;
  }
  const sel = reply.result.selected;
  writeHash({ ...p, n: String(sel.n), d: String(sel.d), workgroup_bytes: String(sel.workgroup_bytes) });
  markShown("count-result", p);
  renderCount(reply.result);
  status.textContent = `Counted: ${reply.result.label}, ${fmt(reply.result.selected.total_bytes)} bytes.`;
  return reply.result;
}

// ---- Check -------------------------------------------------------------------
function renderCheck(r) {
  const verdict = r.passed ? `<span class="verdict-pass">Passed</span>` : `<span class="verdict-fail">Failed</span>`;
  const input = r.input === "model" ? `the model's sentence, head ${r.head} (${r.tokens} tokens)` : `random inputs, seed ${r.seed}`;
  let fail = "";
  if (r.first_failing_row !== null && r.first_failing_row !== undefined) {
    fail = `<p>First failing row: <strong id="check-first-row">${fmt(r.first_failing_row)}</strong>, in query tile ${fmt(r.first_failing_tile)}
      (error ${sci(r.first_failing_error)} against a bound of ${sci(r.first_failing_bound)}).</p>`;
  }
  const fa = r.fa_rule_limit === null || r.fa_rule_limit === undefined ? "" :
    `<tr><th scope="row">Twice the plain kernel's error (FlashAttention's rule)</th><td>${sci(r.fa_rule_limit)}</td><td>${r.fa_rule_passed ? "within" : "exceeded"}</td></tr>`;
  $("check-body").innerHTML = `
    <p class="big-number" id="check-verdict">${verdict}</p>
    <p>${escapeHtml(r.label || r.kernel)}, N = ${fmt(r.n)}, d = ${r.d}${r.causal ? ", causal" : ""}, on ${input}: float32 kernel against exact float64.</p>
    <table class="numbers"><caption>Errors</caption>
      <thead><tr><th scope="col">Measure</th><th scope="col">Value</th><th scope="col"></th></tr></thead>
      <tbody>
      <tr><th scope="row">Largest error, any output entry</th><td id="check-error">${sci(r.max_abs_error)}</td><td></td></tr>
      <tr><th scope="row">First-order float32 bound for that row</th><td id="check-bound">${sci(r.bound)}</td><td>${r.bound_passed ? "within" : "exceeded"}</td></tr>
      ${fa}
      </tbody></table>
    ${fail}
    <p>Rows checked: <span id="check-rows">${r.rows_description}</span>. Took ${r.seconds.toFixed(2)} s in Python.</p>
    <p class="note">The float32 bound is first-order and deliberately safe, so it grows with N and d; twice the plain
      kernel's error is the sharper of the two tests.</p>`;
  $("check-result").hidden = false;
}

async function doCheck() {
  clearErrors();
  const p = readForm();
  setBusy(true, "check");
  status.textContent = client.ready ? "Checking…" : "Starting Python, then checking…";
  const reply = await client.request("check", p);
  setBusy(false);
  if (!reply.ok) {
    if (!reply.cancelled) showErrors(reply.errors);  // doCancel has already said so
    return null;
  }
  writeHash(p);
  renderCheck(reply.result);
  markShown("check-result", p);
  status.textContent = `Check ${reply.result.passed ? "passed" : "failed"}: largest error ${sci(reply.result.max_abs_error)}, bound ${sci(reply.result.bound)}.`;
  return reply.result;
}

function doCancel() {
  client.cancel();
  setBusy(false);
  status.textContent = "Check cancelled. Earlier results are kept.";
  $("check-button").focus();
}

// ---- Time (WebGPU) ------------------------------------------------------------
// gpu.js turns every WebGPU failure into one GpuError {kind, message}; kinds are
// "no-webgpu", "no-adapter", "limits", "device-lost", "out-of-memory",
// "validation", "internal", "shader", "fetch", "input". This file has one path
// for all of them (showGpuFailure), and Count and Check never depend on the GPU.
let gpuModule = null;
let lastGpuFailure = null;
async function gpu() {
  if (!gpuModule) {
    try {
      gpuModule = await import("./gpu.js");
    } catch (err) {
      throw { kind: "fetch", message: `The page could not load its WebGPU code (${err.message}).` };
    }
  }
  return gpuModule;
}

// Failures after which a fresh device may well work.
const RETRYABLE = new Set(["device-lost", "out-of-memory", "validation", "internal", "fetch"]);

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

function renderGpuCard(probe) {
  const info = probe.adapterInfo || {};
  const lim = probe.limits || {};
  const feat = probe.features || {};
  const yes = (b) => (b ? "yes" : "no");
  const name = [info.vendor, info.architecture].filter(Boolean).join(", ") || "not reported";
  $("gpu-card").innerHTML = `<div class="gpu-card"><h4>Your GPU</h4><dl>
    <dt>Adapter</dt><dd>${escapeHtml(name)}</dd>
    ${info.description ? `<dt>Description</dt><dd>${escapeHtml(info.description)}</dd>` : ""}
    <dt>Workgroup memory</dt><dd>${fmt(lim.maxComputeWorkgroupStorageSize || 0)} B</dd>
    <dt>Largest storage buffer</dt><dd>${fmt(lim.maxStorageBufferBindingSize || 0)} B</dd>
    <dt>Invocations per workgroup</dt><dd>${fmt(lim.maxComputeInvocationsPerWorkgroup || 0)}</dd>
    <dt>Timestamp queries</dt><dd>${yes(feat.timestamp)}</dd>
    <dt>Subgroups</dt><dd>${yes(feat.subgroups)}${feat.subgroups && info.subgroupMinSize ? ` (${info.subgroupMinSize === info.subgroupMaxSize ? info.subgroupMinSize : `${info.subgroupMinSize}–${info.subgroupMaxSize}`} invocations)` : ""}</dd>
    <dt>16-bit floats (f16)</dt><dd>${yes(feat.f16)}</dd></dl></div>`;
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

async function doTime() {
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
    // The emulator decides whether this size fits this GPU (emulator/api.py gpu_plan).
    const plan = await client.request("gpu_plan", p, { limits: probe.limits });
    if (!plan.ok) {
      if (!plan.cancelled) showErrors(plan.errors);
      return;
    }
    const counts = await client.request("count", p);
    if (!counts.ok) {
      if (!counts.cancelled) showErrors(counts.errors);
      return;
    }
    renderCount(counts.result);
    markShown("count-result", p);
    status.textContent = "Timing the plain and fused kernels on your GPU…";
    const s = counts.result.selected;
    const n = Number(s.n), d = Number(s.d);
    // The lesson's kernels, plus the tuned fused kernels that fit this GPU's
    // workgroup memory (the manifest says how much each declares).
    const kernels = ["plain", "fused"];
    const wgLimit = Number((probe.limits || {}).maxComputeWorkgroupStorageSize || 16384);
    const leftOut = [];
    for (const [name, t] of Object.entries(counts.result.timed || {})) {
      const need = Number(t.workgroup_bytes);
      if (need <= wgLimit) kernels.push(name);
      else leftOut.push({ name, need });
    }
    // Check before timing: every kernel's output at a small ragged size goes
    // back to Python and through the float64 checker, so a wrong kernel can
    // never report a speed-up unnoticed.
    // One device for the checks and the timing, with what timing every kernel needs.
    await g.openDevice({ kernels, n, d, heads: 1, workgroupBytes: Number(s.workgroup_bytes) });
    const checkN = Math.min(n, 300);
    const checks = {};
    const inputs = await client.request("inputs", { ...p, n: String(checkN) });
    if (!inputs.ok) {
      if (!inputs.cancelled) showErrors(inputs.errors);
      return;
    }
    const data = inputs.result;
    for (const kernel of kernels) {
      status.textContent = `Checking ${kernel} on your GPU at N = ${fmt(checkN)} before timing it…`;
      const run = await g.runAttention({
        kernel, n: checkN, d, causal: Boolean(s.causal),
        Q: Float32Array.from(data.Q), K: Float32Array.from(data.K), V: Float32Array.from(data.V),
        workgroupBytes: Number(s.workgroup_bytes),
      });
      const rep = await client.request("check_output", { ...p, kernel, n: String(checkN) }, { outputs: Array.from(run.O) });
      checks[kernel] = rep.ok ? rep.result : { passed: false, max_abs_error: NaN, error: rep.errors[0].message };
    }
    status.textContent = "Timing the kernels on your GPU…";
    const result = await g.timeKernels({
      n, d, causal: Boolean(s.causal), heads: 1, kernels,
      workgroupBytes: Number(s.workgroup_bytes),
    });
    writeHash(p);
    renderTime(result, counts.result, n, d, Boolean(s.causal), checks, checkN, leftOut, wgLimit);
    markShown("time-result", p);
  } catch (err) {
    showGpuFailure(err);
  } finally {
    setBusy(false);
  }
}

// Rates keep two significant figures even when tiny (SwiftShader at N = 64).
function rate(x) {
  if (!(x > 0)) return "–";
  return x >= 100 ? x.toFixed(0) : x >= 1 ? x.toFixed(1) : x.toPrecision(2);
}

function msText(ms) {
  return ms >= 1 ? ms.toFixed(2) : ms.toPrecision(3);
}

function renderTime(result, counts, n, d, causal, checks = {}, checkN = 0, leftOut = [], wgLimit = 0) {
  const kernels = result.kernels || {};
  const rows = [];
  const plain = kernels.plain;
  for (const [name, k] of Object.entries(kernels)) {
    const traffic = counts[name] || (counts.timed || {})[name];
    if (!k || !traffic) continue;
    const bytes = traffic.total_bytes;
    const ms = k.medianMs;
    const low = k.belowResolution ? " (below the timer's resolution)" : "";
    const tiles = `B_r = ${traffic.block_rows}, B_c = ${traffic.block_cols}`;
    const speed = plain && name !== "plain" ? `${(plain.medianMs / ms).toFixed(2)}×` : "–";
    const c = checks[name];
    const checked = !c ? "–" : c.passed
      ? `<span class="verdict-pass">passed</span> (${sci(c.max_abs_error)})`
      : `<span class="verdict-fail">failed</span> (${c.error ? escapeHtml(c.error) : sci(c.max_abs_error)})`;
    const shaders = (k.shaders || []).map(escapeHtml).join("<br>");
    rows.push(`<tr><th scope="row">${escapeHtml(name)}<br><span class="note">${tiles}</span><br><span class="note" id="time-${name}-shader">${shaders}</span></th>
      <td id="time-${name}-ms">${msText(ms)}${low}</td>
      <td>${rate(k.gflops)}</td><td>${fmt(bytes)}</td><td>${rate(bytes / (ms / 1000) / 1e9)}</td>
      <td id="time-${name}-speedup">${speed}</td>
      <td id="time-${name}-check">${checked}</td>
      <td>${k.samples} × ${k.method === "timestamp" ? "GPU timestamps" : "wall clock"}</td></tr>`);
  }
  const speedup = result.speedup;
  const fastest = Object.entries(kernels).filter(([name]) => name !== "plain" && name !== "fused")
    .map(([name, k]) => [name, plain ? plain.medianMs / k.medianMs : null]);
  const fastNote = fastest.length
    ? `<p>The lesson's fused kernel gives each query row one invocation, like the film's picture; the tuned
       kernels (${fastest.map(([name]) => escapeHtml(name)).join(", ")}) tile differently, so each has its own count above.
       Fusion saves bytes; a fast kernel also needs its arithmetic laid out for the hardware.</p>`
    : "";
  $("time-body").innerHTML = `
    <p>N = ${fmt(n)}, d = ${d}${causal ? ", causal" : ""}, one head, float32, median of the samples.
      Before timing, each kernel ran once at N = ${fmt(checkN)} on the same seeded inputs as Check, and its output
      went through the float64 checker (largest error in brackets).</p>
    ${Object.values(checks).some((c) => !c.passed) ? `<p class="verdict-fail" id="time-check-warning">A kernel gave wrong answers on this GPU: its time measures nothing useful.</p>` : ""}
    <div class="table-scroll" tabindex="0" role="region" aria-label="Times on your GPU"><table class="numbers"><caption>Times on your GPU</caption>
      <thead><tr><th scope="col">Kernel</th><th scope="col">ms</th><th scope="col">GFLOP/s</th><th scope="col">Bytes (counted)</th><th scope="col">GB/s</th><th scope="col">Speed-up over plain</th><th scope="col">Checked first (N = ${fmt(checkN)})</th><th scope="col">Samples × timer</th></tr></thead>
      <tbody>${rows.join("")}</tbody></table></div>
    ${speedup ? `<p>Fused (the lesson's kernel) speed-up over plain: <strong id="time-speedup">${speedup.toFixed(2)}×</strong>.</p>` : ""}
    ${fastNote}
    ${leftOut.length ? `<p id="time-left-out">Not timed here: ${leftOut.map((k) => `${escapeHtml(k.name)} needs ${fmt(k.need)} B of workgroup memory at d = ${d}`).join("; ")}, and this GPU offers ${fmt(wgLimit)} B.</p>` : ""}
    <p class="note">${escapeHtml(result.flopConvention || "")} GB/s divides the emulator's byte count by the time;
      caches can make it exceed what memory alone delivers. ${escapeHtml(result.note || "")}</p>`;
  $("time-result").hidden = false;
  const best = fastest.filter(([, x]) => x).sort((a, b) => b[1] - a[1])[0];
  status.textContent = speedup
    ? `Timed: the lesson's fused kernel is ${speedup.toFixed(2)} times as fast as plain` +
      (best ? `, ${best[0]} ${best[1].toFixed(2)} times.` : ".")
    : "Timed.";
}

// ---- the model's sentence brings its own N and d ---------------------------------
function useModelSizes() {
  if (!$("input-model").checked) return;
  const radio = $("input-model");
  $("n").value = radio.dataset.n;
  $("d").value = radio.dataset.d;
  $("causal").checked = false;
  status.textContent = `The model's sentence has N = ${radio.dataset.n} tokens and d = ${radio.dataset.d}; the form now says so.`;
}

// ---- wiring ----------------------------------------------------------------------
form.addEventListener("submit", guarded(doCount));
buttons.check.addEventListener("click", guarded(doCheck));
buttons.time.addEventListener("click", guarded(doTime));
buttons.cancel.addEventListener("click", doCancel);
$("time-retry").addEventListener("click", guarded(doTime));
openFromLink();
// Start Python as soon as the learner reaches for the lab (a pointer over the
// form, or focus in it), not at page load: the page itself stays light.
for (const type of ["pointerenter", "focusin"]) {
  form.addEventListener(type, () => client.start(), { once: true });
}
window.addEventListener("hashchange", readHash);
$("input-model").addEventListener("change", () => { useModelSizes(); markStale(); });
form.addEventListener("input", markStale);
form.addEventListener("change", markStale);

// For tests and for the curious: the lab's actions, callable from the console.
window.cannery = Object.assign(window.cannery || {}, { lab: { doCount, doCheck, doTime, client } });
