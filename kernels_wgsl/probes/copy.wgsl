// probes/copy.wgsl: the copy bandwidth of a device, the slanted roof of its roofline
// (Williams, Waterman and Patterson, "Roofline", CACM 52(4), 2009: the attainable rate
// is min(peak FLOP/s, bandwidth × FLOP per byte)). Not a kernel of the lesson: it moves
// bytes and does no arithmetic, to measure how fast global memory (HBM) streams.
//
// dst[i] = src[i] for every vec4 i < n4, grid-stride: invocation g copies g, g + stride,
// g + 2·stride, … with stride = the dispatch's invocations along x (num_workgroups.x · WG),
// so neighbouring invocations touch neighbouring 16-byte vec4s and any buffer size works
// with a dispatch within maxComputeWorkgroupsPerDimension. The host sizes both buffers and
// the dispatch from emulator/plan.py probe_plan (within the adapter's
// maxStorageBufferBindingSize and maxBufferSize).
//
// Bytes per run: 16·n4 read + 16·n4 written = 32·n4 (the copy's bandwidth counts both).
// FLOP per run: 0.

override WG: u32 = 256u;  // invocations per workgroup

struct Params {
  n4: u32,       // vec4s to copy
  iters: u32,    // unused here (the arithmetic probe's); one layout for both probes
  a: f32,
  b: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<f32>>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let stride = groups.x * WG;
  for (var i = gid.x; i < params.n4; i += stride) {
    dst[i] = src[i];
  }
}
