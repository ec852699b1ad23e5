// The roofline probes (kernels_wgsl/probes/) on the visitor's GPU: its copy bandwidth and
// float32 arithmetic rate, the two roofs the lab draws under Time. Python plans them
// (planner/__init__.py probe_plan, the worker's "probe_plan" op): buffer sizes within the
// adapter's limits and every dispatch. The sample rule is the manifest's ("probes"),
// the one cannery_host/probes.py follows natively for `python -m bench.bench_roofline`.
//
// Conventions: bandwidth = bytes read plus written by the copy per second; arithmetic =
// 2 FLOP per fused multiply-add per second. Wall clock from submit to
// onSubmittedWorkDone, each sample at least the plan's sample_ms of work.
import { _ } from "../i18n.js";
import { fail } from "./errors.js";
import { loadSource } from "./files.js";
import { checkLost, getDevice, scoped } from "./device.js";

const KEY = "cannery-roofline";
let kept = null; // {adapterKey, figures}: measured once a visit

/** The probes' figures measured earlier this visit on this adapter, or null. */
export function keptProbes(adapterKey) {
  if (kept && kept.adapterKey === adapterKey) return kept.figures;
  try {
    const saved = JSON.parse(sessionStorage.getItem(KEY) || "null");
    if (saved && saved.adapterKey === adapterKey) {
      kept = saved;
      return saved.figures;
    }
  } catch {
    /* storage unavailable: measure again */
  }
  return null;
}

function keep(adapterKey, figures) {
  kept = { adapterKey, figures };
  try {
    sessionStorage.setItem(KEY, JSON.stringify(kept));
  } catch {
    /* storage unavailable: kept in memory only */
  }
}

async function pipelineOf(s, spec) {
  const code = await loadSource(spec.file);
  const module = s.device.createShaderModule({ code, label: spec.file });
  const info = await module.getCompilationInfo();
  const errors = info.messages.filter((m) => m.type === "error");
  if (errors.length) throw fail("shader", `${spec.file}:${errors[0].lineNum}: ${errors[0].message}`);
  return s.device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: spec.entry_point } });
}

function params(device, n4, iters, a, b) {
  const buf = device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  const bytes = new ArrayBuffer(16);
  new Uint32Array(bytes, 0, 2).set([n4, iters]);
  new Float32Array(bytes, 8, 2).set([a, b]);
  device.queue.writeBuffer(buf, 0, bytes);
  return buf;
}

/** submit(reps) -> ms: reps dispatches of one pipeline in one compute pass, wall clock. */
function timer(device, pipeline, bindGroup, dispatch) {
  return async (reps) => {
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    for (let i = 0; i < reps; i++) pass.dispatchWorkgroups(dispatch[0], dispatch[1], dispatch[2]);
    pass.end();
    const t0 = performance.now();
    device.queue.submit([enc.finish()]);
    await device.queue.onSubmittedWorkDone();
    return performance.now() - t0;
  };
}

// The sample rule (manifest "probes"): grow the work eightfold until a run takes a quarter
// of sample_ms, scale it to sample_ms, then sample while the deadline allows (at least once).
async function calibrate(run, start, most, target) {
  let k = start;
  let t = await run(k);
  while (t < target / 4 && k < most) {
    k = Math.min(most, k * 8);
    t = await run(k);
  }
  return Math.round(Math.min(most, Math.max(start, Math.ceil((k * target) / Math.max(t, 1e-3)))));
}

async function samplesWithin(run, k, plan, deadline) {
  const out = [];
  while (out.length < plan.samples) {
    const t0 = performance.now();
    out.push((await run(k)) / k);
    if (performance.now() + (performance.now() - t0) > deadline) break;
  }
  return out.sort((a, b) => a - b);
}

const median = (xs) => xs[Math.floor(xs.length / 2)];

async function measureCopy(s, plan, deadline) {
  const spec = plan.copy;
  const device = s.device;
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
  const src = device.createBuffer({ size: spec.buffers.src, usage });
  const dst = device.createBuffer({ size: spec.buffers.dst, usage });
  try {
    const pipeline = await pipelineOf(s, spec);
    const bindGroup = device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [
        { binding: spec.bindings.params, resource: { buffer: params(device, spec.n4, 0, 0, 0) } },
        { binding: spec.bindings.src, resource: { buffer: src } },
        { binding: spec.bindings.dst, resource: { buffer: dst } },
      ],
    });
    const run = timer(device, pipeline, bindGroup, spec.dispatch);
    await run(1); // warm-up
    const reps = await calibrate(run, 1, 1 << 20, plan.sample_ms);
    const samples = await samplesWithin(run, reps, plan, deadline);
    const ms = median(samples);
    return { bytesPerSecond: spec.bytes_per_run / (ms / 1e3), bytesPerRun: spec.bytes_per_run, msPerRun: ms, reps };
  } finally {
    src.destroy();
    dst.destroy();
  }
}

async function measureFma(s, plan, deadline) {
  const spec = plan.fma;
  const device = s.device;
  const out = device.createBuffer({ size: spec.buffers.out, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  try {
    const pipeline = await pipelineOf(s, spec);
    const run = (iters) => {
      const bindGroup = device.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: [
          { binding: spec.bindings.params, resource: { buffer: params(device, 0, iters, spec.a, spec.b) } },
          { binding: spec.bindings.out, resource: { buffer: out } },
        ],
      });
      return timer(device, pipeline, bindGroup, spec.dispatch)(1);
    };
    await run(spec.min_iters); // warm-up
    const iters = await calibrate(run, spec.min_iters, spec.max_iters, plan.sample_ms);
    const perStep = await samplesWithin(run, iters, plan, deadline);
    const ms = median(perStep) * iters;
    const flop = spec.invocations * spec.flop_per_step * iters;
    return { flopPerSecond: flop / (ms / 1e3), flopPerRun: flop, msPerRun: ms, iters };
  } finally {
    out.destroy();
  }
}

/**
 * Both probes on the device gpu/device.js holds (or a new one), following `plan` (Python's
 * probe_plan answer). Returns {bytesPerSecond, flopPerSecond, ridge (FLOP per byte where
 * the roofs meet), copy, fma, elapsedMs}; kept for the visit under `adapterKey`, so a
 * second Time does not measure again. Throws GpuError.
 */
export async function measureProbes(plan, adapterKey) {
  const earlier = keptProbes(adapterKey);
  if (earlier) return earlier;
  const t0 = performance.now();
  const s = await getDevice({ needs: {}, required_limits: {} });
  checkLost(s);
  const figures = await scoped(s.device, _("measuring this GPU's roofline"), async () => {
    const copy = await measureCopy(s, plan, t0 + plan.budget_ms / 2);
    const fma = await measureFma(s, plan, t0 + plan.budget_ms);
    return {
      bytesPerSecond: copy.bytesPerSecond,
      flopPerSecond: fma.flopPerSecond,
      ridge: fma.flopPerSecond / copy.bytesPerSecond,
      copy,
      fma,
      elapsedMs: performance.now() - t0,
    };
  });
  keep(adapterKey, figures);
  return figures;
}
