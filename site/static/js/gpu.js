// gpu.js: the lesson's WGSL kernels on the visitor's GPU, through WebGPU.
//
// Loads kernels/manifest.json and kernels/*.wgsl relative to the page (build.py
// copies kernels_wgsl/ to dist/kernels/), so the site works under any subpath.
// The same files run natively through wgpu-py (bench/wgsl_host.py); the tiling rule
// is the emulator's (emulator/tiling.py), so the bytes the lab counts are the bytes
// these kernels ask for.
//
// Exports:
//   probeGpu()        -> {ok, adapterInfo, limits, features} | {ok: false, reason, error}
//   runAttention(...) -> {O: Float32Array (N*d), counts?, tiling}
//   timeKernels(...)  -> {kernels: {plain: {...}, fused: {...}}, method, note, ...}
//   resetDevice()     -> forget the device (Retry after a loss or an error)
//   compileAll(...)   -> getCompilationInfo and pipeline errors for every shader
//   formatTiming(...) -> a one-line summary of a timeKernels result
//   instrumentSource(src), lessonTiling(kernel, d, M), GpuError
//
// Every failure becomes one GpuError {kind, message} (webgpu-samples' fail() idea):
// kinds "no-webgpu", "no-adapter", "limits", "device-lost", "out-of-memory",
// "validation", "internal", "shader", "fetch", "input".

const BYTES = 4; // float32
const RESOLUTION_MS = 0.1; // Chrome rounds GPU timestamps to 100 µs (and coarsens performance.now)
const TIMESTAMP_NOTE =
  "GPU timestamps (timestamp-query). Chrome rounds them to 100 µs, so each sample batches dispatches until it holds at least 10 ms of GPU work.";
const WALL_NOTE =
  "Wall-clock time from submit to onSubmittedWorkDone (this GPU offers no timestamp queries); each sample holds at least 10 ms of work.";

export class GpuError extends Error {
  constructor(kind, message, cause) {
    super(message);
    this.name = "GpuError";
    this.kind = kind;
    if (cause !== undefined) this.cause = cause;
  }
  toJSON() {
    return { kind: this.kind, message: this.message };
  }
}

/** The one failure path: wrap anything thrown into a GpuError the lab can show. */
export function fail(kind, message, cause) {
  if (cause instanceof GpuError) return cause;
  return new GpuError(kind, message, cause);
}

function asGpuError(err, kind = "internal") {
  if (err instanceof GpuError) return err;
  const msg = (err && err.message) || String(err);
  if (err && err.name === "GPUPipelineError") return fail("validation", `The GPU refused a kernel: ${msg}`, err);
  if (err && err.name === "OperationError") return fail("out-of-memory", `The GPU ran out of memory: ${msg}`, err);
  return fail(kind, msg, err);
}

// ---------------------------------------------------------------- files
let manifestPromise = null;
const sourceCache = new Map();

function pageUrl(rel) {
  const base = typeof document !== "undefined" ? document.baseURI : self.location.href;
  return new URL(rel, base).href;
}

async function fetchText(rel) {
  let res;
  try {
    res = await fetch(pageUrl(rel));
  } catch (err) {
    throw fail("fetch", `Could not load ${rel}: ${err.message}`, err);
  }
  if (!res.ok) throw fail("fetch", `Could not load ${rel}: HTTP ${res.status}.`);
  return res.text();
}

/** kernels/manifest.json, parsed once. */
export function loadManifest() {
  manifestPromise =
    manifestPromise ||
    fetchText("kernels/manifest.json").then(JSON.parse).catch((err) => {
      manifestPromise = null;
      throw asGpuError(err, "fetch");
    });
  return manifestPromise;
}

async function loadSource(file) {
  if (!sourceCache.has(file)) {
    sourceCache.set(file, fetchText(`kernels/${file}`).catch((e) => {
      sourceCache.delete(file);
      throw e;
    }));
  }
  return sourceCache.get(file);
}

/** The instrumented build: uncomment every line starting with the manifest's marker. */
export function instrumentSource(src, marker = "// @instrument: ") {
  const esc = marker.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return src.replace(new RegExp("^(\\s*)" + esc, "gm"), "$1");
}

/**
 * Tiles of `kernel` at head dimension d: the lesson rule of emulator/tiling.py
 * (B_c = (M/2) / (2·4·d), B_r = 2·B_c) or the kernel's own per-d table.
 */
export function lessonTiling(manifest, kernel, d, workgroupBytes = 16384) {
  const spec = manifest.kernels[kernel];
  if (!spec) throw fail("input", `Unknown kernel “${kernel}”.`);
  if (!manifest.head_dims.includes(d)) {
    throw fail("input", `Head dimension d must be one of ${manifest.head_dims.join(", ")}; ${d} is not.`);
  }
  if (spec.tiling === "lesson") {
    const bc = Math.floor(Math.floor(workgroupBytes / 2) / (2 * BYTES * d));
    if (bc < manifest.lesson.min_key_tile_rows) {
      throw fail("input", `M = ${workgroupBytes} B leaves fewer than ${manifest.lesson.min_key_tile_rows} key rows at d = ${d}.`);
    }
    return { blockRows: 2 * bc, blockCols: bc, workgroupBytes };
  }
  const br = spec.tiling.block_rows[String(d)];
  const bc = spec.tiling.block_cols[String(d)];
  const declared = (spec.workgroup_bytes || {})[String(d)];
  return { blockRows: br, blockCols: bc, workgroupBytes: declared ?? BYTES * d * (br + 2 * bc) };
}

// ---------------------------------------------------------------- device
let state = null; // {adapter, device, limits, lost, pipelines: Map}

/** Forget the device (after a loss or an error): the next call asks for a new one. */
export function resetDevice() {
  if (state && state.device && !state.lost) {
    state.expectedLoss = true;
    try {
      state.device.destroy();
    } catch (_) {
      /* already gone */
    }
  }
  state = null;
}

async function getAdapter() {
  if (typeof navigator === "undefined" || !navigator.gpu) {
    throw fail(
      "no-webgpu",
      "This browser has no WebGPU (navigator.gpu is missing). Chrome and Edge 113+ have it; Firefox and Safari are adding it. Count and Check still work.",
    );
  }
  let adapter = null;
  try {
    adapter = await navigator.gpu.requestAdapter({ powerPreference: "high-performance" });
  } catch (err) {
    throw fail("no-adapter", `WebGPU could not find a graphics adapter: ${err.message}`, err);
  }
  if (!adapter) {
    throw fail(
      "no-adapter",
      "WebGPU is present but offered no graphics adapter (it may be turned off, or this GPU is on the browser's block list). Count and Check still work.",
    );
  }
  return adapter;
}

const DEFAULTS = {
  maxComputeWorkgroupStorageSize: 16384,
  maxComputeInvocationsPerWorkgroup: 256,
  maxStorageBufferBindingSize: 134217728,
  maxBufferSize: 268435456,
};

/**
 * A device whose storage limits cover `need` ({maxStorageBufferBindingSize,
 * maxBufferSize} in bytes). Higher limits are asked for only when a size needs
 * them and the adapter offers them; otherwise a "limits" GpuError gives the numbers.
 */
async function getDevice(need = {}) {
  if (state && state.lost) {
    throw fail("device-lost", `The GPU device was lost (${state.lostMessage}). Press Retry to start a new one.`);
  }
  const wantBinding = Math.max(need.maxStorageBufferBindingSize || 0, DEFAULTS.maxStorageBufferBindingSize);
  const wantBuffer = Math.max(need.maxBufferSize || 0, wantBinding, DEFAULTS.maxBufferSize);
  const wantWg = Math.max(need.maxComputeWorkgroupStorageSize || 0, DEFAULTS.maxComputeWorkgroupStorageSize);
  if (
    state &&
    state.limits.maxStorageBufferBindingSize >= wantBinding &&
    state.limits.maxBufferSize >= wantBuffer &&
    state.limits.maxComputeWorkgroupStorageSize >= wantWg
  ) {
    return state;
  }
  const adapter = state ? state.adapter : await getAdapter();
  const offer = adapter.limits;
  for (const [name, want] of [
    ["maxStorageBufferBindingSize", wantBinding],
    ["maxBufferSize", wantBuffer],
    ["maxComputeWorkgroupStorageSize", wantWg],
  ]) {
    if (want > offer[name]) {
      throw fail(
        "limits",
        `This size needs ${name} = ${want.toLocaleString("en-US")} B, but this GPU offers at most ${offer[name].toLocaleString("en-US")} B. Try a smaller N.`,
      );
    }
  }
  for (const [name, min] of [["maxComputeWorkgroupStorageSize", 16384], ["maxComputeInvocationsPerWorkgroup", 256]]) {
    if (offer[name] < min) {
      throw fail("limits", `The kernels need ${name} ≥ ${min}; this GPU offers ${offer[name]}.`);
    }
  }
  const requiredLimits = {};
  if (wantBinding > DEFAULTS.maxStorageBufferBindingSize) requiredLimits.maxStorageBufferBindingSize = wantBinding;
  if (wantBuffer > DEFAULTS.maxBufferSize) requiredLimits.maxBufferSize = wantBuffer;
  if (wantWg > DEFAULTS.maxComputeWorkgroupStorageSize) requiredLimits.maxComputeWorkgroupStorageSize = wantWg;
  // An adapter gives out one device only (WebGPU §4.3: it is then "consumed"),
  // so a device with higher limits needs a fresh adapter.
  let fresh = adapter;
  if (state) {
    resetDevice();
    fresh = await getAdapter();
  }
  const requiredFeatures = ["timestamp-query", "subgroups"].filter((f) => fresh.features.has(f));
  let device;
  try {
    device = await fresh.requestDevice({ requiredFeatures, requiredLimits });
  } catch (err) {
    throw fail("limits", `The GPU refused a device with these limits: ${err.message}`, err);
  }
  const s = {
    adapter: fresh,
    device,
    limits: {
      maxStorageBufferBindingSize: device.limits.maxStorageBufferBindingSize,
      maxBufferSize: device.limits.maxBufferSize,
      maxComputeWorkgroupStorageSize: device.limits.maxComputeWorkgroupStorageSize,
    },
    timestamps: device.features.has("timestamp-query"),
    // Smallest subgroup the adapter may use; 0 without the feature (or where the browser
    // does not report it), and then no pass runs its with_subgroups shader.
    subgroupMin: device.features.has("subgroups") ? Number((fresh.info || {}).subgroupMinSize) || 0 : 0,
    lost: false,
    lostMessage: "",
    expectedLoss: false,
    pipelines: new Map(),
  };
  device.lost.then((info) => {
    s.lost = true;
    s.lostMessage = info.message || info.reason || "no reason given";
    if (state === s && s.expectedLoss) state = null;
  });
  device.addEventListener?.("uncapturederror", (ev) => {
    s.uncaptured = ev.error && ev.error.message;
  });
  state = s;
  return s;
}

/** Adapter, limits and features for the GPU card; never throws. */
export async function probeGpu() {
  try {
    const adapter = await getAdapter();
    let info = adapter.info;
    if (!info && adapter.requestAdapterInfo) info = await adapter.requestAdapterInfo();
    info = info || {};
    const limits = {};
    for (const name of [
      "maxComputeWorkgroupStorageSize",
      "maxComputeInvocationsPerWorkgroup",
      "maxComputeWorkgroupSizeX",
      "maxStorageBufferBindingSize",
      "maxBufferSize",
      "maxComputeWorkgroupsPerDimension",
    ]) {
      limits[name] = adapter.limits[name];
    }
    return {
      ok: true,
      adapterInfo: {
        vendor: info.vendor || "",
        architecture: info.architecture || "",
        device: info.device || "",
        description: info.description || "",
        subgroupMinSize: info.subgroupMinSize || 0,
        subgroupMaxSize: info.subgroupMaxSize || 0,
      },
      limits,
      defaults: { ...DEFAULTS },
      features: {
        timestamp: adapter.features.has("timestamp-query"),
        subgroups: adapter.features.has("subgroups"),
        f16: adapter.features.has("shader-f16"),
      },
    };
  } catch (err) {
    const e = asGpuError(err, "no-adapter");
    return { ok: false, reason: e.message, error: e.toJSON() };
  }
}

// ---------------------------------------------------------------- errors
/** Run `fn` inside validation, out-of-memory and internal error scopes; throw the first error. */
async function scoped(device, what, fn) {
  device.pushErrorScope("internal");
  device.pushErrorScope("out-of-memory");
  device.pushErrorScope("validation");
  let value;
  let thrown = null;
  try {
    value = await fn();
  } catch (err) {
    thrown = err;
  }
  const validation = await device.popErrorScope();
  const oom = await device.popErrorScope();
  const internal = await device.popErrorScope();
  if (thrown) throw asGpuError(thrown);
  if (oom) throw fail("out-of-memory", `The GPU ran out of memory while ${what}: ${oom.message}. Try a smaller N.`);
  if (validation) throw fail("validation", `The GPU rejected the work while ${what}: ${validation.message}`);
  if (internal) throw fail("internal", `The GPU failed while ${what}: ${internal.message}`);
  return value;
}

function checkLost(s) {
  if (s.lost) throw fail("device-lost", `The GPU device was lost (${s.lostMessage}). Press Retry to start a new one.`);
}

// ---------------------------------------------------------------- pipelines
function overrideConstants(spec, d, tiling) {
  const values = { D: d, BR: tiling.blockRows, BC: tiling.blockCols };
  const out = {};
  for (const name of spec.overrides || []) out[name] = values[name];
  for (const [name, v] of Object.entries(spec.constants || {})) out[name] = typeof v === "boolean" ? Number(v) : v;
  Object.assign(out, (spec.constants_by_d || {})[String(d)] || {});
  return out;
}

/**
 * The shader file and override constants of one pass at d on a device whose smallest
 * subgroup is `subgroupMin` (0: no subgroups). A pass's `with_subgroups` shader runs
 * where it lists d and the subgroup is large enough: same tiles, same bytes.
 * bench/wgsl_host.py (pass_variant) applies the same rule.
 */
export function passVariant(spec, d, tiling, subgroupMin) {
  const alt = spec.with_subgroups || {};
  const key = String(d);
  if (alt.file_by_d && alt.file_by_d[key] && subgroupMin >= alt.min_subgroup_size_by_d[key]) {
    const values = { D: d, BR: tiling.blockRows, BC: tiling.blockCols };
    const constants = {};
    for (const name of spec.overrides || []) constants[name] = values[name];
    Object.assign(constants, (alt.constants_by_d || {})[key] || {});
    return { file: alt.file_by_d[key], constants, subgroups: true };
  }
  return { file: shaderFile(spec, d), constants: overrideConstants(spec, d, tiling), subgroups: false };
}

async function compileModule(s, manifest, file, instrumented) {
  const key = `module:${file}:${instrumented}`;
  if (s.pipelines.has(key)) return s.pipelines.get(key);
  let code = await loadSource(file);
  if (instrumented) code = instrumentSource(code, manifest.instrument.marker);
  const module = s.device.createShaderModule({ code, label: file });
  const info = await module.getCompilationInfo();
  const errors = info.messages.filter((m) => m.type === "error");
  if (errors.length) {
    const m = errors[0];
    throw fail("shader", `${file}${instrumented ? " (instrumented)" : ""}:${m.lineNum}:${m.linePos}: ${m.message}`);
  }
  s.pipelines.set(key, module);
  return module;
}

/** The .wgsl file of one pass at head dimension d ("file_by_d" overrides "file"). */
function shaderFile(spec, d) {
  return (spec.file_by_d && spec.file_by_d[String(d)]) || spec.file;
}

async function getPipeline(s, manifest, kernel, passIndex, d, tiling, instrumented) {
  const spec = manifest.kernels[kernel].wgsl[passIndex];
  const key = `${kernel}:${passIndex}:${d}:${tiling.blockRows}:${tiling.blockCols}:${instrumented}`;
  if (s.pipelines.has(key)) return s.pipelines.get(key);
  const { file, constants } = passVariant(spec, d, tiling, s.subgroupMin);
  const module = await compileModule(s, manifest, file, instrumented);
  const pipeline = await scoped(s.device, `building ${file}`, () =>
    s.device.createComputePipelineAsync({
      layout: "auto",
      compute: { module, entryPoint: spec.entry_point || "main", constants },
    }),
  );
  const entry = { pipeline, spec, file };
  s.pipelines.set(key, entry);
  return entry;
}

/**
 * Compile every shader (plain and instrumented builds) and build every pipeline at
 * each d; returns [{file, instrumented, d, errors: [string]}] (empty errors = fine).
 */
export async function compileAll({ ds } = {}) {
  const manifest = await loadManifest();
  const adapter = state ? state.adapter : await getAdapter();
  let wgNeed = 0;
  for (const spec of Object.values(manifest.kernels)) {
    for (const b of Object.values(spec.workgroup_bytes || {})) {
      if (b <= adapter.limits.maxComputeWorkgroupStorageSize) wgNeed = Math.max(wgNeed, b);
    }
  }
  const s = await getDevice({ maxComputeWorkgroupStorageSize: wgNeed });
  const out = [];
  const heads = ds || manifest.head_dims;
  for (const instrumented of [false, true]) {
    const files = new Set();
    for (const [kernel, spec] of Object.entries(manifest.kernels)) {
      if (!spec.wgsl) continue;
      for (const [i, pass] of spec.wgsl.entries()) {
        const alt = s.subgroupMin > 0 ? Object.values((pass.with_subgroups || {}).file_by_d || {}) : [];
        for (const file of [pass.file, ...Object.values(pass.file_by_d || {}), ...alt]) {
          if (files.has(file)) continue;
          files.add(file);
          let code = await loadSource(file);
          if (instrumented) code = instrumentSource(code, manifest.instrument.marker);
          const module = s.device.createShaderModule({ code, label: file });
          const info = await module.getCompilationInfo();
          out.push({
            file,
            instrumented,
            d: null,
            errors: info.messages.filter((m) => m.type === "error").map((m) => `${m.lineNum}:${m.linePos} ${m.message}`),
            warnings: info.messages.filter((m) => m.type === "warning").length,
          });
        }
        for (const d of heads) {
          const errors = [];
          const wb = spec.workgroup_bytes ? spec.workgroup_bytes[String(d)] : 0;
          if (wb > s.limits.maxComputeWorkgroupStorageSize) {
            out.push({ file: passVariant(pass, d, lessonTiling(manifest, kernel, d), s.subgroupMin).file, kernel, instrumented, d, errors, skipped: `needs ${wb} B of workgroup memory` });
            continue;
          }
          try {
            await getPipeline(s, manifest, kernel, i, d, lessonTiling(manifest, kernel, d), instrumented);
          } catch (err) {
            errors.push(err.message);
          }
          out.push({ file: passVariant(pass, d, lessonTiling(manifest, kernel, d), s.subgroupMin).file, kernel, instrumented, d, errors });
        }
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------- runs
const USAGE_STORAGE = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

/** Sizes a run needs; throws "limits"/"input" GpuErrors with the numbers. */
/** Whether a kernel stores the N×N scores S (and so P) in global memory, per its manifest passes. */
export function writesScores(spec) {
  return spec.passes.some((p) => "S" in p.writes);
}

function planSizes(manifest, kernel, n, d, heads, instrumented, workgroupBytes = DEFAULTS.maxComputeWorkgroupStorageSize) {
  if (!Number.isInteger(n) || n < 1) throw fail("input", `N must be a whole number ≥ 1, not ${n}.`);
  const spec = manifest.kernels[kernel];
  if (!spec || !spec.wgsl) throw fail("input", `Kernel “${kernel}” has no WGSL build.`);
  const qkv = heads * n * d * BYTES;
  let binding = qkv;
  let headBatch = heads;
  if (writesScores(spec)) {
    const maxRow = manifest.limits.softmax_max_row;
    if (n > maxRow) {
      throw fail("limits", `The plain kernel's softmax pass holds one row of S in registers: at most ${maxRow.toLocaleString("en-US")} keys, and N = ${n.toLocaleString("en-US")}.`);
    }
    const perHead = n * n * BYTES;
    binding = Math.max(binding, perHead);
    headBatch = 1;
  }
  if (instrumented && n * n * heads > 2 ** 31) {
    throw fail("input", "Instrumented runs count elements in 32-bit counters; use N ≤ 4,096.");
  }
  // Tuned kernels declare their workgroup memory in the manifest; the lesson kernels'
  // tiles are cut from M (the lab's workgroup memory), so they need at most M.
  const wg = spec.workgroup_bytes
    ? spec.workgroup_bytes[String(d)]
    : Math.max(workgroupBytes, DEFAULTS.maxComputeWorkgroupStorageSize);
  return { maxStorageBufferBindingSize: binding, maxBufferSize: binding, maxComputeWorkgroupStorageSize: wg, headBatch };
}

function makeStorage(device, bytes, label) {
  return device.createBuffer({ size: Math.max(16, Math.ceil(bytes / 4) * 4), usage: USAGE_STORAGE(), label });
}

/**
 * The dispatches of `runs` attention runs, grouped into submissions; each unit is
 * {passIndex, h0, nh, xBase, count}. `chunks` splits every pass into that many
 * dispatches along x, so no submission holds more than about 1 s of work.
 */
function planDispatches(manifest, kernel, n, heads, headBatch, tiling, chunks) {
  const units = [];
  for (let h0 = 0; h0 < heads; h0 += headBatch) {
    const nh = Math.min(headBatch, heads - h0);
    manifest.kernels[kernel].wgsl.forEach((spec, passIndex) => {
      const total = spec.grid === "query_tiles" ? Math.ceil(n / tiling.blockRows) : n;
      const per = Math.ceil(total / chunks);
      for (let xBase = 0; xBase < total; xBase += per) {
        units.push({ passIndex, h0, nh, xBase, count: Math.min(per, total - xBase) });
      }
    });
  }
  return units;
}

async function prepareRun(s, manifest, { kernel, n, d, heads, causal, tiling, instrumented, chunks, headBatch, data }) {
  const device = s.device;
  return scoped(device, "allocating buffers", async () => {
    const bufs = {};
    for (const name of ["Q", "K", "V"]) {
      bufs[name] = makeStorage(device, heads * n * d * BYTES, name);
      device.queue.writeBuffer(bufs[name], 0, data[name]);
    }
    bufs.O = makeStorage(device, heads * n * d * BYTES, "O");
    if (writesScores(manifest.kernels[kernel])) {
      bufs.S = makeStorage(device, headBatch * n * n * BYTES, "S");
      bufs.P = makeStorage(device, headBatch * n * n * BYTES, "P");
    }
    if (instrumented) bufs.counters = makeStorage(device, manifest.instrument.slots.length * 4, "counters");
    const units = planDispatches(manifest, kernel, n, heads, headBatch, tiling, chunks);
    const encoded = [];
    const shaders = [];
    for (const u of units) {
      const { pipeline, spec, file } = await getPipeline(s, manifest, kernel, u.passIndex, d, tiling, instrumented);
      if (!shaders.includes(file)) shaders.push(file);
      const params = device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(params, 0, new Uint32Array([n, causal ? 1 : 0, u.h0, u.xBase]));
      const entries = Object.entries(spec.bindings).map(([name, binding]) => ({
        binding,
        resource: { buffer: name === "params" ? params : bufs[name] },
      }));
      if (instrumented) entries.push({ binding: manifest.instrument.binding, resource: { buffer: bufs.counters } });
      const bindGroup = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
      encoded.push({ ...u, pipeline, bindGroup, params });
    }
    return { bufs, units: encoded, shaders };
  });
}

function destroyRun(run) {
  for (const b of Object.values(run.bufs)) b.destroy();
  for (const u of run.units) u.params.destroy();
}

/** Encode `reps` runs of units[from, to) in one compute pass; optional timestamps. */
function encodeUnits(device, run, from, to, reps, querySet) {
  const enc = device.createCommandEncoder();
  const desc = querySet ? { timestampWrites: { querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } } : {};
  const pass = enc.beginComputePass(desc);
  for (let r = 0; r < reps; r++) {
    for (let i = from; i < to; i++) {
      const u = run.units[i];
      pass.setPipeline(u.pipeline);
      pass.setBindGroup(0, u.bindGroup);
      pass.dispatchWorkgroups(u.count, u.nh, 1);
    }
  }
  pass.end();
  return enc;
}

async function readBuffer(device, src, bytes) {
  const staging = device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(src, 0, staging, 0, bytes);
  device.queue.submit([enc.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const copy = staging.getMappedRange().slice(0);
  staging.unmap();
  staging.destroy();
  return copy;
}

/**
 * Run one kernel once on Q, K, V (Float32Array, N*d each, row-major (N, d)).
 * `chunks` > 1 splits every pass into that many dispatches along x (as timing does for
 * long runs), each with its own x_base; the result must not change.
 * Returns {O: Float32Array(N*d), counts?: {Q: {read, write}, ...} in bytes, tiling, shaders: [.wgsl files run]}.
 * Throws GpuError.
 */
export async function runAttention({ kernel, n, d, causal = false, Q, K, V, instrumented = false, workgroupBytes = 16384, chunks = 1 }) {
  try {
    const manifest = await loadManifest();
    const tiling = lessonTiling(manifest, kernel, d, workgroupBytes);
    for (const [name, arr] of [["Q", Q], ["K", K], ["V", V]]) {
      if (!(arr instanceof Float32Array) || arr.length !== n * d) {
        throw fail("input", `${name} must be a Float32Array of N·d = ${n * d} numbers.`);
      }
    }
    const need = planSizes(manifest, kernel, n, d, 1, instrumented, workgroupBytes);
    const s = await getDevice(need);
    checkLost(s);
    const run = await prepareRun(s, manifest, {
      kernel, n, d, heads: 1, causal, tiling, instrumented, chunks, headBatch: 1, data: { Q, K, V },
    });
    try {
      const device = s.device;
      const out = await scoped(device, `running ${kernel}`, async () => {
        const enc = device.createCommandEncoder();
        for (const name of ["O", "S", "P", "counters"]) if (run.bufs[name]) enc.clearBuffer(run.bufs[name]);
        device.queue.submit([enc.finish()]);
        device.queue.submit([encodeUnits(device, run, 0, run.units.length, 1, null).finish()]);
        const O = new Float32Array(await readBuffer(device, run.bufs.O, n * d * BYTES));
        let counts;
        if (instrumented) {
          const raw = new Uint32Array(await readBuffer(device, run.bufs.counters, manifest.instrument.slots.length * 4));
          counts = {};
          for (const t of ["Q", "K", "V", "S", "P", "O"]) counts[t] = { read: 0, write: 0 };
          manifest.instrument.slots.forEach((slot, i) => {
            const [tensor, kind] = slot.split(".");
            counts[tensor][kind] = raw[i] * manifest.bytes_per_element;
          });
        }
        return { O, counts };
      });
      checkLost(s);
      return { ...out, tiling, kernel, shaders: run.shaders };
    } finally {
      destroyRun(run);
    }
  } catch (err) {
    throw asGpuError(err);
  }
}

function randomFloats(count, seed) {
  // xorshift32, uniform on [-1, 1): timing data only, never all zeros.
  const out = new Float32Array(count);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < count; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = ((x >>> 0) / 4294967296) * 2 - 1;
  }
  return out;
}

/**
 * Time one kernel: warm-up, then samples of `reps` runs each, until every sample
 * holds >= minSampleMs of GPU work and there are >= minSamples samples; median.
 * No submission holds more than about maxSubmitMs: long runs are split into chunks.
 */
async function timeOne(s, manifest, { kernel, n, d, heads, causal, workgroupBytes, minSampleMs, minSamples, maxSubmitMs, onProgress }) {
  const device = s.device;
  const tiling = lessonTiling(manifest, kernel, d, workgroupBytes);
  const need = planSizes(manifest, kernel, n, d, heads, false, workgroupBytes);
  const data = {};
  ["Q", "K", "V"].forEach((name, i) => (data[name] = randomFloats(heads * n * d, 12345 + i)));
  const useTs = s.timestamps;

  async function submitAndTime(run, from, to, reps) {
    return scoped(device, `timing ${kernel}`, async () => {
      let querySet = null;
      let resolve = null;
      if (useTs) {
        querySet = device.createQuerySet({ type: "timestamp", count: 2 });
        resolve = device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
      }
      const enc = encodeUnits(device, run, from, to, reps, querySet);
      if (useTs) enc.resolveQuerySet(querySet, 0, 2, resolve, 0);
      const t0 = performance.now();
      device.queue.submit([enc.finish()]);
      await device.queue.onSubmittedWorkDone();
      const wall = performance.now() - t0;
      if (!useTs) return wall;
      const ticks = new BigUint64Array(await readBuffer(device, resolve, 16));
      querySet.destroy();
      resolve.destroy();
      const delta = ticks[1] - ticks[0]; // unsigned 64-bit nanoseconds
      if (ticks[1] <= ticks[0]) return NaN; // non-positive: discard
      return Number(delta) / 1e6;
    });
  }

  // Warm-up and estimate with the whole run in one chunk per pass.
  let run = await prepareRun(s, manifest, { kernel, n, d, heads, causal, tiling, instrumented: false, chunks: 1, headBatch: need.headBatch, data });
  const first = await (async () => {
    const ms = await submitAndTime(run, 0, run.units.length, 1);
    checkLost(s);
    return ms;
  })();
  let estimate = first;
  if (first < maxSubmitMs) {
    const again = await submitAndTime(run, 0, run.units.length, 1);
    if (again > 0) estimate = again;
  }
  if (!(estimate > 0)) estimate = RESOLUTION_MS;
  // Split long runs: each pass into enough dispatches that one holds < maxSubmitMs / 2.
  const chunks = Math.max(1, Math.ceil((estimate / (maxSubmitMs / 2)) * 1.0));
  if (chunks > 1) {
    destroyRun(run);
    run = await prepareRun(s, manifest, { kernel, n, d, heads, causal, tiling, instrumented: false, chunks, headBatch: need.headBatch, data });
  }
  try {
    const reps = Math.max(1, Math.ceil(minSampleMs / estimate));
    const repsPerSubmit = chunks > 1 ? 1 : Math.max(1, Math.min(reps, Math.floor(maxSubmitMs / estimate)));
    const samples = [];
    let below = false;
    let attempts = 0;
    while (samples.length < minSamples && attempts < minSamples * 3) {
      attempts++;
      let total = 0;
      let done = 0;
      while (done < reps && total === total) {
        const r = Math.min(repsPerSubmit, reps - done);
        if (chunks > 1) {
          for (let i = 0; i < run.units.length; i++) {
            const ms = await submitAndTime(run, i, i + 1, 1);
            if (!(ms > 0)) { total = NaN; break; }
            if (ms < RESOLUTION_MS) below = true;
            total += ms;
          }
        } else {
          const ms = await submitAndTime(run, 0, run.units.length, r);
          if (!(ms > 0)) total = NaN;
          else {
            if (ms < RESOLUTION_MS) below = true;
            total += ms;
          }
        }
        done += r;
        checkLost(s);
      }
      if (total > 0) samples.push(total / reps);
      if (onProgress) onProgress({ kernel, sample: samples.length, of: minSamples });
    }
    if (!samples.length) {
      throw fail("internal", `Timing ${kernel} gave no usable sample: every timestamp delta was zero or negative.`);
    }
    const sorted = [...samples].sort((a, b) => a - b);
    const medianMs = sorted[Math.floor(sorted.length / 2)];
    return {
      medianMs,
      samples: samples.length,
      sampleMs: sorted,
      reps,
      submissionsPerSample: chunks > 1 ? run.units.length * reps : Math.ceil(reps / repsPerSubmit),
      method: useTs ? "timestamp" : "wall",
      belowResolution: below || medianMs * reps < RESOLUTION_MS,
      tiling,
      shaders: run.shaders,
    };
  } finally {
    destroyRun(run);
  }
}

/** The limits that running every one of `kernels` at (N, d) needs (see planSizes). */
function needsOf(manifest, { kernels, n, d, heads = 1, workgroupBytes = DEFAULTS.maxComputeWorkgroupStorageSize }) {
  const need = { maxStorageBufferBindingSize: 0, maxBufferSize: 0, maxComputeWorkgroupStorageSize: 0 };
  for (const k of kernels) {
    const p = planSizes(manifest, k, n, d, heads, false, workgroupBytes);
    for (const key of Object.keys(need)) need[key] = Math.max(need[key], p[key]);
  }
  return need;
}

/**
 * Open (or keep) a device with the limits all of `kernels` need at (N, d), so that
 * later runAttention and timeKernels calls at that size or smaller share it and its
 * compiled pipelines. Throws GpuError.
 */
export async function openDevice({ kernels, n, d, heads = 1, workgroupBytes = 16384 }) {
  try {
    const manifest = await loadManifest();
    await getDevice(needsOf(manifest, { kernels, n, d, heads, workgroupBytes }));
  } catch (err) {
    throw asGpuError(err);
  }
}

/**
 * Time plain and fused at (N, d) on random float32 inputs; one head by default.
 * Returns {kernels: {name: {medianMs, samples, sampleMs, reps, method,
 * belowResolution, tiling, shaders, gflops}}, method, note, flopConvention, speedup}.
 * GFLOP/s counts 4·N²·d per head, half that for causal. Throws GpuError.
 */
export async function timeKernels({
  n,
  d,
  causal = false,
  heads = 1,
  kernels = ["plain", "fused"],
  workgroupBytes = 16384,
  minSampleMs = 10,
  minSamples = 5,
  maxSubmitMs = 1000,
  onProgress = null,
} = {}) {
  try {
    const manifest = await loadManifest();
    const s = await getDevice(needsOf(manifest, { kernels, n, d, heads, workgroupBytes }));
    const out = {};
    const flop = 4 * n * n * d * heads * (causal ? 0.5 : 1);
    for (const kernel of kernels) {
      const r = await timeOne(s, manifest, { kernel, n, d, heads, causal, workgroupBytes, minSampleMs, minSamples, maxSubmitMs, onProgress });
      r.gflops = flop / (r.medianMs / 1e3) / 1e9;
      out[kernel] = r;
    }
    const method = s.timestamps ? "timestamp" : "wall";
    return {
      kernels: out,
      method,
      note: s.timestamps ? TIMESTAMP_NOTE : WALL_NOTE,
      flopConvention: "4·N²·d FLOP per head (QKᵀ and PV, 2 FLOP per multiply-add); causal counts half.",
      speedup: out.plain && out.fused ? out.plain.medianMs / out.fused.medianMs : null,
      limits: { ...s.limits },
    };
  } catch (err) {
    throw asGpuError(err);
  }
}

/** One line for a timeKernels result, e.g. "plain 12.3 ms, fused 1.2 ms: 10.2× (GPU timestamps)". */
export function formatTiming(result) {
  const parts = [];
  for (const [name, r] of Object.entries(result.kernels || {})) {
    const ms = r.medianMs >= 1 ? r.medianMs.toFixed(2) : r.medianMs.toFixed(3);
    parts.push(`${name} ${ms} ms${r.belowResolution ? " (below timer resolution)" : ""}`);
  }
  const speed = result.speedup ? `: fused ${result.speedup.toFixed(1)}× as fast` : "";
  const how = result.method === "timestamp" ? "GPU timestamps, rounded to 100 µs by Chrome" : "wall clock";
  return `${parts.join(", ")}${speed} (${how}).`;
}
