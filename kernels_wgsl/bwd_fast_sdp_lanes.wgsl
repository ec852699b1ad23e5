// bwd_fast_sdp_lanes.wgsl: the tuned plain backward's S and dP passes (bwd_fast_sdp.wgsl)
// for devices with the WebGPU "subgroups" feature whose smallest subgroup holds at least
// TD = d / 16 invocations. The manifest's "with_subgroups" picks it at d = 32, 64 and 128;
// same tiles, so the same bytes and the same instrumented count.
//
// It is bwd_fast_sdp.wgsl's body (parts/bwd_fast_sdp_body.wgsl; bwd_fast_sdp.wgsl's opening
// comment describes the kernel, its tiling, its traffic and the paper it follows) with
// the other lanes' sum, parts/lanes_shuffle.wgsl:
// * the TD partial dot products of a row with a key are summed with subgroupShuffleXor,
//   log2 TD rounds (2 at d = 64, 3 at d = 128), instead of through workgroup memory with
//   two barriers a row;
// * so the chunks of rows are always double-buffered: one barrier per chunk.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

enable subgroups;

const SUBGROUPS: bool = true;  // the lanes shuffle; the chunks are double-buffered

// #include "parts/header.wgsl"
// #include "parts/bwd_fast_sdp_body.wgsl"
// #include "parts/lanes_shuffle.wgsl"
