// bwd_fast_dq_lanes.wgsl: the tuned fused backward's query-tile pass (bwd_fast_dq.wgsl)
// for devices with the WebGPU "subgroups" feature whose smallest subgroup holds at least
// TD = d / 16 invocations. The manifest's "with_subgroups" picks it at d = 32, 64 and 128;
// same tiles, so the same bytes and the same instrumented count.
//
// It is bwd_fast_dq.wgsl's body (parts/bwd_fast_dq_body.wgsl; bwd_fast_dq.wgsl's opening
// comment describes the kernel, its tiling, its traffic and the paper it follows) with
// the other lanes' sum, parts/lanes_shuffle.wgsl:
// * the TD partial dot products of a key's S and dP are summed with subgroupShuffleXor,
//   log2 TD rounds (2 at d = 64, 3 at d = 128), instead of through workgroup memory with
//   two barriers a key;
// * so the chunks of keys are always double-buffered: one barrier per chunk.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

enable subgroups;

const SUBGROUPS: bool = true;  // the lanes shuffle; the chunks are double-buffered

// #include "parts/header.wgsl"
// #include "parts/bwd_fast_dq_body.wgsl"
// #include "parts/lanes_shuffle.wgsl"
