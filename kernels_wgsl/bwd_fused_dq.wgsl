// bwd_fused_dq.wgsl: the fused backward's query-tile pass, dQ (fused-backward and
// fused-backward-no-D in manifest.json).
//
// FlashAttention-2 (Dao 2023, arXiv:2307.08691), Algorithm 2, with dQ given a pass of its
// own instead of line 21's in-place adds to global memory (WGSL offers read-modify-write
// operations on integers only): one workgroup per query tile, the key tiles it sees
// streaming past, as the forward's fused.wgsl.
// S, P, dP and dS are recomputed a second time (the key-tile pass formed them too):
//   P_ij = exp(τ q_i·k_j - L_i),  dS_ij = P_ij (dO_i·v_j - D_i),  dQ_i = τ Σ_j dS_ij k_j.
//
// Tiling (the lesson preset, manifest.json "lesson", as fused.wgsl): B_r = (M/2) / (4 d)
// query rows per workgroup, one invocation per row; key tiles of B_c = B_r / 2 rows.
//   d = 16: B_r = 128, B_c = 64      d = 32: B_r = 64, B_c = 32
//   d = 64: B_r = 32,  B_c = 16      d = 128: B_r = 16, B_c = 8
// Workgroup arrays: Q tile B_r d + K tile B_c d + V tile B_c d floats = M bytes. Each
// invocation keeps its row's dO, L, D and the dQ accumulator in registers (private
// arrays sized by D_MAX, loops to D).
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid
// rows whose visited key tiles cover keys [0, kend):
//   once          reads  Q: r d, dO: r d, L: r, D: r
//   per key tile  reads  K: keys_in_tile d, V: keys_in_tile d
//   at the end    writes dQ: r d
// kend = N for full attention; causal, kend = min(N, ceil(b / B_c) B_c), b one past the
// tile's last row (key tiles wholly past the diagonal are skipped): the manifest's "dq".
//
// "fused-backward-no-D" compiles this file with USE_D = false (no D read, dS = P ∘ dP).
//
// Masking: no -inf; keys past the diagonal or past N are skipped by an explicit test.
// Rows past N stay in every loop (no return before a barrier) and only skip their stores.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

override D: u32 = 64u;    // head dimension d
override BR: u32 = 32u;   // B_r: query rows per workgroup (= workgroup size)
override BC: u32 = 16u;   // B_c: key rows per tile
override USE_D: bool = true;

const D_MAX: u32 = 128u;

// #include "parts/header.wgsl"
// #include "parts/walk.wgsl"
// #include "parts/bwd_inputs.wgsl"

@group(0) @binding(13) var<storage, read_write> dQ: array<f32>;  // (H, N, d)

fn store_dq(i: u32, x: f32) { tally(23u, 1u); dQ[i] = x; }

var<workgroup> q_tile: array<f32, BR * D>;
var<workgroup> k_tile: array<f32, BC * D>;
var<workgroup> v_tile: array<f32, BC * D>;

@compute @workgroup_size(BR)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let n = params.n;
  let causal = params.causal != 0u;
  let head = params.head_base + wg.y;
  let base = head * n * D;
  let row0 = (params.x_base + wg.x) * BR;   // < n
  let row = row0 + li;
  let row_ok = row < n;
  let scale = 1.0 / sqrt(f32(D));

  // Q tile: reads Q, r d elements; rows past N are zero on the bench.
  for (var e = li; e < BR * D; e += BR) {
    var x = 0.0;
    if (row0 + e / D < n) { x = load_q(base + row0 * D + e); }
    q_tile[e] = x;
  }
  // This row's dO, L and D: reads r d, r and r elements over the tile.
  var do_row: array<f32, D_MAX>;
  var acc: array<f32, D_MAX>;
  for (var c = 0u; c < D_MAX; c++) {
    do_row[c] = 0.0;
    acc[c] = 0.0;
  }
  var lse = 0.0;
  var dd = 0.0;
  if (row_ok) {
    for (var c = 0u; c < D; c++) { do_row[c] = load_do(base + row * D + c); }
    lse = load_lse(head * n + row);
    if (USE_D) { dd = load_rowdot(head * n + row); }
  }

  let kend = key_end(row0, n, causal);
  let tiles = (kend + BC - 1u) / BC;

  for (var t = 0u; t < tiles; t++) {
    let key0 = t * BC;
    workgroupBarrier();  // everyone is done with the previous K and V tiles
    for (var e = li; e < BC * D; e += BR) {
      var kx = 0.0;
      var vx = 0.0;
      if (key0 + e / D < kend) {
        kx = load_k(base + key0 * D + e);
        vx = load_v(base + key0 * D + e);
      }
      k_tile[e] = kx;
      v_tile[e] = vx;
    }
    workgroupBarrier();

    let count = min(BC, kend - key0);
    var visible = 0u;
    if (row_ok) {
      visible = count;
      if (causal) { visible = min(count, select(0u, row - key0 + 1u, row >= key0)); }
    }
    for (var j = 0u; j < visible; j++) {
      var s = 0.0;
      var dp = 0.0;
      // Columns in a rotated order (d is a power of two), so that neighbouring rows read
      // their Q rows from different workgroup-memory banks.
      for (var cc = 0u; cc < D; cc++) {
        let c = (cc + li) & (D - 1u);
        s += q_tile[li * D + c] * k_tile[j * D + c];
        dp += do_row[c] * v_tile[j * D + c];
      }
      let p = exp(s * scale - lse);
      let ds = p * (dp - dd);
      for (var c = 0u; c < D; c++) { acc[c] += ds * k_tile[j * D + c]; }
    }
  }

  // dQ row: writes d elements.
  if (row_ok) {
    for (var c = 0u; c < D; c++) { store_dq(base + row * D + c, acc[c] * scale); }
  }
}
