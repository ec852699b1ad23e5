// The lesson's WGSL kernels on the visitor's GPU, through WebGPU: the one entry the
// lab and the tests import. Every run follows a plan Python made (planner/__init__.py,
// the worker's "gpu_plan" op), the plan the native host (cannery_host/wgpu_runner.py) runs
// too, so the bytes the lab counts are the bytes these kernels ask for.
//
//   errors.js     GpuError and the one failure path (kinds listed there)
//   dispatches.js pure: reads a plan and lays out its dispatches (derives nothing)
//   files.js      kernels/manifest.json and kernels/*.wgsl, fetched relative to the page
//   device.js     adapter, device with the plan's limits, error scopes, the GPU card's probe
//   pipelines.js  shader modules and pipelines, cached per device
//   runs.js       runAttention (one run, read back) and timeKernels (the timing loop)
export { GpuError, fail } from "./errors.js";
export { instrumentSource, loadManifest } from "./files.js";
export { currentState, probeGpu, resetDevice, softwareAdapter, subgroupMinOf } from "./device.js";
export { compileAll, featureOf } from "./pipelines.js";
export { FLOP_CONVENTION, formatTiming, openDevice, runAttention, timeKernels } from "./runs.js";
// float16.js    the float16 kernels (shader-f16): runFloat16, one run read back as bit patterns
export { runFloat16 } from "./float16.js";
// backward.js   the WGSL backward kernels: runBackward (one run, read back) and timeBackward
export { BACKWARD_FLOP_CONVENTION, runBackward, timeBackward } from "./backward.js";
// probes.js     the roofline probes: measureProbes (copy bandwidth, float32 FMA rate)
export { keptProbes, measureProbes } from "./probes.js";
