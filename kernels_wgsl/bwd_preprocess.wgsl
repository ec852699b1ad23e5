// bwd_preprocess.wgsl: D = rowsum(dO ∘ O), the first pass of both backward kernels
// (plain-backward and fused-backward in manifest.json).
//
// FlashAttention-2 (Dao 2023, arXiv:2307.08691), Algorithm 2, line 4 (computed once,
// before the main loop, as its Triton and CUDA code do): D_i = Σ_c dO_ic · O_ic. It
// equals Σ_j P_ij · dP_ij (FlashAttention, arXiv:2205.14135, Appendix B.2) because
// O_i = Σ_j P_ij V_j, so the backward never needs a row of the N x N table to form it.
//
// Tiling (the lesson preset, manifest.json "lesson"): one workgroup per query tile of
// B_r = (M/2) / (4 d) rows, one invocation per row. The tile's O rows and dO rows are
// staged on the bench (workgroup memory, B_r * d floats each = M bytes) so that the
// loads are coalesced, then each invocation forms its row's dot product.
//
// Global memory traffic, float32 (4 bytes an element), for a tile of r valid rows:
//   reads  O: r * d * 4 bytes, dO: r * d * 4 bytes;  writes D: r * 4 bytes
// so per head N d reads of each and N writes of D: the manifest's "once" walk.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

override D: u32 = 64u;    // head dimension d
override BR: u32 = 32u;   // B_r: rows per workgroup (= workgroup size)

// #include "parts/header.wgsl"

@group(0) @binding(4) var<storage, read> o: array<f32>;         // (H, N, d)
@group(0) @binding(8) var<storage, read> dO: array<f32>;        // (H, N, d)
@group(0) @binding(10) var<storage, read_write> d: array<f32>;  // D, (H, N)

fn load_o(i: u32) -> f32 { tally(10u, 1u); return o[i]; }
fn load_do(i: u32) -> f32 { tally(12u, 1u); return dO[i]; }
fn store_rowdot(i: u32, x: f32) { tally(17u, 1u); d[i] = x; }

var<workgroup> o_tile: array<f32, BR * D>;
var<workgroup> do_tile: array<f32, BR * D>;

@compute @workgroup_size(BR)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let n = params.n;
  let head = params.head_base + wg.y;
  let base = head * n * D;
  let row0 = (params.x_base + wg.x) * BR;   // < n
  let rows = min(BR, n - row0);

  for (var e = li; e < BR * D; e += BR) {
    var ox = 0.0;
    var dox = 0.0;
    if (e < rows * D) {
      ox = load_o(base + row0 * D + e);
      dox = load_do(base + row0 * D + e);
    }
    o_tile[e] = ox;
    do_tile[e] = dox;
  }
  workgroupBarrier();

  if (li < rows) {
    var acc = 0.0;
    for (var cc = 0u; cc < D; cc++) {
      let c = (cc + li) & (D - 1u);  // rotated (d is a power of two): rows read different banks
      acc += do_tile[li * D + c] * o_tile[li * D + c];
    }
    store_rowdot(head * n + row0 + li, acc);
  }
}
