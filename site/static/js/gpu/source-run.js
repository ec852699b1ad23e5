// A shader given as a source string (exercise 4: the learner's WGSL), compiled and run
// on the device the lab's runs use (device.js), with the lesson's fused bindings:
// params 0, Q 1, K 2, V 3, O 4, and the instrument's counters (manifest.instrument)
// when instrumented. Overrides D, BR, BC are the tiling the learner declares. The learner
// writes the lesson's fused kernel, so Python plans the run as fused's (planner/__init__.py,
// through the exercise worker's "wgsl-plan" and "wgsl-cases"): device limits, dispatch.
import { asGpuError, fail } from "./errors.js";
import { instrumentSource, loadManifest } from "./files.js";
import { checkLost, getDevice, scoped } from "./device.js";
import { kernelPlan } from "./dispatches.js";

/**
 * Compile `code` on the learner's GPU, on a device for `plan` (Python's {needs,
 * required_limits}). Returns {messages: [{type, line, column, message}]}
 * from getCompilationInfo() (lines as the learner's source numbers them: the instrumented
 * build only uncomments lines, so the numbers agree), and `module` when there is no error.
 */
export async function compileSource(code, { instrumented = true, plan }) {
  try {
    const manifest = await loadManifest();
    const s = await getDevice(plan);
    const text = instrumented ? instrumentSource(code, manifest.instrument.marker) : code;
    const module = s.device.createShaderModule({ code: text, label: "your shader" });
    const info = await module.getCompilationInfo();
    const messages = info.messages.map((m) => ({
      type: m.type,
      line: m.lineNum,
      column: m.linePos,
      message: m.message,
    }));
    return { messages, module: messages.some((m) => m.type === "error") ? null : module, s, manifest };
  } catch (err) {
    throw asGpuError(err);
  }
}

function storage(device, bytes, data) {
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const buf = device.createBuffer({ size: Math.max(16, Math.ceil(bytes / 4) * 4), usage });
  if (data) device.queue.writeBuffer(buf, 0, data);
  return buf;
}

async function readBack(device, src, bytes) {
  const dst = device.createBuffer({ size: src.size, usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(src, 0, dst, 0, src.size);
  device.queue.submit([enc.finish()]);
  await dst.mapAsync(GPUMapMode.READ);
  const out = dst.getMappedRange(0, bytes).slice(0);
  dst.unmap();
  dst.destroy();
  return out;
}

/**
 * Run `code` (instrumented) on Q, K, V (Float32Array, N·d each, row-major) at the
 * tiling {D, BR, BC}, as `plan` says: Python's gpu_plan answer for the fused kernel at
 * this N, d, causal and M, instrumented (its N, causal and dispatch are the run's).
 * Returns {o: Float32Array N·d, counts: {tensor: {read, write}} in bytes, messages}.
 * Throws GpuError("shader") with the first compile error.
 */
export async function runSource({ code, plan, constants, q, k, v, timeRuns = 0 }) {
  const kp = kernelPlan(plan, "fused");
  const { n, causal } = kp;
  const groups = kp.passes[0].dispatch[0];
  const { messages, module, s, manifest } = await compileSource(code, { instrumented: true, plan });
  if (!module) {
    const m = messages.find((x) => x.type === "error");
    throw fail("shader", `line ${m.line}:${m.column}: ${m.message}`);
  }
  try {
    checkLost(s);
    const device = s.device;
    const pipeline = await scoped(device, "building your shader", () =>
      device.createComputePipelineAsync({ layout: "auto", compute: { module, entryPoint: "main", constants } }),
    );
    const bytes = kp.buffers.Q;
    const slots = manifest.instrument.slots;
    const bufs = {
      Q: storage(device, bytes, q),
      K: storage(device, bytes, k),
      V: storage(device, bytes, v),
      O: storage(device, bytes),
      counters: storage(device, slots.length * 4),
    };
    const params = device.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    device.queue.writeBuffer(params, 0, new Uint32Array([n, causal ? 1 : 0, 0, 0]));
    const binding = { Q: 1, K: 2, V: 3, O: 4, counters: manifest.instrument.binding };
    const entries = [{ binding: 0, resource: { buffer: params } }];
    for (const [name, b] of Object.entries(binding)) entries.push({ binding: b, resource: { buffer: bufs[name] } });
    const group = await scoped(device, "binding your shader's buffers", () =>
      device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries }),
    );
    await scoped(device, "running your shader", () => dispatchOnce(device, pipeline, group, groups));
    const o = new Float32Array(await readBack(device, bufs.O, bytes));
    const raw = new Uint32Array(await readBack(device, bufs.counters, slots.length * 4));
    const counts = {};
    slots.forEach((slot, i) => {
      const [tensor, kind] = slot.split(".");
      counts[tensor] = counts[tensor] || { read: 0, write: 0 };
      counts[tensor][kind] = raw[i] * manifest.bytes_per_element;
    });
    let medianMs = null;
    if (timeRuns > 0) medianMs = await timeSource(device, code, manifest, constants, entries, groups, timeRuns);
    for (const b of Object.values(bufs)) b.destroy();
    params.destroy();
    return { o, counts, messages, medianMs };
  } catch (err) {
    throw asGpuError(err);
  }
}

// One compute pass of `workgroups` workgroups (a row of query tiles), submitted and waited for.
async function dispatchOnce(device, pipeline, group, workgroups) {
  const enc = device.createCommandEncoder();
  const pass = enc.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, group);
  pass.dispatchWorkgroups(workgroups, 1, 1);
  pass.end();
  device.queue.submit([enc.finish()]);
  await device.queue.onSubmittedWorkDone();
}

// Median wall time of `runs` dispatches of the uninstrumented build (the production
// build, where tally() compiles away), each waited for with onSubmittedWorkDone.
async function timeSource(device, code, manifest, constants, entries, groups, runs) {
  const module = device.createShaderModule({ code, label: "your shader (timed)" });
  const pipeline = await device.createComputePipelineAsync({
    layout: "auto",
    compute: { module, entryPoint: "main", constants },
  });
  const plain = entries.filter((e) => e.binding !== manifest.instrument.binding);
  const group = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: plain });
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await dispatchOnce(device, pipeline, group, groups);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)];
}
