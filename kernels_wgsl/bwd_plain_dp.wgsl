// bwd_plain_dp.wgsl: the plain backward's dP pass, dP = dO V^T, written to global memory
// (plain-backward in manifest.json).
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Appendix B, Algorithm 3, line 3:
// dP = dO V^T. The same shape as the forward's scores pass (plain_scores.wgsl) with dO
// in place of Q, V in place of K and no scaling.
//
// Tiling (the lesson preset, manifest.json "lesson"): B_r = (M/2) / (4 d) rows of dO per
// workgroup, one invocation per row; V tiles of B_c = B_r / 2 rows. Workgroup arrays:
// dO tile B_r d + V tile B_c d floats = 3M/4 bytes.
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid
// rows whose visited key tiles cover keys [0, kend) (kend as plain_scores.wgsl):
//   load dO tile     reads  dO: r d                   (once per query tile)
//   per key tile     reads  V: keys_in_tile d;  writes dP: r keys_in_tile
// Entries past the diagonal inside the block are written as 0.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

override D: u32 = 64u;    // head dimension d
override BR: u32 = 32u;   // B_r: query rows per workgroup (= workgroup size)
override BC: u32 = 16u;   // B_c: key rows per tile

// #include "parts/header.wgsl"
// #include "parts/walk.wgsl"

@group(0) @binding(3) var<storage, read> v: array<f32>;          // (H, N, d)
@group(0) @binding(8) var<storage, read> dO: array<f32>;         // (H, N, d)
@group(0) @binding(11) var<storage, read_write> dP: array<f32>;  // (H_batch, N, N)

fn load_v(i: u32) -> f32 { tally(4u, 1u); return v[i]; }
fn load_do(i: u32) -> f32 { tally(12u, 1u); return dO[i]; }
fn store_dp(i: u32, x: f32) { tally(19u, 1u); dP[i] = x; }

var<workgroup> do_tile: array<f32, BR * D>;
var<workgroup> v_tile: array<f32, BC * D>;

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

  for (var e = li; e < BR * D; e += BR) {
    var x = 0.0;
    if (row0 + e / D < n) { x = load_do(base + row0 * D + e); }
    do_tile[e] = x;
  }

  let kend = key_end(row0, n, causal);
  let tiles = (kend + BC - 1u) / BC;

  for (var t = 0u; t < tiles; t++) {
    let key0 = t * BC;
    workgroupBarrier();
    for (var e = li; e < BC * D; e += BR) {
      var x = 0.0;
      if (key0 + e / D < kend) { x = load_v(base + key0 * D + e); }
      v_tile[e] = x;
    }
    workgroupBarrier();

    if (row_ok) {
      let count = min(BC, kend - key0);
      for (var j = 0u; j < count; j++) {
        var x = 0.0;
        if (!causal || key0 + j <= row) {
          var acc = 0.0;
          for (var cc = 0u; cc < D; cc++) {
            let c = (cc + li) & (D - 1u);  // rotated (d is a power of two): rows read different banks
            acc += do_tile[li * D + c] * v_tile[j * D + c];
          }
          x = acc;
        }
        store_dp(s_base + row * n + key0 + j, x);
      }
    }
  }
}
