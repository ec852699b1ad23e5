// What a run needs from a GPU, worked out with no GPU and no page: each kernel's
// tiles, the shader each pass runs, buffer sizes, and the WebGPU limits to ask for
// (or the one that refuses the size, with the form field to change).
//
// Pure: no DOM and no WebGPU globals, so node runs it in the parity tests
// (tests/test_js_parity.py) beside emulator/tiling.py and emulator/api.py gpu_plan.

import { fail } from "./errors.js";
import { _, num } from "../i18n.js";

export const BYTES = 4; // float32

// WebGPU's default limits (WebGPU §3.6.2): what a page gets without asking.
// The manifest's "webgpu_default_limits", where present, overrides these.
const SPEC_DEFAULTS = {
  maxComputeWorkgroupStorageSize: 16384,
  maxComputeInvocationsPerWorkgroup: 256,
  maxComputeWorkgroupSizeX: 256,
  maxComputeWorkgroupsPerDimension: 65535,
  maxStorageBuffersPerShaderStage: 8,
  maxStorageBufferBindingSize: 134217728,
  maxBufferSize: 268435456,
};

/** WebGPU's default limits, camelCase names → numbers. */
export function webgpuDefaults(manifest = {}) {
  const out = { ...SPEC_DEFAULTS };
  for (const [name, value] of Object.entries(manifest.webgpu_default_limits || {})) {
    if (name in out && typeof value === "number") out[name] = value;
  }
  return out;
}

const fmt = (x) => num(x);

/** Whether a kernel stores the N×N scores S (and so P) in global memory, per its manifest passes. */
export function writesScores(spec) {
  return (spec.passes || []).some((p) => (typeof p === "string" ? p === "scores" : "S" in (p.writes || {})));
}

/**
 * Tiles of `kernel` at head dimension d: the lesson rule of emulator/tiling.py
 * (B_c = (M/2) / (2·4·d), B_r = 2·B_c) or the kernel's own per-d table.
 * Returns {blockRows, blockCols, workgroupBytes}; throws an "input" GpuError.
 */
export function lessonTiling(manifest, kernel, d, workgroupBytes = 16384) {
  const spec = manifest.kernels[kernel];
  if (!spec) throw fail("input", _("Unknown kernel “{kernel}”.", { kernel }));
  if (!manifest.head_dims.includes(d)) {
    throw fail(
      "input",
      _("Head dimension d must be one of {dims}; {d} is not.", { dims: manifest.head_dims.join(", "), d: String(d) }),
    );
  }
  if (spec.tiling === "lesson") {
    const bc = Math.floor(Math.floor(workgroupBytes / 2) / (2 * BYTES * d));
    if (bc < manifest.lesson.min_key_tile_rows) {
      throw fail(
        "input",
        _("M = {m} B leaves fewer than {rows} key rows at d = {d}.", {
          m: String(workgroupBytes),
          rows: String(manifest.lesson.min_key_tile_rows),
          d: String(d),
        }),
      );
    }
    return { blockRows: 2 * bc, blockCols: bc, workgroupBytes };
  }
  const br = spec.tiling.block_rows[String(d)];
  const bc = spec.tiling.block_cols[String(d)];
  const declared = (spec.workgroup_bytes || {})[String(d)];
  return { blockRows: br, blockCols: bc, workgroupBytes: declared ?? BYTES * d * (br + 2 * bc) };
}

/** The .wgsl file of one pass at head dimension d ("file_by_d" overrides "file"). */
export function shaderFile(spec, d) {
  return (spec.file_by_d && spec.file_by_d[String(d)]) || spec.file;
}

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
 * bench/wgsl_host.py (pass_variant) applies the same rule; tests/test_js_parity.py holds them equal.
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

/**
 * Invocations of one pass's workgroup, [x, y, z], where the manifest fixes them: a pass
 * with a WG constant runs @workgroup_size(WG). The other passes size theirs in the
 * shader from B_r, B_c and d (kernels_wgsl/README.md, "Tiling"), at most 256 for every
 * M the lab allows, WebGPU's default (emulator/shaders.py evaluates them exactly);
 * null for them.
 */
export function passWorkgroupSize(manifest, kernel, pass) {
  const wg = (pass.constants || {}).WG;
  if (wg) return [wg, 1, 1];
  return null;
}

/**
 * What one kernel needs at (N, d) for `heads` heads: buffer bytes, workgroup memory,
 * invocations, workgroups per dimension and storage buffers per stage; no limits
 * applied. Throws an "input" GpuError for an unknown kernel or a bad size.
 */
export function kernelNeeds(manifest, kernel, n, d, heads = 1, instrumented = false, workgroupBytes = 16384) {
  if (!Number.isInteger(n) || n < 1) throw fail("input", _("N must be a whole number ≥ 1, not {n}.", { n: String(n) }));
  const spec = manifest.kernels[kernel];
  if (!spec || !spec.wgsl) throw fail("input", _("Kernel “{kernel}” has no WGSL build.", { kernel }));
  const tiling = lessonTiling(manifest, kernel, d, workgroupBytes);
  const scores = writesScores(spec);
  const rowBytes = heads * n * d * BYTES;
  const scoreBytes = n * n * BYTES; // S and P of one head: plain batches one head at a time
  let invocations = 0;
  let sizeX = 0;
  let groupsX = 0;
  let storageBuffers = 0;
  for (const pass of spec.wgsl) {
    const size = passWorkgroupSize(manifest, kernel, pass);
    if (size) {
      invocations = Math.max(invocations, size[0] * size[1] * size[2]);
      sizeX = Math.max(sizeX, size[0]);
    }
    groupsX = Math.max(groupsX, pass.grid === "query_tiles" ? Math.ceil(n / tiling.blockRows) : n);
    const buffers = Object.keys(pass.bindings).filter((name) => name !== "params").length;
    storageBuffers = Math.max(storageBuffers, buffers + (instrumented ? 1 : 0));
  }
  return {
    kernel,
    tiling,
    tuned: spec.tiling !== "lesson",
    headBatch: scores ? 1 : heads,
    bufferBytes: scores ? Math.max(rowBytes, scoreBytes) : rowBytes,
    scoreBytes: scores ? scoreBytes : 0,
    softmaxRow: scores ? n : 0,
    workgroupBytes: tiling.workgroupBytes,
    invocations,
    sizeX,
    groupsX,
    groupsY: scores ? 1 : heads,
    storageBuffers,
  };
}

function largestSquareRoot(x) {
  let r = Math.floor(Math.sqrt(x));
  while (r * r > x) r--;
  while ((r + 1) * (r + 1) <= x) r++;
  return r;
}

/**
 * Whether running every one of `kernels` at (N, d) fits a GPU offering `offer`
 * (WebGPU limits by their camelCase names; a missing one counts as the default).
 *
 * Returns {fits: true, requiredLimits, needs}: requiredLimits names only the limits
 * above WebGPU's defaults, to pass to requestDevice. Or {fits: false, refusal:
 * {field, limit, need, offer, message}}: field is the form control to change ("n",
 * "workgroup_bytes" or "kernel"). The checks run in emulator/api.py gpu_plan's order
 * and its messages are the same words (tests/test_js_parity.py).
 */
export function planDevice(
  manifest,
  { kernels, n, d, heads = 1, workgroupBytes = 16384, instrumented = false },
  offer = {},
) {
  const defaults = webgpuDefaults(manifest);
  const lim = (name) => Number(offer[name] ?? defaults[name]);
  const all = kernels.map((k) => kernelNeeds(manifest, k, n, d, heads, instrumented, workgroupBytes));
  const max = (key) => Math.max(0, ...all.map((x) => x[key]));
  const needs = {
    maxStorageBufferBindingSize: max("bufferBytes"),
    maxBufferSize: max("bufferBytes"),
    maxComputeWorkgroupStorageSize: max("workgroupBytes"),
    maxComputeInvocationsPerWorkgroup: max("invocations"),
    maxComputeWorkgroupSizeX: max("sizeX"),
    maxComputeWorkgroupsPerDimension: Math.max(max("groupsX"), max("groupsY")),
    maxStorageBuffersPerShaderStage: max("storageBuffers"),
  };
  const refuse = (field, limit, need, message) => ({
    fits: false,
    refusal: { field, limit, need, offer: lim(limit), message },
  });
  const allowed = Math.min(lim("maxStorageBufferBindingSize"), lim("maxBufferSize"));
  if (needs.maxStorageBufferBindingSize > allowed) {
    const limit =
      lim("maxStorageBufferBindingSize") <= lim("maxBufferSize") ? "maxStorageBufferBindingSize" : "maxBufferSize";
    const score = max("scoreBytes");
    if (score >= needs.maxStorageBufferBindingSize) {
      return refuse(
        "n",
        limit,
        score,
        _(
          "The plain kernel stores S and P in global memory: N²·4 = {bytes} B each at N = {n}, but this GPU allows {allowed} B per buffer. Try N ≤ {try_n}.",
          {
            bytes: fmt(score),
            n: fmt(n),
            allowed: fmt(allowed),
            try_n: fmt(largestSquareRoot(Math.floor(allowed / BYTES))),
          },
        ),
      );
    }
    return refuse(
      "n",
      limit,
      needs.maxStorageBufferBindingSize,
      _(
        "Q, K, V and O take N·d·4 = {bytes} B each at N = {n}, d = {d}, but this GPU allows {allowed} B per buffer. Try a smaller N.",
        { bytes: fmt(needs.maxStorageBufferBindingSize), n: fmt(n), d: String(d), allowed: fmt(allowed) },
      ),
    );
  }
  const maxRow = (manifest.limits || {}).softmax_max_row;
  if (maxRow && max("softmaxRow") > maxRow) {
    return refuse(
      "n",
      "softmax_max_row",
      n,
      _(
        "The plain kernel's softmax pass holds one row of S ({n} scores) in registers; the WGSL kernels stop at N = {max_row}. Count and Check still work at this size.",
        { n: fmt(n), max_row: fmt(maxRow) },
      ),
    );
  }
  const lessonNeeds = all.filter((x) => !x.tuned);
  const tunedNeeds = all.filter((x) => x.tuned);
  const wgOffer = lim("maxComputeWorkgroupStorageSize");
  if (lessonNeeds.some((x) => x.workgroupBytes > wgOffer)) {
    return refuse(
      "workgroup_bytes",
      "maxComputeWorkgroupStorageSize",
      workgroupBytes,
      _(
        "M = {m} B of workgroup memory, but this GPU offers {offer} B per workgroup. Time the kernels with M ≤ {offer}.",
        { m: fmt(workgroupBytes), offer: fmt(wgOffer) },
      ),
    );
  }
  const tooBig = tunedNeeds.find((x) => x.workgroupBytes > wgOffer);
  if (tooBig) {
    return refuse(
      "kernel",
      "maxComputeWorkgroupStorageSize",
      tooBig.workgroupBytes,
      _("{kernel} needs {bytes} B of workgroup memory at d = {d}, and this GPU offers {offer} B.", {
        kernel: tooBig.kernel,
        bytes: fmt(tooBig.workgroupBytes),
        d: String(d),
        offer: fmt(wgOffer),
      }),
    );
  }
  // Every pass runs at most 256 invocations a workgroup (WebGPU's default); a GPU that
  // runs fewer is refused, naming the limit.
  for (const limit of ["maxComputeInvocationsPerWorkgroup", "maxComputeWorkgroupSizeX"]) {
    const need = needs[limit];
    if (need > lim(limit)) {
      return refuse(
        "workgroup_bytes",
        limit,
        need,
        _(
          "At d = {d}, M = {m} B, a pass of these kernels runs {need} GPU invocations in one workgroup, but this GPU runs at most {offer} ({limit}).",
          { d: String(d), m: fmt(workgroupBytes), need: fmt(need), offer: fmt(lim(limit)), limit },
        ),
      );
    }
  }
  if (needs.maxComputeWorkgroupsPerDimension > lim("maxComputeWorkgroupsPerDimension")) {
    return refuse(
      "n",
      "maxComputeWorkgroupsPerDimension",
      needs.maxComputeWorkgroupsPerDimension,
      _(
        "N = {n} needs {need} workgroups in one dispatch, but this GPU allows {offer} per dimension. Try a smaller N.",
        {
          n: fmt(n),
          need: fmt(needs.maxComputeWorkgroupsPerDimension),
          offer: fmt(lim("maxComputeWorkgroupsPerDimension")),
        },
      ),
    );
  }
  if (needs.maxStorageBuffersPerShaderStage > lim("maxStorageBuffersPerShaderStage")) {
    return refuse(
      "kernel",
      "maxStorageBuffersPerShaderStage",
      needs.maxStorageBuffersPerShaderStage,
      _("A kernel binds {need} storage buffers in one pass, but this GPU allows {offer} per shader stage.", {
        need: String(needs.maxStorageBuffersPerShaderStage),
        offer: String(lim("maxStorageBuffersPerShaderStage")),
      }),
    );
  }
  const requiredLimits = {};
  for (const [name, need] of Object.entries(needs)) {
    if (need > defaults[name]) requiredLimits[name] = need;
  }
  return { fits: true, requiredLimits, needs };
}

/** Sizes a run needs (see kernelNeeds); throws an "input" GpuError for 32-bit counters. */
export function planSizes(manifest, kernel, n, d, heads, instrumented, workgroupBytes = 16384) {
  const need = kernelNeeds(manifest, kernel, n, d, heads, instrumented, workgroupBytes);
  if (instrumented && n * n * heads > 2 ** 31) {
    throw fail("input", _("Instrumented runs count elements in 32-bit counters; use N ≤ {n}.", { n: fmt(4096) }));
  }
  return need;
}

/**
 * The dispatches of `runs` attention runs, grouped into submissions; each unit is
 * {passIndex, h0, nh, xBase, count}. `chunks` splits every pass into that many
 * dispatches along x, so no submission holds more than about 1 s of work.
 */
export function planDispatches(manifest, kernel, n, heads, headBatch, tiling, chunks) {
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
