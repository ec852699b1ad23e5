// fused_reg.wgsl: attention in one pass with online softmax, register-tiled like a matrix
// product (the tuned kernel "fused-reg" of manifest.json; the lesson's readable kernel is
// fused.wgsl). Any WebGPU device: no subgroups (fused_reg_lanes.wgsl is the same kernel with
// subgroups). The body is parts/fused_reg_body.wgsl.
//
// Follows FlashAttention-2 (Dao 2023, arXiv:2307.08691), Algorithm 1 and section 3.1: one
// workgroup per query tile of B_r rows, an inner loop over key tiles of B_c keys, a running
// max m and an unnormalised running sum l per row, O divided by l once at the end.
//
// Tiling (manifest "fused-reg": explicit B_r x B_c per d, chosen on an H200 with
// bench/sweep_forward.py, docs/BENCHMARKS.md; the planner refuses the kernel where the device
// offers less workgroup memory than its shader declares):
//   d = 16: 128 x 16     d = 32: 64 x 16     d = 64: 64 x 64 (SHARE, unpadded, swizzled)
//   d = 128: 32 x 32 (SHARE, unpadded, swizzled)
// Workgroup memory holds the Q tile (B_r rows of d floats), the K tile and the V tile (B_c
// rows each; with SHARE the V tile takes the K tile's place once the scores are done), the
// tile's probabilities P (B_r rows of B_c floats) and, in this variant, one vec4 an
// invocation for the row maxima and sums. Rows are padded by QPAD, KPAD and PPAD vec4s (1 by
// default) so that neighbouring rows fall in other banks; unpadded K and V tiles place key
// kl's column group cg at cg ^ (kl & KSWZ) instead (a swizzle with the same effect).
//
// Inside a workgroup (free: only global memory is counted): invocation li is (ty, tx),
// tx = li % TXK, ty = li / TXK, with TXK = B_c / 4 and TY = B_r / TM (THREADS = TXK TY).
// * Scores: it keeps a TM x 4 block of S in registers (TM = 4, or 8), rows ty + TY i, keys
//   tx + TXK j. Per column group (a vec4 of d) it reads TM vec4s of Q and 4 of K from
//   workgroup memory for 16 TM multiply-adds; neighbouring invocations read neighbouring
//   keys, and the TXK invocations of a row group read the same Q (a broadcast).
// * Softmax: each row's max over the tile is the max of its TXK invocations' maxima
//   (row_max, below); every invocation of the row group then holds the same m, keeps its
//   own partial l, and writes its 4 TM exp2(s - m) to P.
// * O: it keeps a TM x OC block of vec4s of O, rows ty + TY i, column groups tx + TXK c
//   (c < OC, OC = d / (4 TXK): 1, 2 or 4). Per group of four keys it reads one vec4 of P per
//   row and 4 OC vec4s of V for 16 TM OC multiply-adds.
// * Prefetch (PREFETCH, where an invocation's share of a tile is at most 4 vec4s, or 8 with
//   SHARE): the next tile's K and V (with SHARE: this tile's V during the scores, the next
//   tile's K during P V) are loaded into registers during the arithmetic and stored after
//   it, so the wait for global memory overlaps the multiply-adds.
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid rows
// whose visited key tiles cover keys [0, kend):
//   load Q tile          reads  Q: r * d * 4 bytes            (vec4 loads, once)
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

const MAX_BARRIER: bool = true;  // row_max exchanges through workgroup memory

// #include "parts/fused_reg_body.wgsl"

// What this variant chooses (fused_reg_lanes.wgsl chooses otherwise): a row group's
// invocations combine their maxima and sums through workgroup memory, one vec4 each.
var<workgroup> red: array<vec4<f32>, THREADS>;

// x's components over the TXK invocations of row group ty: max. Uniform control flow; the
// barrier after the reads is the caller's next one (red is written again only after it).
fn row_max(li: u32, ty: u32, x: vec4<f32>) -> vec4<f32> {
  red[li] = x;
  workgroupBarrier();
  var y = red[ty * TXK];
  for (var j = 1u; j < TXK; j++) { y = max(y, red[ty * TXK + j]); }
  return y;
}

// Likewise, sum (once, after the last key tile).
fn row_sum(li: u32, ty: u32, x: vec4<f32>) -> vec4<f32> {
  workgroupBarrier();
  red[li] = x;
  workgroupBarrier();
  var y = red[ty * TXK];
  for (var j = 1u; j < TXK; j++) { y += red[ty * TXK + j]; }
  return y;
}
