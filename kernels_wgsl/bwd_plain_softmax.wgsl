// bwd_plain_softmax.wgsl: the plain backward's softmax pass, P = exp(S - L), read from
// and written to global memory (plain-backward in manifest.json).
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Appendix B, Algorithm 3 (the
// standard backward), with P formed from the forward's saved logsumexp L instead of a
// stored P, as fused-backward does, so that the two kernels differ only in memory trips.
//
// Tiling: one workgroup per query tile of the lesson's B_r = (M/2) / (4 d) rows (the
// scores pass's tiles, plain_scores.wgsl), WG = 256 invocations striding over the
// tile's r x kend block of S so that loads and stores are coalesced. The tile's L sits
// on the bench (B_r floats).
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid
// rows whose visited key tiles cover keys [0, kend):
//   reads  L: r;  S: r kend;  writes P: r kend (entries past the diagonal written as 0)
// kend = N for full attention; causal, kend = min(N, ceil(b / B_c) B_c), b one past the
// tile's last row, as the scores pass wrote S.
//
// Masking by position (key j > row i under causal), never by the stored value.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

override BR: u32 = 32u;   // B_r of the scores pass
override BC: u32 = 16u;   // B_c of the scores pass
override WG: u32 = 256u;  // invocations per workgroup

// #include "parts/header.wgsl"
// #include "parts/walk.wgsl"

@group(0) @binding(5) var<storage, read> s: array<f32>;        // (H_batch, N, N)
@group(0) @binding(6) var<storage, read_write> p: array<f32>;  // (H_batch, N, N)
@group(0) @binding(9) var<storage, read> l: array<f32>;        // L, (H, N)

fn load_s(i: u32) -> f32 { tally(6u, 1u); return s[i]; }
fn store_p(i: u32, x: f32) { tally(9u, 1u); p[i] = x; }
fn load_lse(i: u32) -> f32 { tally(14u, 1u); return l[i]; }

var<workgroup> lse_tile: array<f32, BR>;

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
    if (e < rows) { x = load_lse(head * n + row0 + e); }
    lse_tile[e] = x;
  }
  workgroupBarrier();

  for (var e = li; e < rows * kend; e += WG) {
    let i = e / kend;
    let j = e % kend;
    let row = row0 + i;
    let x = load_s(s_base + row * n + j);
    var pij = 0.0;
    if (!causal || j <= row) { pij = exp(x - lse_tile[i]); }
    store_p(s_base + row * n + j, pij);
  }
}
