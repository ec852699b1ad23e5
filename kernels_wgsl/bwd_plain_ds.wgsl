// bwd_plain_ds.wgsl: the plain backward's dS pass, dS = P ∘ (dP - D), read from and
// written to global memory (plain-backward in manifest.json).
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Appendix B.2: dS_ij =
// P_ij (dP_ij - D_i), with D_i = rowsum(dO_i ∘ O_i) from bwd_preprocess.wgsl.
//
// Tiling: one workgroup per query tile of the lesson's B_r = (M/2) / (4 d) rows, WG = 256
// invocations striding over the tile's r x kend block (coalesced); the tile's D sits on
// the bench (B_r floats).
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid
// rows whose visited key tiles cover keys [0, kend) (kend as bwd_plain_softmax.wgsl):
//   reads  D: r;  P: r kend;  dP: r kend;  writes dS: r kend (0 past the diagonal)
//
// Masking by position (key j > row i under causal), never by the stored value.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

override BR: u32 = 32u;   // B_r of the scores pass
override BC: u32 = 16u;   // B_c of the scores pass
override WG: u32 = 256u;  // invocations per workgroup

// #include "parts/header.wgsl"
// #include "parts/walk.wgsl"

@group(0) @binding(6) var<storage, read> p: array<f32>;         // (H_batch, N, N)
@group(0) @binding(10) var<storage, read> d: array<f32>;        // D, (H, N)
@group(0) @binding(11) var<storage, read> dP: array<f32>;       // (H_batch, N, N)
@group(0) @binding(12) var<storage, read_write> dS: array<f32>; // (H_batch, N, N)

fn load_p(i: u32) -> f32 { tally(8u, 1u); return p[i]; }
fn load_rowdot(i: u32) -> f32 { tally(16u, 1u); return d[i]; }
fn load_dp(i: u32) -> f32 { tally(18u, 1u); return dP[i]; }
fn store_ds(i: u32, x: f32) { tally(21u, 1u); dS[i] = x; }

var<workgroup> dd_tile: array<f32, BR>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let n = params.n;
  let causal = params.causal != 0u;
  let head = params.head_base + wg.y;
  let s_base = wg.y * n * n;
  let row0 = (params.x_base + wg.x) * BR;   // < n
  let rows = min(BR, n - row0);
  let kend = key_end(row0, n, causal);

  for (var e = li; e < BR; e += WG) {
    var x = 0.0;
    if (e < rows) { x = load_rowdot(head * n + row0 + e); }
    dd_tile[e] = x;
  }
  workgroupBarrier();

  for (var e = li; e < rows * kend; e += WG) {
    let i = e / kend;
    let j = e % kend;
    let row = row0 + i;
    let at = s_base + row * n + j;
    let pij = load_p(at);
    let dpij = load_dp(at);
    var ds = 0.0;
    if (!causal || j <= row) { ds = pij * (dpij - dd_tile[i]); }
    store_ds(at, ds);
  }
}
