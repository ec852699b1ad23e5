// fused_rows.wgsl: attention in one pass with online softmax, whole query rows (or their lanes) an
// invocation (the tuned kernel "fused-rows" of manifest.json; the lesson's readable kernel is
// fused.wgsl). Any WebGPU device: no subgroups (fused_rows_lanes.wgsl is the same kernel with
// subgroups). The body is parts/fused_rows_body.wgsl.
//
// Follows FlashAttention-2 (Dao 2023, arXiv:2307.08691), Algorithm 1 and section 3.1: one workgroup
// per query tile of B_r rows, an inner loop over key tiles of B_c keys, a running max m and an
// unnormalised running sum l per row, O divided by l once at the end. Where the lesson's fused
// kernel splits a row over d / 16 lanes and sums their partial scores for every group of four keys,
// this one keeps whole rows (or halves and quarters of them at d = 64 and 128) in an invocation, so
// that one read of K or V from workgroup memory feeds every row the invocation holds.
//
// Tiling (manifest "fused-rows": explicit B_r x B_c per d, within WebGPU's default 16,384 B
// of workgroup memory but at d = 128 without subgroups, chosen on an H200 with
// bench/sweep_forward.py, docs/BENCHMARKS.md): workgroup memory holds the K and V tiles, B_c
// rows of d floats each (no Q tile, no P tile), and, without subgroups where TD > 1, one vec4
// an invocation for lanes_sum (4,096 B at d = 128).
//   d = 16: 256 x 128, R = 2       d = 32: 256 x 64, R = 2
//   d = 64: 128 x 32, TD = 1 (with subgroups: TD = 2, R = 2)
//   d = 128: 128 x 16, TD = 2 (with subgroups: TD = 4, R = 2, LS = 8)
//
// Inside a workgroup (free: only global memory is counted): an invocation keeps R query rows (1 or
// 2: rows g and g + B_r / R of the tile), each row's d columns split over TD invocations ("lanes",
// 1, 2 or 4), LS invocations apart (1, or 8: see LS). Its share of each row of Q and of O sits in
// registers as NS = d / (16 TD) slices, a slice 16 columns as a mat4x4<f32> of named vec4s (column
// groups lane + TD (4 s + i), as parts/slices.wgsl's). Per group of four keys it reads the four
// keys' slices of K and of V from workgroup memory, the invocations of a warp that hold the same
// lane reading the same address (a broadcast), and does 4 R vec4 multiply-adds with each slice read
// (16 R for the four keys): no P goes through workgroup memory, and with TD = 1 no partial score
// crosses invocations. With TD > 1 the lanes' partial scores meet in lanes_sum (this file: through
// workgroup memory, two barriers a call; fused_rows_lanes.wgsl: subgroupShuffleXor). A row's max
// moves, and O and l are rescaled by 2^(m_old - m_new), only for a group of four keys whose largest
// score passes it. The next K and V tiles are loaded into registers during this tile's arithmetic
// (PREFETCH) and stored after it.
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid rows
// whose visited key tiles cover keys [0, kend):
//   load Q rows          reads  Q: r * d * 4 bytes            (vec4 loads, once)
//   per key tile         reads  K: keys_in_tile * d * 4 bytes (vec4 loads, once each)
//                        reads  V: keys_in_tile * d * 4 bytes (vec4 loads, once each)
//   at the end           writes O: r * d * 4 bytes            (vec4 stores, once)
// so per head: Q read once, O written once, K and V read once per query tile over the
// visited keys: kend = N for full attention; for causal, kend = min(N, ceil(b / B_c) * B_c)
// where b is one past the tile's last row. Nothing N x N reaches global memory. These are
// the manifest's "fused" pass formulas, the same as fused.wgsl at the same tiles.
//
// Masking: as fused.wgsl (NEG_BIG, no -inf in WGSL). A key tile wholly inside [0, kend)
// of a full-attention query tile whose rows are all below N needs no mask and skips it.
// Rows past N stay in every loop and do not store. Scores in base 2: Q is scaled by
// log2(e) / sqrt(d) once, then exp2.
//
// Every barrier sits in control flow that depends only on override constants, uniforms and
// the workgroup id.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

// #include "parts/header.wgsl"

const LANES_IN_MEMORY: bool = true;  // lanes_sum (below) needs room past the tiles

// #include "parts/fused_rows_body.wgsl"

// What this variant chooses (fused_rows_lanes.wgsl chooses otherwise): where TD > 1, the
// lanes of a row sum their partial scores through workgroup memory, one vec4 each past the
// tiles (two barriers a call).
fn lanes_sum(li: u32, x: vec4<f32>) -> vec4<f32> {
  if (TD == 1u) { return x; }
  kvm[XB + li / 4u][li % 4u] = x;
  workgroupBarrier();
  let first = li - ((li / LS) % TD) * LS;  // lane 0 of the row; lane j is first + j LS
  var y = vec4<f32>(0.0);
  for (var j = 0u; j < TD; j++) {
    let at = first + j * LS;
    y += kvm[XB + at / 4u][at % 4u];
  }
  workgroupBarrier();
  return y;
}
