// parts/lanes_shuffle.wgsl: how the lanes of a row (or key) sum their partial dot products in
// the tuned backward kernels' _lanes.wgsl twins, on devices with the WebGPU "subgroups"
// feature whose smallest subgroup holds at least TD invocations: subgroupShuffleXor, log2 TD
// rounds (2 at d = 64, 3 at d = 128), no workgroup memory and no barrier. The twins any
// device runs include parts/lanes_memory.wgsl instead.
//
// Needs from the kernel: `enable subgroups;` and the override TD (lanes a row). The
// shuffles assume that the TD lanes of a row sit in one subgroup at indices that differ
// only in their low bits, as they do when subgroups are made of consecutive
// local_invocation_index values (every implementation we know; the spec does not promise
// it), so the bench and the page check each kernel's output against float64 before timing
// it. Every call sits in control flow that depends only on override constants and uniform
// values.

// Sum x over the TD lanes of a row (or key) group. Called in uniform control flow.
fn lanes_sum(li: u32, x: vec4<f32>) -> vec4<f32> {
  var y = x;
  if (TD > 1u) { y += subgroupShuffleXor(y, 1u); }
  if (TD > 2u) { y += subgroupShuffleXor(y, 2u); }
  if (TD > 4u) { y += subgroupShuffleXor(y, 4u); }
  return y;
}
