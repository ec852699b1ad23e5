// bwd_plain_dkv.wgsl: the plain backward's key-tile pass, dV = P^T dO and dK = τ dS^T Q,
// with P and dS read back from global memory (plain-backward in manifest.json).
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Appendix B, Algorithm 3, lines 2
// and 6: dV = P^T dO, dK = dS^T Q (τ = 1/√d applied once, at the end).
//
// Tiling: one workgroup per key tile of the lesson's B_c = (M/2) / (8 d) rows, with the
// query rows that reach it streaming past in chunks of CH rows: their Q and dO rows and
// the CH x B_c blocks of P and dS, within the bench's M/4 floats,
// CH (2 d + 2 B_c) <= 4 B_c d, CH = 2 B_c d / (d + B_c). WG = 256 invocations; each owns
// B_c d / WG entries of dK and dV (at most PER_MAX = 16), held in registers.
//
// Global memory traffic, float32 (4 bytes an element), for a key tile of c valid rows
// starting at key k0, reached by the qv query rows [first, N) (first = 0, or under
// causal floor(k0 / B_r) B_r, as bwd_fused_dkv.wgsl):
//   reads  Q: qv d, dO: qv d, P: c qv, dS: c qv;  writes dK: c d, dV: c d
// Every entry read lies inside a block the query-tile passes wrote (a query tile that
// reaches k0 wrote keys up to past the key tile); past the diagonal they hold 0, and
// the mask below is by position as well.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

override D: u32 = 64u;    // head dimension d
override BR: u32 = 32u;   // B_r: query tile rows (causal: which query tiles reach a key tile)
override BC: u32 = 16u;   // B_c: key rows per workgroup
override WG: u32 = 256u;  // invocations per workgroup
override CH: u32 = (2u * BC * D) / (D + BC);  // query rows per streamed chunk

const PER_MAX: u32 = 16u;  // accumulator entries per invocation: B_c d / WG <= 16

// #include "parts/header.wgsl"
// #include "parts/walk.wgsl"

@group(0) @binding(1) var<storage, read> q: array<f32>;          // (H, N, d)
@group(0) @binding(6) var<storage, read> p: array<f32>;          // (H_batch, N, N)
@group(0) @binding(8) var<storage, read> dO: array<f32>;         // (H, N, d)
@group(0) @binding(12) var<storage, read> dS: array<f32>;        // (H_batch, N, N)
@group(0) @binding(14) var<storage, read_write> dK: array<f32>;  // (H, N, d)
@group(0) @binding(15) var<storage, read_write> dV: array<f32>;  // (H, N, d)

fn load_q(i: u32) -> f32 { tally(0u, 1u); return q[i]; }
fn load_p(i: u32) -> f32 { tally(8u, 1u); return p[i]; }
fn load_do(i: u32) -> f32 { tally(12u, 1u); return dO[i]; }
fn load_ds(i: u32) -> f32 { tally(20u, 1u); return dS[i]; }
fn store_dk(i: u32, x: f32) { tally(25u, 1u); dK[i] = x; }
fn store_dv(i: u32, x: f32) { tally(27u, 1u); dV[i] = x; }

var<workgroup> q_chunk: array<f32, CH * D>;
var<workgroup> do_chunk: array<f32, CH * D>;
var<workgroup> p_chunk: array<f32, CH * BC>;
var<workgroup> ds_chunk: array<f32, CH * BC>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let n = params.n;
  let causal = params.causal != 0u;
  let base = (params.head_base + wg.y) * n * D;
  let s_base = wg.y * n * n;
  let key0 = (params.x_base + wg.x) * BC;   // < n
  let keys = min(BC, n - key0);
  let scale = 1.0 / sqrt(f32(D));

  var acc_k: array<f32, PER_MAX>;
  var acc_v: array<f32, PER_MAX>;
  for (var t = 0u; t < PER_MAX; t++) {
    acc_k[t] = 0.0;
    acc_v[t] = 0.0;
  }

  let first = first_row(key0, causal);
  let chunks = (n - first + CH - 1u) / CH;

  for (var ch = 0u; ch < chunks; ch++) {
    let row0 = first + ch * CH;
    let rows = min(CH, n - row0);
    workgroupBarrier();  // everyone is done with the previous chunk
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
    // P and dS columns of this key tile for the chunk's rows: reads rows x c each.
    for (var e = li; e < CH * BC; e += WG) {
      let i = e / BC;
      let j = e % BC;
      var px = 0.0;
      var dsx = 0.0;
      if (i < rows && j < keys) {
        let at = s_base + (row0 + i) * n + key0 + j;
        px = load_p(at);
        dsx = load_ds(at);
        if (causal && key0 + j > row0 + i) {
          px = 0.0;
          dsx = 0.0;
        }
      }
      p_chunk[e] = px;
      ds_chunk[e] = dsx;
    }
    workgroupBarrier();

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

  for (var t = 0u; t < PER_MAX; t++) {
    let e = li + t * WG;
    if (e < keys * D) {
      store_dk(base + key0 * D + e, acc_k[t] * scale);
      store_dv(base + key0 * D + e, acc_v[t]);
    }
  }
}
