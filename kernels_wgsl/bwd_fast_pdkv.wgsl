// bwd_fast_pdkv.wgsl: the tuned plain backward's key-tile pass, dV = P^T dO and
// dK = τ dS^T Q, with P and dS read back from global memory (plain-backward-fast in
// manifest.json).
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Appendix B, Algorithm 3, lines 2 and 6:
// dV = P^T dO, dK = dS^T Q (τ = 1/√d applied once, at the end). A tiled matrix product whose
// contraction runs over query rows: one workgroup per key tile of B_c keys keeps the tile's
// dK and dV accumulators in registers and streams past it the query rows that see the tile,
// QC rows at a time: each chunk's Q and dO rows and its QC x B_c blocks of P and dS go to
// workgroup memory, then every invocation adds them into its accumulators. No sum crosses
// invocations, so no lanes' sum is needed.
//
// Tiling (manifest "plain-backward-fast", explicit tiles per d, within WebGPU's default
// 16,384 B of workgroup memory and 256 invocations): B_c keys per workgroup; under causal a
// key tile is streamed the rows [floor(k0 / B_r) B_r, N).
//   d = 16 and 32: B_r = B_c = 128     d = 64 and 128: B_r = B_c = 64
// Inside a workgroup (free: only global memory is counted): a key's d columns are split
// over TD = d / 16 invocations (lanes) of 16 columns (4 vec4s) each, lane l owning the
// column groups l, l + TD, l + 2 TD, l + 3 TD; an invocation owns R keys (kg, kg + B_c / R,
// ...) and 8 R named vec4 accumulators. Per row it reads the row's 4 vec4s of Q and 4 of dO
// in its columns (broadcasts) and R floats each of P and dS, for 32 R multiply-adds.
// Invocation li: lane = li % TD, key group kg = li / TD. THREADS = TD B_c / R.
//
// Global memory traffic, float32 (4 bytes an element), for a key tile of c valid keys
// starting at key k0, streamed the qv query rows [first, N) (first = 0, or under causal
// floor(k0 / B_r) B_r):
//   per chunk of rows   reads  Q: rows d, dO: rows d (vec4 loads);  P: rows c, dS: rows c
//   at the end          writes dK: c d, dV: c d (vec4 stores)
// so per key tile Q and dO qv d, P and dS c qv: the manifest's "dkv" pass. P and dS are 0
// past the diagonal (the softmax and ds passes wrote them so), so those entries add 0.
//
// Every invocation stays in every loop that holds a barrier; those loops' bounds depend on
// uniforms, override constants and the workgroup id only; keys past N skip their stores.
//
// The instrumented build (tests only) is this source with every line that starts with
// "// @instrument: " uncommented; it then counts each element loaded or stored.

override D: u32 = 64u;       // head dimension d: 16, 32, 64 or 128
override BR: u32 = 64u;      // B_r (causal: which query tiles reach a key tile)
override BC: u32 = 64u;      // B_c: keys per workgroup, a multiple of R; TD B_c / R <= 256
override TD: u32 = D / 16u;  // lanes per key, 16 columns each
override R: u32 = select(1u, 2u, BC % 2u == 0u);  // keys per invocation: 1 or 2
override D4: u32 = D / 4u;
override TAU: f32 = 1.0 / sqrt(f32(D));  // τ = 1/√d, the scale of the scores
override KPR: u32 = BC / R;           // key groups
override THREADS: u32 = TD * KPR;
override WGB: u32 = 16384u;           // workgroup memory the chunk is fitted to (bytes)
// Rows per chunk: Q and dO (d floats a row each), P and dS (B_c floats a row each) within
// WGB, at most 64.
override QC: u32 = min(64u, WGB / (8u * (D + BC)));
override CH4: u32 = QC * D4;          // vec4s of Q (or dO) in a chunk

// #include "parts/header.wgsl"
// #include "parts/walk.wgsl"

@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;    // (H, N, d)
@group(0) @binding(6) var<storage, read> p: array<f32>;          // (H_batch, N, N)
@group(0) @binding(8) var<storage, read> dO: array<vec4<f32>>;   // (H, N, d)
@group(0) @binding(12) var<storage, read> dS: array<f32>;        // (H_batch, N, N)

fn load_q(i: u32) -> vec4<f32> { tally(0u, 4u); return q[i]; }
fn load_p(i: u32) -> f32 { tally(8u, 1u); return p[i]; }
fn load_do(i: u32) -> vec4<f32> { tally(12u, 4u); return dO[i]; }
fn load_ds(i: u32) -> f32 { tally(20u, 1u); return dS[i]; }

var<workgroup> sm: array<vec4<f32>, 2u * CH4>;      // Q rows, then dO rows: [row][column group]
var<workgroup> pds_tile: array<f32, 2u * QC * BC>;  // P, then dS: [row][key of the tile]

// #include "parts/slices.wgsl"
// #include "parts/out_dkdv.wgsl"

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let me = work(wg, D4, BC);
  let my = lane_of(li, TD);

  // Accumulators ga, gb: dK / τ and dV of keys my.group and my.group + KPR of the tile.
  var ga = KeyGrad();
  var gb = KeyGrad();

  let first = first_row(me.first, me.causal);
  let chunks = (me.n - first + QC - 1u) / QC;

  for (var ch = 0u; ch < chunks; ch++) {
    let row0 = first + ch * QC;
    workgroupBarrier();  // everyone is done with the previous chunk
    // Reads Q and dO: the chunk's rows below N, d each; P and dS: those rows' c entries each.
    for (var e = li; e < CH4; e += THREADS) {
      var xq = vec4<f32>(0.0);
      var xd = vec4<f32>(0.0);
      if (row0 + e / D4 < me.n) {
        xq = load_q(me.base4 + row0 * D4 + e);
        xd = load_do(me.base4 + row0 * D4 + e);
      }
      sm[e] = xq;
      sm[CH4 + e] = xd;
    }
    for (var e = li; e < QC * BC; e += THREADS) {
      let r = e / BC;
      let j = e % BC;
      var xp = 0.0;
      var xs = 0.0;
      if (row0 + r < me.n && me.first + j < me.n) {
        let at = me.table + (row0 + r) * me.n + me.first + j;
        xp = load_p(at);
        xs = load_ds(at);
      }
      pds_tile[e] = xp;
      pds_tile[QC * BC + e] = xs;
    }
    workgroupBarrier();

    // dV += P dO and dK += dS q: per row, its Q and dO slices (broadcasts) and R entries each
    // of P and dS.
    for (var i = 0u; i < QC; i++) {
      let qi = sm_slice(i * D4 + my.lane);
      let oi = sm_slice(CH4 + i * D4 + my.lane);
      ga.dv += pds_tile[i * BC + my.group] * oi;
      ga.dk += pds_tile[QC * BC + i * BC + my.group] * qi;
      if (R > 1u) {
        gb.dv += pds_tile[i * BC + my.group + KPR] * oi;
        gb.dk += pds_tile[QC * BC + i * BC + my.group + KPR] * qi;
      }
    }
  }

  // dK = τ Σ dS q and dV = Σ P dO: writes c d elements each.
  let ka = me.first + my.group;
  store_key(ka, me.n, me.base4 + ka * D4 + my.lane, ga);
  if (R > 1u) { store_key(ka + KPR, me.n, me.base4 + (ka + KPR) * D4 + my.lane, gb); }
}
