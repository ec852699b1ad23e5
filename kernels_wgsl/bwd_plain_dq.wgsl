// bwd_plain_dq.wgsl: the plain backward's dQ pass, dQ = τ dS K, with dS read back from
// global memory (plain-backward in manifest.json).
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Appendix B, Algorithm 3, line 5:
// dQ = dS K (τ = 1/√d applied once, at the end). The same shape as the forward's
// plain_pv.wgsl with dS in place of P and K in place of V.
//
// Tiling (the lesson preset, manifest.json "lesson"): B_r = (M/2) / (4 d) query rows per
// workgroup, one invocation per row with its dQ row in registers (a private array sized
// by D_MAX, loops to D); K tiles of B_c = B_r / 2 rows on the bench (B_c d floats).
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid
// rows whose visited key tiles cover keys [0, kend) (kend as plain_scores.wgsl):
//   per key tile   reads  K: keys_in_tile d;  dS: r keys_in_tile
//   at the end     writes dQ: r d
// dS is 0 past the diagonal (bwd_plain_ds.wgsl wrote it so), so those entries add 0.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

override D: u32 = 64u;    // head dimension d
override BR: u32 = 32u;   // B_r: query rows per workgroup (= workgroup size)
override BC: u32 = 16u;   // B_c: key rows per tile

const D_MAX: u32 = 128u;

// #include "parts/header.wgsl"
// #include "parts/walk.wgsl"

@group(0) @binding(2) var<storage, read> k: array<f32>;          // (H, N, d)
@group(0) @binding(12) var<storage, read> dS: array<f32>;        // (H_batch, N, N)
@group(0) @binding(13) var<storage, read_write> dQ: array<f32>;  // (H, N, d)

fn load_k(i: u32) -> f32 { tally(2u, 1u); return k[i]; }
fn load_ds(i: u32) -> f32 { tally(20u, 1u); return dS[i]; }
fn store_dq(i: u32, x: f32) { tally(23u, 1u); dQ[i] = x; }

var<workgroup> k_tile: array<f32, BC * D>;

@compute @workgroup_size(BR)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let n = params.n;
  let causal = params.causal != 0u;
  let base = (params.head_base + wg.y) * n * D;
  let s_base = wg.y * n * n;
  let row0 = (params.x_base + wg.x) * BR;
  let row = row0 + li;
  let row_ok = row < n;
  let scale = 1.0 / sqrt(f32(D));

  let kend = key_end(row0, n, causal);
  let tiles = (kend + BC - 1u) / BC;

  var acc: array<f32, D_MAX>;
  for (var c = 0u; c < D_MAX; c++) { acc[c] = 0.0; }
  for (var t = 0u; t < tiles; t++) {
    let key0 = t * BC;
    workgroupBarrier();
    for (var e = li; e < BC * D; e += BR) {
      var x = 0.0;
      if (key0 + e / D < kend) { x = load_k(base + key0 * D + e); }
      k_tile[e] = x;
    }
    workgroupBarrier();

    if (row_ok) {
      let count = min(BC, kend - key0);
      for (var j = 0u; j < count; j++) {
        let ds = load_ds(s_base + row * n + key0 + j);
        for (var c = 0u; c < D; c++) { acc[c] += ds * k_tile[j * D + c]; }
      }
    }
  }

  if (row_ok) {
    for (var c = 0u; c < D; c++) { store_dq(base + row * D + c, acc[c] * scale); }
  }
}
