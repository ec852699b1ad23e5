// bwd_fused_dkv.wgsl: the fused backward's key-tile pass, dK and dV (fused-backward and
// fused-backward-no-D in manifest.json).
//
// FlashAttention-2 (Dao 2023, arXiv:2307.08691), Algorithm 2, the outer loop over key
// tiles, without its in-place adds to dQ in global memory (WGSL offers read-modify-write
// operations on integers only): dQ has a pass of its own (bwd_fused_dq.wgsl), so every
// workgroup writes only its own rows. One workgroup
// per key tile of B_c rows; the query rows that see the tile stream past it.
// P is recomputed from the saved logsumexp L: P_ij = exp(S_ij - L_i), with no running
// max or sum (L holds both). With τ = 1/√d and D_i = rowsum(dO_i ∘ O_i):
//   S_ij = τ q_i·k_j,  dP_ij = dO_i·v_j,  dS_ij = P_ij (dP_ij - D_i),
//   dV_j = Σ_i P_ij dO_i,  dK_j = τ Σ_i dS_ij q_i.
//
// Tiling (the lesson preset, manifest.json "lesson"): B_r = (M/2) / (4 d),
// B_c = B_r / 2, so B_c d = M / 16 floats. The K tile and the V tile stay on the bench
// (workgroup memory, 2 B_c d floats = M/2). The other half holds a chunk of CH query
// rows at a time: their Q and dO rows, their L and D, and the CH x B_c tiles of P and
// dS, so CH (2d + 2 + 2 B_c) <= 2 B_c d, CH = B_c d / (d + 1 + B_c):
//   d = 16: B_c = 64, CH = 12     d = 32: B_c = 32, CH = 15
//   d = 64: B_c = 16, CH = 12     d = 128: B_c = 8, CH = 7
// The chunk size changes no count: each query row is read once per key tile it reaches.
// WG invocations (256): first each forms P and dS for some (row, key) pairs of the
// chunk, then each adds the chunk into its own B_c d / WG entries of dK and dV
// (at most PER_MAX = 16, for M up to 65,536 B), held in registers.
//
// Global memory traffic, float32 (4 bytes an element), for a key tile of c valid rows
// starting at key k0, reached by the qv query rows [first, N) (first = 0, or under
// causal floor(k0 / B_r) B_r: the query tiles whose last row reaches k0, as the dq pass
// visits them):
//   load the tile        reads  K: c d, V: c d
//   per query chunk      reads  Q: rows d, dO: rows d, L: rows, D: rows
//   at the end           writes dK: c d, dV: c d
// so per key tile Q and dO qv d, L and D qv: the manifest's "dkv" pass.
//
// The broken control "fused-backward-no-D" is this file with the override USE_D = false:
// D is neither read nor subtracted, so dS = P ∘ dP and dK comes out wrong (dV is right).
//
// Masking: no -inf. A pair (i, j) with i past N, j past N or, under causal, j > i is
// skipped by an explicit test and contributes P = dS = 0. Every invocation stays in
// every loop that holds a barrier; loop bounds there depend on uniforms, override
// constants and the workgroup id only.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

override D: u32 = 64u;    // head dimension d
override BR: u32 = 32u;   // B_r: query tile rows (causal: which query tiles reach a key tile)
override BC: u32 = 16u;   // B_c: key rows per workgroup
override WG: u32 = 256u;  // invocations per workgroup
override USE_D: bool = true;
override CH: u32 = (BC * D) / (D + 1u + BC);  // query rows per streamed chunk

const PER_MAX: u32 = 16u;  // accumulator entries per invocation: B_c d / WG <= 16

// #include "parts/header.wgsl"
// #include "parts/walk.wgsl"
// #include "parts/bwd_inputs.wgsl"

@group(0) @binding(14) var<storage, read_write> dK: array<f32>;  // (H, N, d)
@group(0) @binding(15) var<storage, read_write> dV: array<f32>;  // (H, N, d)

fn store_dk(i: u32, x: f32) { tally(25u, 1u); dK[i] = x; }
fn store_dv(i: u32, x: f32) { tally(27u, 1u); dV[i] = x; }

var<workgroup> k_tile: array<f32, BC * D>;
var<workgroup> v_tile: array<f32, BC * D>;
var<workgroup> q_chunk: array<f32, CH * D>;
var<workgroup> do_chunk: array<f32, CH * D>;
var<workgroup> lse_chunk: array<f32, CH>;
var<workgroup> dd_chunk: array<f32, CH>;
var<workgroup> p_chunk: array<f32, CH * BC>;
var<workgroup> ds_chunk: array<f32, CH * BC>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let n = params.n;
  let causal = params.causal != 0u;
  let head = params.head_base + wg.y;
  let base = head * n * D;      // first element of this head in Q, K, V, dO, dK, dV
  let rbase = head * n;         // first element of this head in L and D
  let key0 = (params.x_base + wg.x) * BC;   // < n
  let keys = min(BC, n - key0);
  let scale = 1.0 / sqrt(f32(D));

  // K and V tiles: reads K and V, c d elements each; keys past N are zero on the bench.
  for (var e = li; e < BC * D; e += WG) {
    var kx = 0.0;
    var vx = 0.0;
    if (e < keys * D) {
      kx = load_k(base + key0 * D + e);
      vx = load_v(base + key0 * D + e);
    }
    k_tile[e] = kx;
    v_tile[e] = vx;
  }

  var acc_k: array<f32, PER_MAX>;
  var acc_v: array<f32, PER_MAX>;
  for (var t = 0u; t < PER_MAX; t++) {
    acc_k[t] = 0.0;
    acc_v[t] = 0.0;
  }

  // The query rows that reach this key tile: [first, N).
  let first = first_row(key0, causal);
  let chunks = (n - first + CH - 1u) / CH;

  for (var ch = 0u; ch < chunks; ch++) {
    let row0 = first + ch * CH;
    let rows = min(CH, n - row0);
    workgroupBarrier();  // everyone is done with the previous chunk
    // Q and dO rows: reads Q and dO, rows d elements each; L and D, rows elements each.
    for (var e = li; e < CH * D; e += WG) {
      var qx = 0.0;
      var dox = 0.0;
      if (e < rows * D) {
        qx = load_q(base + row0 * D + e);
        dox = load_do(base + row0 * D + e);
      }
      q_chunk[e] = qx;
      do_chunk[e] = dox;
    }
    for (var e = li; e < CH; e += WG) {
      var lx = 0.0;
      var dx = 0.0;
      if (e < rows) {
        lx = load_lse(rbase + row0 + e);
        if (USE_D) { dx = load_rowdot(rbase + row0 + e); }
      }
      lse_chunk[e] = lx;
      dd_chunk[e] = dx;
    }
    workgroupBarrier();

    // P and dS of every (row, key) pair of the chunk, recomputed from L.
    for (var e = li; e < CH * BC; e += WG) {
      let i = e / BC;
      let j = e % BC;
      var p = 0.0;
      var ds = 0.0;
      if (i < rows && j < keys && (!causal || key0 + j <= row0 + i)) {
        var s = 0.0;
        var dp = 0.0;
        // Columns in a rotated order (d is a power of two), so that the keys a subgroup
        // reads sit in different workgroup-memory banks.
        for (var cc = 0u; cc < D; cc++) {
          let c = (cc + j) & (D - 1u);
          s += q_chunk[i * D + c] * k_tile[j * D + c];
          dp += do_chunk[i * D + c] * v_tile[j * D + c];
        }
        p = exp(s * scale - lse_chunk[i]);
        ds = p * (dp - dd_chunk[i]);   // dd_chunk is 0 when USE_D is false
      }
      p_chunk[e] = p;
      ds_chunk[e] = ds;
    }
    workgroupBarrier();

    // dV_j += Σ_i P_ij dO_i and dK_j += Σ_i dS_ij q_i for this invocation's entries (j, c).
    for (var t = 0u; t < PER_MAX; t++) {
      let e = li + t * WG;
      if (e < BC * D) {
        let j = e / D;
        let c = e % D;
        var av = acc_v[t];
        var ak = acc_k[t];
        for (var i = 0u; i < rows; i++) {
          av += p_chunk[i * BC + j] * do_chunk[i * D + c];
          ak += ds_chunk[i * BC + j] * q_chunk[i * D + c];
        }
        acc_v[t] = av;
        acc_k[t] = ak;
      }
    }
  }

  // dK = τ Σ dS q and dV: writes c d elements each.
  for (var t = 0u; t < PER_MAX; t++) {
    let e = li + t * WG;
    if (e < keys * D) {
      store_dk(base + key0 * D + e, acc_k[t] * scale);
      store_dv(base + key0 * D + e, acc_v[t]);
    }
  }
}
