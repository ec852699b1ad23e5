// parts/lanes_memory.wgsl: how the lanes of a row (or key) sum their partial dot products in
// the tuned backward kernels on any WebGPU device: through workgroup memory, two barriers a
// call. The _lanes.wgsl twins include parts/lanes_shuffle.wgsl instead.
//
// Needs from the kernel: overrides TD (lanes a row, neighbouring invocations) and XB (where
// the sums go in sm), and var<workgroup> sm: array<vec4<f32>, ...> with THREADS vec4s free
// from XB on (the kernel's XN). Include it after them (Naga wants an override declared
// before the function that uses it).

// Sum x over the TD lanes of a row (or key) group, through sm past the chunk buffers.
// Called in uniform control flow.
fn lanes_sum(li: u32, x: vec4<f32>) -> vec4<f32> {
  if (TD == 1u) { return x; }
  sm[XB + li] = x;
  workgroupBarrier();
  let first = XB + li - li % TD;
  var y = vec4<f32>(0.0);
  for (var j = 0u; j < TD; j++) { y += sm[first + j]; }
  workgroupBarrier();
  return y;
}
