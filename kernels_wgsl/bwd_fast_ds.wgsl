// bwd_fast_ds.wgsl: the tuned plain backward's dS pass, dS = P ∘ (dP - D), read from and
// written to global memory (plain-backward-fast in manifest.json).
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Appendix B.2: dS_ij = P_ij (dP_ij - D_i),
// with D_i = rowsum(dO_i ∘ O_i) from bwd_fast_pre.wgsl.
//
// Tiling: one workgroup of WG = 64 invocations per query tile of B_r rows (the manifest's
// tiles), the rows in turn; a row's length is the visited block of its query tile: kend = N
// for full attention, causal kend = min(N, ceil(b / B_c) B_c), b one past the tile's last
// row. Where N is a multiple of 4 (a uniform test), every row starts on a vec4 and kend is a
// multiple of 4: invocation li takes the vec4s li + (4 t + c) WG of a row, c < 4, eight vec4
// loads (P and dP) with no branch between them, then four vec4 stores (neighbouring
// invocations touch neighbouring vec4s, so every access is coalesced). Otherwise the same
// with single floats. The tile's D goes to workgroup memory first (one load a row). The host
// sizes each table to a whole number of vec4s.
// This pass does almost no arithmetic per byte: its time is what the card's bandwidth allows.
//
// Global memory traffic, float32 (4 bytes an element), per row of a query tile:
//   reads  D: 1;  P: kend;  dP: kend;  writes dS: kend (entries past the diagonal written as 0)
// so per query tile D r, P r kv, dP r kv, dS r kv: the manifest's "ds" pass.
//
// Masking by position (key j > row i under causal), never by the stored value.
//
// The instrumented build (tests only) is this source with every line that starts with
// "// @instrument: " uncommented; it then counts each element loaded or stored.

override BR: u32 = 64u;   // B_r of the kernel's tiles
override BC: u32 = 64u;   // B_c of the kernel's tiles
override WG: u32 = 64u;   // invocations per workgroup

// #include "parts/header.wgsl"
// #include "parts/walk.wgsl"

@group(0) @binding(6) var<storage, read> p: array<vec4<f32>>;          // (H_batch, N, N)
@group(0) @binding(10) var<storage, read> d: array<f32>;               // D, (H, N)
@group(0) @binding(11) var<storage, read> dP: array<vec4<f32>>;        // (H_batch, N, N)
@group(0) @binding(12) var<storage, read_write> dS: array<vec4<f32>>;  // (H_batch, N, N)

fn load_p4(i4: u32) -> vec4<f32> { tally(8u, 4u); return p[i4]; }
fn load_dp4(i4: u32) -> vec4<f32> { tally(18u, 4u); return dP[i4]; }
fn store_ds4(i4: u32, x: vec4<f32>) { tally(21u, 4u); dS[i4] = x; }
fn load_p(i: u32) -> f32 { tally(8u, 1u); return p[i / 4u][i % 4u]; }
fn load_dp(i: u32) -> f32 { tally(18u, 1u); return dP[i / 4u][i % 4u]; }
fn store_ds(i: u32, x: f32) { tally(21u, 1u); dS[i / 4u][i % 4u] = x; }
fn load_rowdot(i: u32) -> f32 { tally(16u, 1u); return d[i]; }

var<workgroup> stat: array<f32, BR>;  // D of the tile's rows

fn ld_p(off: u32, j: u32, kend: u32) -> f32 {
  var x = 0.0;
  if (j < kend) { x = load_p(off + j); }
  return x;
}
fn ld_dp(off: u32, j: u32, kend: u32) -> f32 {
  var x = 0.0;
  if (j < kend) { x = load_dp(off + j); }
  return x;
}
fn st(off: u32, j: u32, kend: u32, x: f32) {
  if (j < kend) { store_ds(off + j, x); }
}
// dS of vec4 j4 of the row at off4 (vec4s), zero and not stored past kend4.
fn ds4(off4: u32, j4: u32, kend4: u32, last: u32, dd: f32) {
  if (j4 < kend4) { store_ds4(off4 + j4, ds_of(load_p4(off4 + j4), load_dp4(off4 + j4), keys4(j4), last, dd)); }
}

// The four keys of vec4 j4 of a row.
fn keys4(j4: u32) -> vec4<u32> { return vec4<u32>(4u * j4) + vec4<u32>(0u, 1u, 2u, 3u); }

// P (dP - D) where the key is visible (j <= last), else 0.
fn ds_of(pv: vec4<f32>, dpv: vec4<f32>, j: vec4<u32>, last: u32, dd: f32) -> vec4<f32> {
  return select(vec4<f32>(0.0), pv * (dpv - vec4<f32>(dd)), j <= vec4<u32>(last));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let n = params.n;
  let causal = params.causal != 0u;
  let row0 = (params.x_base + wg.x) * BR;  // < n
  let rows = min(BR, n - row0);
  let kend = key_end(row0, n, causal);

  for (var e = li; e < rows; e += WG) { stat[e] = load_rowdot((params.head_base + wg.y) * n + row0 + e); }
  workgroupBarrier();

  if (n % 4u == 0u) {
    // vec4s: row starts and kend are multiples of 4.
    let kend4 = kend / 4u;
    let groups = (kend4 + 4u * WG - 1u) / (4u * WG);
    for (var i = 0u; i < rows; i++) {
      let row = row0 + i;
      let off4 = (wg.y * n * n + row * n) / 4u;
      var last = n - 1u;  // last visible key
      if (causal) { last = row; }
      let dd = stat[i];
      for (var t = 0u; t < groups; t++) {
        let j4 = 4u * t * WG + li;
        if (4u * (t + 1u) * WG <= kend4) {
          let p0 = load_p4(off4 + j4);
          let p1 = load_p4(off4 + j4 + WG);
          let p2 = load_p4(off4 + j4 + 2u * WG);
          let p3 = load_p4(off4 + j4 + 3u * WG);
          let g0 = load_dp4(off4 + j4);
          let g1 = load_dp4(off4 + j4 + WG);
          let g2 = load_dp4(off4 + j4 + 2u * WG);
          let g3 = load_dp4(off4 + j4 + 3u * WG);
          store_ds4(off4 + j4, ds_of(p0, g0, keys4(j4), last, dd));
          store_ds4(off4 + j4 + WG, ds_of(p1, g1, keys4(j4 + WG), last, dd));
          store_ds4(off4 + j4 + 2u * WG, ds_of(p2, g2, keys4(j4 + 2u * WG), last, dd));
          store_ds4(off4 + j4 + 3u * WG, ds_of(p3, g3, keys4(j4 + 3u * WG), last, dd));
        } else {  // the row's last, partial group
          ds4(off4, j4, kend4, last, dd);
          ds4(off4, j4 + WG, kend4, last, dd);
          ds4(off4, j4 + 2u * WG, kend4, last, dd);
          ds4(off4, j4 + 3u * WG, kend4, last, dd);
        }
      }
    }
  } else {
    // Single floats: N is not a multiple of 4.
    let groups = (kend + 4u * WG - 1u) / (4u * WG);
    for (var i = 0u; i < rows; i++) {
      let row = row0 + i;
      let off = wg.y * n * n + row * n;
      var last = n - 1u;  // last visible key
      if (causal) { last = row; }
      let dd = stat[i];
      for (var t = 0u; t < groups; t++) {
        let j = 4u * t * WG + li;
        let js = vec4<u32>(j) + vec4<u32>(0u, 1u, 2u, 3u) * WG;
        if (4u * (t + 1u) * WG <= kend) {
          let pv = vec4<f32>(load_p(off + js.x), load_p(off + js.y), load_p(off + js.z), load_p(off + js.w));
          let dpv = vec4<f32>(load_dp(off + js.x), load_dp(off + js.y), load_dp(off + js.z), load_dp(off + js.w));
          let y = ds_of(pv, dpv, js, last, dd);
          store_ds(off + js.x, y.x);
          store_ds(off + js.y, y.y);
          store_ds(off + js.z, y.z);
          store_ds(off + js.w, y.w);
        } else {  // the row's last, partial group
          let pv = vec4<f32>(ld_p(off, js.x, kend), ld_p(off, js.y, kend), ld_p(off, js.z, kend), ld_p(off, js.w, kend));
          let dpv = vec4<f32>(ld_dp(off, js.x, kend), ld_dp(off, js.y, kend), ld_dp(off, js.z, kend),
                              ld_dp(off, js.w, kend));
          let y = ds_of(pv, dpv, js, last, dd);
          st(off, js.x, kend, y.x);
          st(off, js.y, kend, y.y);
          st(off, js.z, kend, y.z);
          st(off, js.w, kend, y.w);
        }
      }
    }
  }
}
