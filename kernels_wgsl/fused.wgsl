// fused.wgsl: attention in one pass with online softmax (the lesson's fused kernel), on
// any WebGPU device. fused_lanes.wgsl is the same kernel for devices with subgroups: both
// include its tiles and body (parts/fused_tiles.wgsl, parts/fused_body.wgsl) and differ
// only in how a row's partial scores are summed over its lanes (NBUF and lanes_sum, below).
//
// Follows FlashAttention (Dao et al. 2022, arXiv:2205.14135), Algorithm 1, with the loop
// order of FlashAttention-2 (arXiv:2307.08691), section 3.1: one workgroup per query tile,
// an inner loop over key tiles, online softmax with a running max m and an unnormalised
// running sum l per row, O divided by l once at the end.
//
// Tiling (the lesson preset, manifest.json "lesson"): workgroup memory M bytes (16,384 by
// default); the query tile is M/2, so B_r = (M/2) / (4 d) rows, and a K tile and a V tile
// share the other half, so B_c = B_r / 2.
//   d = 16: B_r = 128, B_c = 64      d = 32: B_r = 64, B_c = 32
//   d = 64: B_r = 32,  B_c = 16      d = 128: B_r = 16, B_c = 8
// The tuned kernels of the manifest run this file (or fused_lanes.wgsl) with other tiles.
//
// Inside a workgroup (free: only global memory is counted):
// * Lanes. The d columns of a query row are split over TD = d / 16 neighbouring
//   invocations, 16 columns (4 vec4s) each. A lane owns R query rows, so each vec4 of K or V
//   it reads from workgroup memory feeds 4 R multiply-adds, and its Q and O rows are 8 R
//   named vec4 registers (no private arrays). The TD partial dot products of a score are
//   summed across the lanes (lanes_sum): here through workgroup memory, in fused_lanes.wgsl
//   with subgroupShuffleXor. Every lane then holds the whole score, so the lanes of a row
//   keep identical m and l and exchange nothing else.
// * Streams. The keys of a tile are dealt out to TX invocations that own the same rows and
//   columns, each with its own m, l and O; they are merged once, after the last key tile,
//   with the rescale rule of section 3.1: w = exp(m_stream - m_row), l = sum w l_stream,
//   O = sum w O_stream / l.
// Invocation li: lane = li % TD, stream x = (li / TD) % TX, row group ty = li / (TD TX)
// owning rows ty R .. ty R + R - 1 of the tile. R and TX default to values that keep the
// workgroup at 256 invocations or fewer for every M up to 65,536: R = TX = 2, and past 256
// lane-rows (TD B_r) R = 4 (or TX = 1 where B_r is not a multiple of 4).
// Workgroup memory: one array of M bytes. The Q tile is staged through it once; then it
// holds the K and V tiles, double-buffered when TD = 1 (the next tile is loaded into
// registers during the arithmetic and stored after it), single-buffered otherwise, with the
// other half used to sum the lanes' partial scores; the final merge reuses it.
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid rows
// whose visited key tiles cover keys [0, kend):
//   load Q tile          reads  Q: r * d * 4 bytes            (vec4 loads, once)
//   per key tile         reads  K: keys_in_tile * d * 4 bytes (vec4 loads, once each)
//                        reads  V: keys_in_tile * d * 4 bytes (vec4 loads, once each)
//   at the end           writes O: r * d * 4 bytes            (vec4 stores, once)
// so per head: Q read once, O written once, K and V read once per query tile over the
// visited keys: kend = N for full attention; for causal, kend = min(N, ceil(b / B_c) * B_c)
// where b is one past the tile's last row (key tiles wholly past the diagonal are skipped).
// Nothing N x N ever reaches global memory.
//
// The broken control "fused-no-rescale" is this same file with the override RESCALE =
// false: when a running max grows, l and O are not multiplied by exp(m_old - m_new).
//
// Masking: WGSL lets an implementation assume no inf or NaN, so there is no -inf here.
// NEG_BIG is a finite stand-in for "no score yet", and masked keys (past kend, past the row
// under causal, past the tile) never enter m or l: a stream that saw no visible key has
// w = 0, and a row with no visible key gets O = 0. Rows past N stay in every loop (no
// early return before a barrier) and do not store. Scores are kept in base 2: Q is scaled
// by log2(e) / sqrt(d) once, then exp2.
//
// The instrumented build (tests only) is this source with every line that starts with
// "// @instrument: " uncommented; it then counts each element loaded or stored.

// #include "parts/header.wgsl"
// #include "parts/fused_tiles.wgsl"

// What this variant chooses (fused_lanes.wgsl chooses otherwise): the lanes of a row sum
// their partial scores through workgroup memory, in the half of kv past the K and V
// tiles, so those are double-buffered only when no lanes share a row (TD = 1).
override NBUF: u32 = select(1u, 2u, TD == 1u);  // K and V buffers: 2 when no lanes share a row
override XB: u32 = 2u * TILE4;        // where the lanes sum their partial scores

// Sum the partial scores (column i: row ty R + i, four keys) over the TD lanes of a row
// group, through workgroup memory past the K and V tiles. Called in uniform control flow.
fn lanes_sum(li: u32, sc: mat4x4<f32>) -> mat4x4<f32> {
  if (TD == 1u) { return sc; }
  let own = XB + li * R;
  kv[own] = sc[0];
  if (R > 1u) { kv[own + 1u] = sc[1]; }
  if (R > 2u) { kv[own + 2u] = sc[2]; kv[own + 3u] = sc[3]; }
  workgroupBarrier();
  let first = XB + (li - li % TD) * R;
  var t = mat4x4<f32>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
  for (var j = 0u; j < TD; j++) {
    let y = first + j * R;
    t[0] += kv[y];
    if (R > 1u) { t[1] += kv[y + 1u]; }
    if (R > 2u) { t[2] += kv[y + 2u]; t[3] += kv[y + 3u]; }
  }
  workgroupBarrier();
  return t;
}

// #include "parts/fused_body.wgsl"
