// bwd_fast_softmax.wgsl: the tuned plain backward's softmax pass, P = exp(S - L), read from
// and written to global memory (plain-backward-fast in manifest.json).
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Appendix B, Algorithm 3, with P formed
// from the forward's saved logsumexp L (as the fused backward forms it) instead of a stored
// P, so that the plain and fused kernels differ only in memory trips.
//
// Tiling: one workgroup of WG = 64 invocations per query tile of B_r rows (the manifest's
// tiles), the rows in turn; a row's length is the visited block of its query tile: kend = N
// for full attention, causal kend = min(N, ceil(b / B_c) B_c), b one past the tile's last
// row. Where N is a multiple of 4 (a uniform test), every row starts on a vec4 and kend is a
// multiple of 4: invocation li takes the vec4s li + (4 t + c) WG of a row, c < 4, four vec4
// loads with no branch between them, then four vec4 stores (neighbouring invocations touch
// neighbouring vec4s, so every access is coalesced). Otherwise the same with single floats.
// The tile's L goes to workgroup memory first (one load a row). The host sizes each table
// to a whole number of vec4s.
// This pass does almost no arithmetic per byte: its time is what the card's bandwidth allows.
//
// Global memory traffic, float32 (4 bytes an element), per row of a query tile:
//   reads  L: 1;  S: kend;  writes P: kend (entries past the diagonal written as 0)
// so per query tile L r, S r kv, P r kv: the manifest's "softmax" pass.
//
// Masking by position (key j > row i under causal), never by the stored value. The
// exponent of a masked entry is replaced by 0 before exp, so no exp overflows.
//
// The instrumented build (tests only) is this source with every line that starts with
// "// @instrument: " uncommented; it then counts each element loaded or stored.

override BR: u32 = 64u;   // B_r of the kernel's tiles
override BC: u32 = 64u;   // B_c of the kernel's tiles
override WG: u32 = 64u;   // invocations per workgroup

// #include "parts/header.wgsl"
// #include "parts/walk.wgsl"

@group(0) @binding(5) var<storage, read> s: array<vec4<f32>>;        // (H_batch, N, N)
@group(0) @binding(6) var<storage, read_write> p: array<vec4<f32>>;  // (H_batch, N, N)
@group(0) @binding(9) var<storage, read> l: array<f32>;              // L, (H, N)

fn load_s4(i4: u32) -> vec4<f32> { tally(6u, 4u); return s[i4]; }
fn store_p4(i4: u32, x: vec4<f32>) { tally(9u, 4u); p[i4] = x; }
fn load_s(i: u32) -> f32 { tally(6u, 1u); return s[i / 4u][i % 4u]; }
fn store_p(i: u32, x: f32) { tally(9u, 1u); p[i / 4u][i % 4u] = x; }
fn load_lse(i: u32) -> f32 { tally(14u, 1u); return l[i]; }

var<workgroup> stat: array<f32, BR>;  // L of the tile's rows

fn ld(off: u32, j: u32, kend: u32) -> f32 {
  var x = 0.0;
  if (j < kend) { x = load_s(off + j); }
  return x;
}

fn st(off: u32, j: u32, kend: u32, x: f32) {
  if (j < kend) { store_p(off + j, x); }
}
fn ld4(off4: u32, j4: u32, kend4: u32) -> vec4<f32> {
  var x = vec4<f32>(0.0);
  if (j4 < kend4) { x = load_s4(off4 + j4); }
  return x;
}
fn st4(off4: u32, j4: u32, kend4: u32, x: vec4<f32>) {
  if (j4 < kend4) { store_p4(off4 + j4, x); }
}

// The four keys of vec4 j4 of a row.
fn keys4(j4: u32) -> vec4<u32> { return vec4<u32>(4u * j4) + vec4<u32>(0u, 1u, 2u, 3u); }

// exp(x - lse) where the key is visible (j <= last), else 0.
fn p_of(x: vec4<f32>, j: vec4<u32>, last: u32, lse: f32) -> vec4<f32> {
  let ok = j <= vec4<u32>(last);
  return select(vec4<f32>(0.0), exp(select(vec4<f32>(0.0), x - vec4<f32>(lse), ok)), ok);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let n = params.n;
  let causal = params.causal != 0u;
  let row0 = (params.x_base + wg.x) * BR;  // < n
  let rows = min(BR, n - row0);
  let kend = key_end(row0, n, causal);

  for (var e = li; e < rows; e += WG) { stat[e] = load_lse((params.head_base + wg.y) * n + row0 + e); }
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
      let lse = stat[i];
      for (var t = 0u; t < groups; t++) {
        let j4 = 4u * t * WG + li;
        if (4u * (t + 1u) * WG <= kend4) {
          let x0 = load_s4(off4 + j4);
          let x1 = load_s4(off4 + j4 + WG);
          let x2 = load_s4(off4 + j4 + 2u * WG);
          let x3 = load_s4(off4 + j4 + 3u * WG);
          store_p4(off4 + j4, p_of(x0, keys4(j4), last, lse));
          store_p4(off4 + j4 + WG, p_of(x1, keys4(j4 + WG), last, lse));
          store_p4(off4 + j4 + 2u * WG, p_of(x2, keys4(j4 + 2u * WG), last, lse));
          store_p4(off4 + j4 + 3u * WG, p_of(x3, keys4(j4 + 3u * WG), last, lse));
        } else {  // the row's last, partial group
          let x0 = ld4(off4, j4, kend4);
          let x1 = ld4(off4, j4 + WG, kend4);
          let x2 = ld4(off4, j4 + 2u * WG, kend4);
          let x3 = ld4(off4, j4 + 3u * WG, kend4);
          st4(off4, j4, kend4, p_of(x0, keys4(j4), last, lse));
          st4(off4, j4 + WG, kend4, p_of(x1, keys4(j4 + WG), last, lse));
          st4(off4, j4 + 2u * WG, kend4, p_of(x2, keys4(j4 + 2u * WG), last, lse));
          st4(off4, j4 + 3u * WG, kend4, p_of(x3, keys4(j4 + 3u * WG), last, lse));
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
      let lse = stat[i];
      for (var t = 0u; t < groups; t++) {
        let j = 4u * t * WG + li;
        let js = vec4<u32>(j) + vec4<u32>(0u, 1u, 2u, 3u) * WG;
        if (4u * (t + 1u) * WG <= kend) {
          let x = vec4<f32>(load_s(off + js.x), load_s(off + js.y), load_s(off + js.z), load_s(off + js.w));
          let y = p_of(x, js, last, lse);
          store_p(off + js.x, y.x);
          store_p(off + js.y, y.y);
          store_p(off + js.z, y.z);
          store_p(off + js.w, y.w);
        } else {  // the row's last, partial group
          let x = vec4<f32>(ld(off, js.x, kend), ld(off, js.y, kend), ld(off, js.z, kend), ld(off, js.w, kend));
          let y = p_of(x, js, last, lse);
          st(off, js.x, kend, y.x);
          st(off, js.y, kend, y.y);
          st(off, js.z, kend, y.z);
          st(off, js.w, kend, y.w);
        }
      }
    }
  }
}
