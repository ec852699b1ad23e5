// The GPU device: one adapter and device at a time, with the limits a run needs (Python's
// plan names them: planner/__init__.py gpu_plan's needs and required_limits), error scopes,
// and the adapter's description for the page.
import { asGpuError, fail } from "./errors.js";
import { _, num } from "../i18n.js";

const lostMessage = (s) =>
  _("The GPU device was lost ({reason}). Press Retry to start a new one.", { reason: s.lostMessage });

const fmt = (x) => num(x);

let state = null; // {adapter, device, limits, lost, pipelines: Map, ...}

/** The device now held (or null). */
export function currentState() {
  return state;
}

/** Forget the device (after a loss or an error): the next call asks for a new one. */
export function resetDevice() {
  if (state && state.device && !state.lost) {
    state.expectedLoss = true;
    try {
      state.device.destroy();
    } catch {
      /* already gone */
    }
  }
  state = null;
}

export async function getAdapter() {
  if (typeof navigator === "undefined" || !navigator.gpu) {
    throw fail(
      "no-webgpu",
      _(
        "This browser has no WebGPU (navigator.gpu is missing). Chrome and Edge 113+ have it; Firefox and Safari are adding it. Count and Check still work.",
      ),
    );
  }
  let adapter = null;
  try {
    adapter = await navigator.gpu.requestAdapter({ powerPreference: "high-performance" });
  } catch (err) {
    throw fail("no-adapter", _("WebGPU could not find a graphics adapter: {error}", { error: err.message }), err);
  }
  if (!adapter) {
    throw fail(
      "no-adapter",
      _(
        "WebGPU is present but offered no graphics adapter (it may be turned off, or this GPU is on the browser's block list). Count and Check still work.",
      ),
    );
  }
  return adapter;
}

// The limits the planner holds a run to (planner/__init__.py LIMITS), read from an adapter
// for Python and from a device to compare a held one on.
export const LIMIT_NAMES = [
  "maxStorageBufferBindingSize",
  "maxBufferSize",
  "maxComputeWorkgroupStorageSize",
  "maxComputeInvocationsPerWorkgroup",
  "maxComputeWorkgroupSizeX",
  "maxComputeWorkgroupSizeY",
  "maxComputeWorkgroupSizeZ",
  "maxStorageBuffersPerShaderStage",
  "maxComputeWorkgroupsPerDimension",
];

function readLimits(limits) {
  const out = {};
  for (const name of LIMIT_NAMES) if (limits[name] !== undefined) out[name] = Number(limits[name]);
  return out;
}

/**
 * The smallest subgroup the device getDevice opens will have, from a probeGpu() answer:
 * the adapter's subgroupMinSize where it has the subgroups feature, else 0. Python's
 * plan picks each pass's shader with it (gpu_plan's subgroup_min_size).
 */
export function subgroupMinOf(probe) {
  const info = (probe && probe.adapterInfo) || {};
  return probe && probe.features && probe.features.subgroups ? Number(info.subgroupMinSize) || 0 : 0;
}

/**
 * A device for `plan` (Python's gpu_plan answer, or any {needs, required_limits}): it
 * asks for required_limits (the needs above WebGPU's defaults), after checking that
 * the adapter offers every need; otherwise a "limits" GpuError names the limit, the
 * need and the offer. A held device that already covers every need is kept (with its
 * compiled pipelines); a new one asks for at least what the held one had.
 */
export async function getDevice(plan) {
  if (state && state.lost) {
    throw fail("device-lost", lostMessage(state));
  }
  const adapter = state ? state.adapter : await getAdapter();
  const needs = plan.needs || {};
  for (const [name, need] of Object.entries(needs)) {
    const offer = adapter.limits[name];
    if (offer !== undefined && Number(need) > Number(offer)) {
      throw fail(
        "limits",
        _("This size needs {limit} = {need}, but this GPU offers {offer}.", {
          limit: name,
          need: fmt(need),
          offer: fmt(offer),
        }),
      );
    }
  }
  if (state && Object.entries(needs).every(([name, need]) => !(Number(need) > Number(state.device.limits[name])))) {
    return state;
  }
  // Ask for at least what the held device had, so earlier sizes keep working.
  const requiredLimits = { ...(plan.required_limits || {}) };
  if (state) {
    for (const [name, had] of Object.entries(state.asked)) {
      if (!(requiredLimits[name] >= had)) requiredLimits[name] = had;
    }
  }
  // An adapter gives out one device only (WebGPU §4.3: it is then "consumed"),
  // so a device with higher limits needs a fresh adapter.
  let fresh = adapter;
  if (state) {
    resetDevice();
    fresh = await getAdapter();
  }
  // shader-f16 for the float16 kernels (manifest "dtypes"), where the adapter has it.
  const requiredFeatures = ["timestamp-query", "subgroups", "shader-f16"].filter((f) => fresh.features.has(f));
  let device;
  try {
    device = await fresh.requestDevice({ requiredFeatures, requiredLimits });
  } catch (err) {
    throw fail("limits", _("The GPU refused a device with these limits: {error}", { error: err.message }), err);
  }
  const s = {
    adapter: fresh,
    device,
    asked: requiredLimits,
    limits: readLimits(device.limits),
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
    s.lostMessage = info.message || info.reason || _("no reason given");
    if (state === s && s.expectedLoss) state = null;
  });
  device.addEventListener?.("uncapturederror", (ev) => {
    s.uncaptured = ev.error && ev.error.message;
  });
  state = s;
  return s;
}

// Software adapters: WebGPU on the CPU. Their times say nothing about a GPU's memory.
const SOFTWARE = [
  [/swiftshader/i, "SwiftShader"],
  [/lavapipe|llvmpipe/i, "lavapipe"],
  [/\bwarp\b|microsoft basic render/i, "WARP"],
];

/**
 * The software renderer an adapter is, by its own flag (isFallbackAdapter) or its
 * vendor, architecture, device or description; null for a hardware GPU.
 */
export function softwareAdapter(info = {}, isFallback = false) {
  const text = [info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(" ");
  for (const [pattern, name] of SOFTWARE) if (pattern.test(text)) return name;
  return isFallback ? _("a fallback (software) adapter") : null;
}

/** Adapter, limits and features for the GPU card; never throws. */
export async function probeGpu() {
  try {
    const adapter = await getAdapter();
    let info = adapter.info;
    if (!info && adapter.requestAdapterInfo) info = await adapter.requestAdapterInfo();
    info = info || {};
    const adapterInfo = {
      vendor: info.vendor || "",
      architecture: info.architecture || "",
      device: info.device || "",
      description: info.description || "",
      subgroupMinSize: info.subgroupMinSize || 0,
      subgroupMaxSize: info.subgroupMaxSize || 0,
    };
    const fallback = Boolean(adapter.isFallbackAdapter || info.isFallbackAdapter);
    return {
      ok: true,
      adapterInfo,
      software: softwareAdapter(adapterInfo, fallback),
      limits: readLimits(adapter.limits),
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

/** Run `fn` inside validation, out-of-memory and internal error scopes; throw the first error. */
export async function scoped(device, what, fn) {
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
  // `what` is an infinitive phrase in the page's language ("allocating buffers").
  if (oom)
    throw fail(
      "out-of-memory",
      _("The GPU ran out of memory while {what}: {error}. Try a smaller N.", { what, error: oom.message }),
    );
  if (validation)
    throw fail("validation", _("The GPU rejected the work while {what}: {error}", { what, error: validation.message }));
  if (internal) throw fail("internal", _("The GPU failed while {what}: {error}", { what, error: internal.message }));
  return value;
}

export function checkLost(s) {
  if (s.lost) throw fail("device-lost", lostMessage(s));
}
