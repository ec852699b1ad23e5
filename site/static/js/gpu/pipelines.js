// Shader modules and compute pipelines, compiled once per device and cached.
import { fail } from "./errors.js";
import { _ } from "../i18n.js";
import { instrumentSource, loadManifest, loadSource } from "./files.js";
import { currentState, getAdapter, getDevice, scoped } from "./device.js";

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

/**
 * The pipeline of pass `passIndex` of a kernel plan (planner/__init__.py kernel_plan: the
 * pass's file, entry point and override constants): {pipeline, spec, file}. Throws a
 * "input" GpuError when the plan picked shaders for larger subgroups than this device has.
 */
export async function getPipeline(s, manifest, kp, passIndex, instrumented) {
  const spec = manifest.kernels[kp.kernel].wgsl[passIndex];
  const pass = kp.passes[passIndex];
  if ((kp.subgroup_min || 0) > s.subgroupMin) {
    throw fail(
      "input",
      _("The plan was made for subgroups of {planned} invocations; this device has {has}.", {
        planned: String(kp.subgroup_min),
        has: String(s.subgroupMin),
      }),
    );
  }
  const key = `${pass.file}:${pass.entry_point}:${JSON.stringify(pass.constants)}:${instrumented}`;
  if (s.pipelines.has(key)) return s.pipelines.get(key);
  const module = await compileModule(s, manifest, pass.file, instrumented);
  const pipeline = await scoped(s.device, _("building {file}", { file: pass.file }), () =>
    s.device.createComputePipelineAsync({
      layout: "auto",
      compute: { module, entryPoint: pass.entry_point, constants: pass.constants },
    }),
  );
  const entry = { pipeline, spec, file: pass.file };
  s.pipelines.set(key, entry);
  return entry;
}

/** "needs <feature>" where the device lacks the feature `kernel`'s dtype needs, else null. */
function lacking(s, manifest, kernel) {
  const feature = featureOf(manifest, kernel);
  return feature && !s.device.features.has(feature) ? `needs ${feature}` : null;
}

/**
 * Compile every shader file the manifest names (plain and instrumented builds), then
 * build the pipelines of the given kernel plans (Python's planner/__init__.py kernel_plan,
 * one per kernel, d and build). The device asks for the largest need of the plans,
 * within what the adapter offers; a plan that needs more is reported as skipped.
 * Returns [{file, instrumented, d, kernel?, errors: [string], skipped?}] (empty errors = fine).
 */
export async function compileAll({ plans = [] } = {}) {
  const manifest = await loadManifest();
  const held = currentState();
  const adapter = held ? held.adapter : await getAdapter();
  const limits = {};
  for (const kp of plans) {
    for (const [name, need] of Object.entries(kp.needs)) {
      if (need <= Number(adapter.limits[name])) limits[name] = Math.max(limits[name] || 0, need);
    }
  }
  const s = await getDevice({ needs: limits, required_limits: limits });
  const out = [];
  for (const instrumented of [false, true]) {
    const files = new Set();
    for (const [kernel, spec] of Object.entries(manifest.kernels)) {
      // A kernel whose dtype needs a feature this device lacks (float16: shader-f16) cannot
      // compile here: its shaders and pipelines are reported as skipped, saying why.
      const missing = lacking(s, manifest, kernel);
      for (const pass of spec.wgsl || []) {
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
      }
    }
    for (const kp of plans.filter((x) => x.instrumented === instrumented)) {
      const over = Object.entries(kp.needs).find(([name, need]) => need > Number(s.device.limits[name]));
      const missing = lacking(s, manifest, kp.kernel);
      for (const [i, pass] of kp.passes.entries()) {
        const row = { file: pass.file, kernel: kp.kernel, instrumented, d: kp.d, errors: [] };
        if (missing) {
          row.skipped = missing;
        } else if (over) {
          row.skipped = `needs ${over[0]} = ${over[1]}`;
        } else {
          try {
            await getPipeline(s, manifest, kp, i, instrumented);
          } catch (err) {
            row.errors.push(err.message);
          }
        }
        out.push(row);
      }
    }
  }
  return out;
}
