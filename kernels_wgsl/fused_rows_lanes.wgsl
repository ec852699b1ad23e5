// fused_rows_lanes.wgsl: the row-tiled fused kernel (fused_rows.wgsl) for devices with the
// WebGPU "subgroups" feature whose smallest subgroup holds at least TD invocations (the lanes
// of a row: 2 at d = 64 and 128). The manifest's "with_subgroups" picks it at those d; same
// tiles, so the same bytes and the same instrumented count.
//
// It is fused_rows.wgsl's body (parts/fused_rows_body.wgsl; fused_rows.wgsl's opening comment
// describes the kernel) with one choice made otherwise: where TD > 1, the lanes' partial
// scores meet by subgroupShuffleXor (parts/lanes_shuffle.wgsl), with no barrier, instead of
// through workgroup memory, so that two lanes a row cost little: at d = 64 the manifest
// then keeps two rows an invocation in two lanes (half as many registers a row as one lane),
// 4.82 ms against 5.66 ms for whole rows in one lane without subgroups on the H200.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

enable subgroups;

// #include "parts/header.wgsl"

const LANES_IN_MEMORY: bool = false;  // lanes_sum shuffles

// #include "parts/fused_rows_body.wgsl"
// #include "parts/lanes_shuffle.wgsl"
