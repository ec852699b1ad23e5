// fused_lanes.wgsl: the lesson's fused kernel (fused.wgsl) for devices with the WebGPU
// "subgroups" feature whose smallest subgroup holds at least TD = d / 16 invocations. The
// manifest's "with_subgroups" picks it at d = 32, 64 and 128 (fused, fused-no-rescale and
// the tuned kernels); same tiles, so the same bytes and the same instrumented count.
//
// It is fused.wgsl's body (parts/fused_body.wgsl; fused.wgsl's opening comment describes
// the kernel) with the two choices below made otherwise:
// * the TD partial dot products of a score are summed with subgroupShuffleXor, log2 TD
//   rounds (2 at d = 64, 3 at d = 128), instead of through workgroup memory with two
//   barriers per group of four keys;
// * so the K and V tiles are always double-buffered: one barrier per key tile.
// The shuffles assume that the TD lanes of a row group sit in one subgroup at indices that
// differ only in their low bits, as they do when subgroups are made of consecutive
// local_invocation_index values (every implementation we know; the spec does not promise
// it). The Time button and the benchmark check each kernel's output against float64
// before timing it. Every subgroup operation sits in control flow that depends only on
// override constants and on uniform values.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

enable subgroups;

// #include "parts/header.wgsl"
// #include "parts/fused_tiles.wgsl"

override NBUF: u32 = 2u;  // K and V buffers: the lanes sum their scores without workgroup memory

// Sum the partial scores (column i: row ty R + i, four keys) over the TD lanes of a row
// group with subgroupShuffleXor (log2 TD rounds). Called in uniform control flow; the TD
// lanes are neighbouring invocations, in one subgroup of at least TD.
fn lane_sum(x: vec4<f32>) -> vec4<f32> {
  var y = x;
  if (TD > 1u) { y += subgroupShuffleXor(y, 1u); }
  if (TD > 2u) { y += subgroupShuffleXor(y, 2u); }
  if (TD > 4u) { y += subgroupShuffleXor(y, 4u); }
  return y;
}
fn lanes_sum(li: u32, sc: mat4x4<f32>) -> mat4x4<f32> {
  var y = sc;
  y[0] = lane_sum(sc[0]);
  if (R > 1u) { y[1] = lane_sum(sc[1]); }
  if (R > 2u) { y[2] = lane_sum(sc[2]); y[3] = lane_sum(sc[3]); }
  return y;
}

// #include "parts/fused_body.wgsl"
