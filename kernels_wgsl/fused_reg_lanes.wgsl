// fused_reg_lanes.wgsl: the register-tiled fused kernel (fused_reg.wgsl) for devices with
// the WebGPU "subgroups" feature whose smallest subgroup holds at least TXK = B_c / 4
// invocations. The manifest's "with_subgroups" picks it; same tiles, so the same bytes and
// the same instrumented count.
//
// It is fused_reg.wgsl's body (parts/fused_reg_body.wgsl; fused_reg.wgsl's opening comment
// describes the kernel) with one choice made otherwise: the TXK invocations of a row group
// combine their row maxima (every key tile) and sums (once) with subgroupShuffleXor,
// log2 TXK rounds, instead of through workgroup memory, so a key tile needs one barrier
// fewer. The shuffles assume that the TXK invocations of a row group sit in one subgroup at
// indices that differ only in their low bits, as they do when subgroups are made of
// consecutive local_invocation_index values (every implementation we know; the spec does
// not promise it); the bench and the page check each kernel's output against float64
// before timing it. Every subgroup operation sits in control flow that depends only on
// override constants and uniform values.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

enable subgroups;

// #include "parts/header.wgsl"

const MAX_BARRIER: bool = false;  // row_max needs no workgroup memory

// #include "parts/fused_reg_body.wgsl"

fn row_max(li: u32, ty: u32, x: vec4<f32>) -> vec4<f32> {
  var y = x;
  if (TXK > 1u) { y = max(y, subgroupShuffleXor(y, 1u)); }
  if (TXK > 2u) { y = max(y, subgroupShuffleXor(y, 2u)); }
  if (TXK > 4u) { y = max(y, subgroupShuffleXor(y, 4u)); }
  if (TXK > 8u) { y = max(y, subgroupShuffleXor(y, 8u)); }
  return y;
}

fn row_sum(li: u32, ty: u32, x: vec4<f32>) -> vec4<f32> {
  var y = x;
  if (TXK > 1u) { y += subgroupShuffleXor(y, 1u); }
  if (TXK > 2u) { y += subgroupShuffleXor(y, 2u); }
  if (TXK > 4u) { y += subgroupShuffleXor(y, 4u); }
  if (TXK > 8u) { y += subgroupShuffleXor(y, 8u); }
  return y;
}
