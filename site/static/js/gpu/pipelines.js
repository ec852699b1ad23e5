// Shader modules and compute pipelines, compiled once per device and cached.
import { fail } from "./errors.js";
import { _ } from "../i18n.js";
import { instrumentSource, loadManifest, loadSource } from "./files.js";
import { currentState, getAdapter, getDevice, scoped } from "./device.js";
import { lessonTiling, passVariant } from "./plan.js";

/** The WebGPU feature a kernel's dtype needs (manifest "dtypes": shader-f16 for float16; null for float32). */
export function featureOf(manifest, kernel) {
  const dtype = manifest.kernels[kernel].dtype || "float32";
  return ((manifest.dtypes || {})[dtype] || {}).feature || null;
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

/** The pipeline of pass `passIndex` of `kernel` at d with these tiles: {pipeline, spec, file}. */
export async function getPipeline(s, manifest, kernel, passIndex, d, tiling, instrumented) {
  const spec = manifest.kernels[kernel].wgsl[passIndex];
  const key = `${kernel}:${passIndex}:${d}:${tiling.blockRows}:${tiling.blockCols}:${instrumented}`;
  if (s.pipelines.has(key)) return s.pipelines.get(key);
  const { file, constants } = passVariant(spec, d, tiling, s.subgroupMin);
  const module = await compileModule(s, manifest, file, instrumented);
  const pipeline = await scoped(s.device, _("building {file}", { file }), () =>
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
  const held = currentState();
  const adapter = held ? held.adapter : await getAdapter();
  let wgNeed = 0;
  for (const spec of Object.values(manifest.kernels)) {
    for (const b of Object.values(spec.workgroup_bytes || {})) {
      if (b <= adapter.limits.maxComputeWorkgroupStorageSize) wgNeed = Math.max(wgNeed, b);
    }
  }
  // The instrumented build binds one more storage buffer (the counters): the backward's
  // dkv passes then bind 9, above WebGPU's default 8. Ask for what the passes need,
  // where the adapter offers it; a pass that needs more is reported as skipped.
  const storageOf = (pass, instrumented) =>
    Object.keys(pass.bindings || {}).filter((b) => b !== "params").length + (instrumented ? 1 : 0);
  let storageNeed = 0;
  for (const spec of Object.values(manifest.kernels)) {
    for (const pass of spec.wgsl || []) storageNeed = Math.max(storageNeed, storageOf(pass, true));
  }
  storageNeed = Math.min(storageNeed, adapter.limits.maxStorageBuffersPerShaderStage);
  const s = await getDevice(manifest, {
    limits: { maxComputeWorkgroupStorageSize: wgNeed, maxStorageBuffersPerShaderStage: storageNeed },
  });
  const out = [];
  const heads = ds || manifest.head_dims;
  for (const instrumented of [false, true]) {
    const files = new Set();
    for (const [kernel, spec] of Object.entries(manifest.kernels)) {
      if (!spec.wgsl) continue;
      // A kernel whose dtype needs a feature this device lacks (float16: shader-f16) cannot
      // compile here: its shaders and pipelines are reported as skipped, saying why.
      const feature = featureOf(manifest, kernel);
      const missing = feature && !s.device.features.has(feature) ? `needs ${feature}` : null;
      for (const [i, pass] of spec.wgsl.entries()) {
        const alt = s.subgroupMin > 0 ? Object.values((pass.with_subgroups || {}).file_by_d || {}) : [];
        for (const file of [pass.file, ...Object.values(pass.file_by_d || {}), ...alt]) {
          if (files.has(file)) continue;
          files.add(file);
          if (missing) {
            out.push({ file, instrumented, d: null, errors: [], warnings: 0, skipped: missing });
            continue;
          }
          let code = await loadSource(file);
          if (instrumented) code = instrumentSource(code, manifest.instrument.marker);
          const module = s.device.createShaderModule({ code, label: file });
          const info = await module.getCompilationInfo();
          out.push({
            file,
            instrumented,
            d: null,
            errors: info.messages
              .filter((m) => m.type === "error")
              .map((m) => `${m.lineNum}:${m.linePos} ${m.message}`),
            warnings: info.messages.filter((m) => m.type === "warning").length,
          });
        }
        for (const d of heads) {
          const errors = [];
          const tiling = lessonTiling(manifest, kernel, d);
          const file = passVariant(pass, d, tiling, s.subgroupMin).file;
          if (missing) {
            out.push({ file, kernel, instrumented, d, errors, skipped: missing });
            continue;
          }
          const wb = spec.workgroup_bytes ? spec.workgroup_bytes[String(d)] : 0;
          if (wb > s.limits.maxComputeWorkgroupStorageSize) {
            out.push({ file, kernel, instrumented, d, errors, skipped: `needs ${wb} B of workgroup memory` });
            continue;
          }
          const buffers = storageOf(pass, instrumented);
          if (buffers > s.device.limits.maxStorageBuffersPerShaderStage) {
            out.push({ file, kernel, instrumented, d, errors, skipped: `binds ${buffers} storage buffers` });
            continue;
          }
          try {
            await getPipeline(s, manifest, kernel, i, d, tiling, instrumented);
          } catch (err) {
            errors.push(err.message);
          }
          out.push({ file, kernel, instrumented, d, errors });
        }
      }
    }
  }
  return out;
}
