// bwd_fast_pdq.wgsl: the tuned plain backward's dQ pass, dQ = τ dS K, with dS read back from
// global memory (plain-backward-fast in manifest.json).
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Appendix B, Algorithm 3, line 5:
// dQ = dS K (τ = 1/√d applied once, at the end). A tiled matrix product whose contraction
// runs over keys: one workgroup per query tile of B_r rows keeps the tile's dQ accumulators
// in registers and streams past it the key tiles it visits, KC keys at a time: each chunk's
// K rows and the tile's B_r x KC block of dS go to workgroup memory, then every invocation
// adds them into its accumulators. No sum crosses invocations, so no lanes' sum is needed.
//
// Tiling (manifest "plain-backward-fast", explicit tiles per d, within WebGPU's default
// 16,384 B of workgroup memory and 256 invocations): B_r rows per workgroup; under causal a
// query tile visits keys [0, kend), kend = min(N, ceil(b / B_c) B_c), b one past its last row.
//   d = 16 and 32: B_r = B_c = 128     d = 64 and 128: B_r = B_c = 64
// Inside a workgroup (free: only global memory is counted): a row's d columns are split over
// TD = d / 16 invocations (lanes) of 16 columns (4 vec4s) each, lane l owning the column
// groups l, l + TD, l + 2 TD, l + 3 TD; an invocation owns R rows (rg, rg + B_r / R, ...),
// 4 R named vec4 accumulators. Per key it reads the key's 4 vec4s of K in its columns (a
// broadcast: every row group reads them) and R floats of dS, for 16 R multiply-adds. The
// block of dS sits in workgroup memory with a row stride of KC + 1 floats (odd), so that the
// rows of neighbouring invocations fall in different banks.
// Invocation li: lane = li % TD, row group rg = li / TD. THREADS = TD B_r / R.
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid rows
// whose visited key tiles cover keys [0, kend):
//   per chunk of keys   reads  K: keys d (vec4 loads);  dS: r keys (coalesced along the row)
//   at the end          writes dQ: r d (vec4 stores)
// so per query tile K kv d, dS r kv, dQ r d: the manifest's "dq" pass. dS is 0 past the
// diagonal (bwd_fast_ds.wgsl wrote it so), so those entries add 0.
//
// Every invocation stays in every loop that holds a barrier; those loops' bounds depend on
// uniforms, override constants and the workgroup id only; rows past N skip their stores.
//
// The instrumented build (tests only) is this source with every line that starts with
// "// @instrument: " uncommented; it then counts each element loaded or stored.

override D: u32 = 64u;       // head dimension d: 16, 32, 64 or 128
override BR: u32 = 64u;      // B_r: query rows per workgroup, a multiple of R; TD B_r / R <= 256
override BC: u32 = 64u;      // B_c (causal: where a query tile's keys end)
override TD: u32 = D / 16u;  // lanes per row, 16 columns each
override R: u32 = select(select(1u, 2u, BR % 2u == 0u), 4u, BR % 4u == 0u && TD * BR >= 512u);  // rows per invocation
override D4: u32 = D / 4u;
override TAU: f32 = 1.0 / sqrt(f32(D));  // τ = 1/√d, the scale of the scores
override RPR: u32 = BR / R;           // row groups
override THREADS: u32 = TD * RPR;
override WGB: u32 = 16384u;           // workgroup memory the chunk is fitted to (bytes)
// Keys per chunk: K (d floats a key) and dS (B_r + 1 floats a key, with the padding) within
// WGB, at most 64.
override KC: u32 = min(64u, (WGB / 4u - BR) / (D + BR));
override KCP: u32 = KC + 1u - KC % 2u;  // row stride of the dS block: odd
override CH4: u32 = KC * D4;          // vec4s of K in a chunk

// #include "parts/header.wgsl"
// #include "parts/walk.wgsl"

@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;   // (H, N, d)
@group(0) @binding(12) var<storage, read> dS: array<f32>;       // (H_batch, N, N)

fn load_k(i: u32) -> vec4<f32> { tally(2u, 4u); return k[i]; }
fn load_ds(i: u32) -> f32 { tally(20u, 1u); return dS[i]; }

var<workgroup> sm: array<vec4<f32>, CH4>;        // the chunk's K rows: [key][column group]
var<workgroup> ds_tile: array<f32, BR * KCP>;   // [row][key], row stride KCP

// #include "parts/slices.wgsl"
// #include "parts/out_dq.wgsl"

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let me = work(wg, D4, BR);
  let my = lane_of(li, TD);

  let kend = key_end(me.first, me.n, me.causal);
  let chunks = (kend + KC - 1u) / KC;

  // Accumulators: slices a{r} of row rg + r RPR in this lane's 16 columns.
  var a0 = mat4x4<f32>();
  var a1 = mat4x4<f32>();
  var a2 = mat4x4<f32>();
  var a3 = mat4x4<f32>();

  for (var ch = 0u; ch < chunks; ch++) {
    let kc0 = ch * KC;
    workgroupBarrier();  // everyone is done with the previous chunk
    // Reads K: the chunk's keys below kend, d each; dS: the tile's rows, those keys each.
    for (var e = li; e < CH4; e += THREADS) {
      var x = vec4<f32>(0.0);
      if (kc0 + e / D4 < kend) { x = load_k(me.base4 + kc0 * D4 + e); }
      sm[e] = x;
    }
    for (var e = li; e < BR * KC; e += THREADS) {
      let r = e / KC;
      let j = e % KC;
      var x = 0.0;
      if (me.first + r < me.n && kc0 + j < kend) { x = load_ds(me.table + (me.first + r) * me.n + kc0 + j); }
      ds_tile[r * KCP + j] = x;
    }
    workgroupBarrier();

    // dQ += dS k: per key, its slice (a broadcast) and R entries of dS.
    for (var j = 0u; j < KC; j++) {
      let kj = sm_slice(j * D4 + my.lane);
      a0 += ds_tile[my.group * KCP + j] * kj;
      if (R > 1u) { a1 += ds_tile[(my.group + RPR) * KCP + j] * kj; }
      if (R > 2u) {
        a2 += ds_tile[(my.group + 2u * RPR) * KCP + j] * kj;
        a3 += ds_tile[(my.group + 3u * RPR) * KCP + j] * kj;
      }
    }
  }

  // dQ = τ dS K: writes r d elements.
  let ra = me.first + my.group;
  store_row(ra, me.n, me.base4 + ra * D4 + my.lane, a0);
  if (R > 1u) { store_row(ra + RPR, me.n, me.base4 + (ra + RPR) * D4 + my.lane, a1); }
  if (R > 2u) {
    store_row(ra + 2u * RPR, me.n, me.base4 + (ra + 2u * RPR) * D4 + my.lane, a2);
    store_row(ra + 3u * RPR, me.n, me.base4 + (ra + 3u * RPR) * D4 + my.lane, a3);
  }
}
