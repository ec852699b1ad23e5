// plain_scores.wgsl: pass 1 of 3 of plain attention, S = Q K^T / sqrt(d), written to
// global memory.
//
// The standard attention of FlashAttention (Dao et al. 2022, arXiv:2205.14135),
// Algorithm 0, line 1: "load Q, K by blocks, compute S = Q K^T, write S to HBM".
// The next passes are plain_softmax.wgsl (S -> P) and plain_pv.wgsl (P V -> O).
//
// Tiling (the lesson preset, manifest.json "lesson", same as fused.wgsl): one workgroup per
// query tile of B_r = (M/2) / (4 d) rows, key tiles of B_c = B_r / 2 rows. Workgroup
// memory: the Q tile (B_r d floats, M/2), the K tile (B_c d floats, M/4, stored column by
// column so that neighbouring invocations read neighbouring keys) and, where the columns
// are split (below), the partial scores (at most M/4).
//   d = 16: B_r = 128, B_c = 64      d = 32: B_r = 64, B_c = 32
//   d = 64: B_r = 32,  B_c = 16      d = 128: B_r = 16, B_c = 8
//
// Inside a workgroup: a block is R query rows by 4 keys, the keys kg, kg + KGN, kg + 2 KGN,
// kg + 3 KGN of the tile (so neighbouring invocations store neighbouring scores), over a
// slice of d / TZ columns. Its 4 R scores are named vec4 registers; each column group
// (a vec4) costs R + 4 reads of workgroup memory for 16 R multiply-adds (R = 4, or 2 where the columns
// are split). Small tiles with
// a large d split the columns over TZ invocations (TZ <= d / B_r: 2 at d = 64, 8 at d = 128),
// whose partial scores are summed through workgroup memory once per key tile. There are
// NBLK = (B_r / R) * ceil(B_c / 4) * TZ blocks; THREADS = min(256, max(NBLK, B_c d / 16))
// invocations take them in turn. The next K tile is loaded into registers (at most 4 vec4s
// an invocation) while this one is computed.
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid rows
// whose visited key tiles cover keys [0, kend):
//   load Q tile       reads  Q: r * d * 4 bytes      (vec4 loads, once per query tile)
//   per key tile      reads  K: keys_in_tile * d * 4 bytes (vec4 loads)
//                     writes S: r * keys_in_tile * 4 bytes
// so per head: Q read once, K read once per query tile, S written as r x kend blocks.
// Full attention: kend = N, so all N x N scores. Causal: kend = min(N, ceil(b / B_c) * B_c)
// with b one past the tile's last row; entries inside the block above the diagonal are
// written as NEG_BIG (a finite stand-in for -inf: WGSL has no infinities), and the softmax
// pass masks them by position, not by value. S is (H_batch, N, N) float32: the heads of
// one dispatch.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

// #include "parts/header.wgsl"

@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;  // (H, N, d)
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;  // (H, N, d)
@group(0) @binding(5) var<storage, read_write> s: array<f32>;  // (H_batch, N, N)

fn load_row(i: u32) -> vec4<f32> { tally(0u, 4u); return q[i]; }
fn load_key(i: u32) -> vec4<f32> { tally(2u, 4u); return k[i]; }
fn store_entry(i: u32, x: f32) { tally(7u, 1u); s[i] = x; }

const SCALED: bool = true;   // S = Q K^T / sqrt(d)
const PAST: f32 = NEG_BIG;   // causal: a score past the diagonal ("no score"; no -inf in WGSL)

// #include "parts/scores_body.wgsl"
