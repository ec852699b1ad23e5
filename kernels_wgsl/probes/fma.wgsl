// probes/fma.wgsl: the float32 arithmetic rate of a device, the flat roof of its
// roofline (Williams, Waterman and Patterson, "Roofline", CACM 52(4), 2009). Not a kernel
// of the lesson: it does arithmetic and almost no memory traffic.
//
// Each invocation runs eight independent chains of vec4 fused multiply-adds,
// x ← fma(x, a, b) (WGSL §17.5 "fma"), for params.iters steps: 32 scalar chains, so a
// core has independent work while one FMA's result is pending (instruction-level
// parallelism). a and b come from the uniform buffer, so the compiler cannot fold the
// chains; a = 0.999… and b small keep every value finite. Each invocation writes the sum
// of its chains to out, so none of the work is dead code.
//
// FLOP per run, by the usual convention (one FMA = 2 FLOP, as for the attention kernels'
// 4·N²·d): invocations · iters · 8 chains · 4 lanes · 2 = 64 · iters per invocation.
// Bytes per run: 4 written per invocation (negligible).
// The host sizes the dispatch from emulator/plan.py probe_plan.

override WG: u32 = 256u;  // invocations per workgroup

struct Params {
  n4: u32,       // unused here (the copy probe's); one layout for both probes
  iters: u32,    // FMA steps per chain
  a: f32,        // multiplier, just below 1
  b: f32,        // addend
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let a = vec4<f32>(params.a);
  let b = vec4<f32>(params.b);
  let s = f32(gid.x) * 1.0e-7;
  var x0 = vec4<f32>(s, s + 0.1, s + 0.2, s + 0.3);
  var x1 = x0 + vec4<f32>(0.01);
  var x2 = x0 + vec4<f32>(0.02);
  var x3 = x0 + vec4<f32>(0.03);
  var x4 = x0 + vec4<f32>(0.04);
  var x5 = x0 + vec4<f32>(0.05);
  var x6 = x0 + vec4<f32>(0.06);
  var x7 = x0 + vec4<f32>(0.07);
  for (var i = 0u; i < params.iters; i++) {
    x0 = fma(x0, a, b);
    x1 = fma(x1, a, b);
    x2 = fma(x2, a, b);
    x3 = fma(x3, a, b);
    x4 = fma(x4, a, b);
    x5 = fma(x5, a, b);
    x6 = fma(x6, a, b);
    x7 = fma(x7, a, b);
  }
  let total = (x0 + x1) + (x2 + x3) + (x4 + x5) + (x6 + x7);
  out[gid.x + gid.y * groups.x * WG] = dot(total, vec4<f32>(1.0));
}
