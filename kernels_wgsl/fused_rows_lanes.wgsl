// fused_rows_lanes.wgsl: the row-tiled fused kernel (fused_rows.wgsl) for devices with the
// WebGPU "subgroups" feature whose smallest subgroup holds the LS TD invocations that a row's
// lanes span (2 at d = 64; 32 at d = 128, four lanes 8 apart). The manifest's "with_subgroups"
// picks it at those d; same tiles, so the same bytes and the same instrumented count.
//
// It is fused_rows.wgsl's body (parts/fused_rows_body.wgsl; fused_rows.wgsl's opening comment
// describes the kernel) with one choice made otherwise: where TD > 1, the lanes' partial
// scores meet by subgroupShuffleXor (lanes_sum below), with no barrier, instead of
// through workgroup memory, so that lanes cost little: the manifest then keeps two rows an
// invocation in two lanes at d = 64 (4.83 ms on the H200, against 5.66 ms for one row in one
// lane without subgroups) and in four at d = 128 (10.12 ms, against 13.35 ms).
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

enable subgroups;

// #include "parts/header.wgsl"

const LANES_IN_MEMORY: bool = false;  // lanes_sum shuffles

// #include "parts/fused_rows_body.wgsl"
// Sum x over the TD lanes of a row, LS invocations apart, with subgroupShuffleXor (log2 TD
// rounds). Called in uniform control flow. The shuffles assume that the LS TD invocations a
// row's lanes span sit in one subgroup at indices that differ only in those bits, as they do
// when subgroups are made of consecutive local_invocation_index values (every implementation
// we know; the spec does not promise it); the bench checks the output against float64 first.
fn lanes_sum(li: u32, x: vec4<f32>) -> vec4<f32> {
  var y = x;
  if (TD > 1u) { y += subgroupShuffleXor(y, LS); }
  if (TD > 2u) { y += subgroupShuffleXor(y, 2u * LS); }
  return y;
}
