// bwd_plain_dp.wgsl: the plain backward's dP pass, dP = dO V^T, written to global memory
// (plain-backward in manifest.json).
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Appendix B, Algorithm 3, line 3:
// dP = dO V^T. The forward's scores pass (plain_scores.wgsl) with dO in place of Q, V in
// place of K and no scaling: both include parts/scores_body.wgsl, whose tiling, blocks and
// column slices plain_scores.wgsl's opening comment describes.
//
// Tiling (the lesson preset, manifest.json "lesson"): one workgroup per query tile of
// B_r = (M/2) / (4 d) rows of dO, V tiles of B_c = B_r / 2 rows.
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid rows
// whose visited key tiles cover keys [0, kend) (kend as plain_scores.wgsl):
//   load dO tile     reads  dO: r d                   (vec4 loads, once per query tile)
//   per key tile     reads  V: keys_in_tile d;  writes dP: r keys_in_tile
// Entries past the diagonal inside the block are written as 0.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

// #include "parts/header.wgsl"

@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;    // (H, N, d)
@group(0) @binding(8) var<storage, read> dO: array<vec4<f32>>;   // (H, N, d)
@group(0) @binding(11) var<storage, read_write> dP: array<f32>;  // (H_batch, N, N)

fn load_row(i: u32) -> vec4<f32> { tally(12u, 4u); return dO[i]; }
fn load_key(i: u32) -> vec4<f32> { tally(4u, 4u); return v[i]; }
fn store_entry(i: u32, x: f32) { tally(19u, 1u); dP[i] = x; }

const SCALED: bool = false;  // dP = dO V^T
const PAST: f32 = 0.0;       // causal: dP past the diagonal

// #include "parts/scores_body.wgsl"
