// plain_reg_softmax.wgsl: pass 2 of 3 of the register-tiled plain attention ("plain-reg" in
// manifest.json), P = softmax(S) row by row, read from and written to global memory. The
// lesson's readable pass is plain_softmax.wgsl; this one reads and writes whole vec4s.
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Algorithm 0, line 2: "read S from HBM,
// compute P = softmax(S), write P to HBM". Safe softmax: the row max is subtracted before exp.
//
// Tiling: one workgroup of WG invocations per query row (grid "rows"). Invocation li holds
// the row's vec4s li + t WG, t < 16, in the named registers x{t}: 64 WG elements, so rows of
// up to 8,192 keys at WG = 128 (manifest "softmax_max_row"). The manifest gives WG = 64 up to
// N = 4,096 and 128 past it ("constants_by_n"): the pass is fastest where all of an
// invocation's registers hold keys. On an H200 at N = 4,096, d = 64 (docs/BENCHMARKS.md, "A plain
// baseline as well made as the fused one") it moved S and P at 4,087 GB/s with 64 invocations,
// 2,704 with 128 and 1,072 with 256 (16 registers each; 256 with 8 registers: 2,514).
// Where N and kend are multiples of 4 (a test uniform over the workgroup), the tables are read
// and written as vec4s: each invocation's loads are all issued before any arithmetic, and
// neighbouring invocations touch neighbouring vec4s (every access coalesced). Otherwise the
// same elements one float at a time, through a component of the table viewed as
// array<vec4<f32>>.
//
// One read: each invocation takes the max m_i of its visible elements and l_i = sum exp(x - m_i),
// keeping exp(x - m_i) in its registers; the pairs are merged over the workgroup by a tree in
// workgroup memory (four pairs a step, log4 WG steps, a barrier each; no subgroups) with the
// online-softmax rule m = max(m_a, m_b, ...), l = l_a exp(m_a - m) + l_b exp(m_b - m) + ...
// (FlashAttention §3.1); then one write, P = exp(x - m_i) * exp(m_i - m) / l. The row's
// length is the visited block of the scores pass: kend = N for full attention; for causal
// kend = min(N, ceil(b / B_c) * B_c), b one past the last row of the row's query tile (B_r,
// B_c: the kernel's tiles, overrides).
//
// Global memory traffic, float32 (4 bytes an element), per row:
//   reads  S: kend * 4 bytes
//   writes P: kend * 4 bytes (entries above the diagonal written as 0)
// so per head the elements the scores pass wrote: the manifest's "softmax" formulas.
//
// Masking is by position (key j > row i under causal), never by the stored value; key 0 is
// always visible, so the sum is at least 1 (no 0 / 0).
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

override BR: u32 = 64u;   // B_r of the scores pass
override BC: u32 = 64u;   // B_c of the scores pass
override WG: u32 = 128u;  // invocations per row: a power of two, rows of up to 64 WG keys

// #include "parts/header.wgsl"
// #include "parts/walk.wgsl"

// S and P hold the heads of one dispatch (wg.y); the planner sizes them in whole vec4s.
@group(0) @binding(5) var<storage, read> s: array<vec4<f32>>;        // (H_batch, N, N)
@group(0) @binding(6) var<storage, read_write> p: array<vec4<f32>>;  // (H_batch, N, N)

fn load_s4(i4: u32) -> vec4<f32> { tally(6u, 4u); return s[i4]; }
fn load_s1(i: u32) -> f32 { tally(6u, 1u); return s[i / 4u][i % 4u]; }
fn store_p4(i4: u32, y: vec4<f32>) { tally(9u, 4u); p[i4] = y; }
fn store_p1(i: u32, y: f32) { tally(9u, 1u); p[i / 4u][i % 4u] = y; }

var<workgroup> red: array<vec2<f32>, WG>;  // (m, l) pairs of the tree

// The four keys of vec4 j4 of a row.
fn keys4(j4: u32) -> vec4<u32> { return vec4<u32>(4u * j4) + vec4<u32>(0u, 1u, 2u, 3u); }

// Vec4 j4 of the row that starts at entry off: S below kend, NEG_BIG past it.
fn load4(off: u32, j4: u32, kend: u32, whole: bool) -> vec4<f32> {
  var x = vec4<f32>(NEG_BIG);
  if (whole) {
    if (4u * j4 < kend) { x = load_s4(off / 4u + j4); }
  } else {
    let j = keys4(j4);
    if (j.x < kend) { x.x = load_s1(off + j.x); }
    if (j.y < kend) { x.y = load_s1(off + j.y); }
    if (j.z < kend) { x.z = load_s1(off + j.z); }
    if (j.w < kend) { x.w = load_s1(off + j.w); }
  }
  return x;
}

fn store4(off: u32, j4: u32, kend: u32, whole: bool, y: vec4<f32>) {
  if (whole) {
    if (4u * j4 < kend) { store_p4(off / 4u + j4, y); }
  } else {
    let j = keys4(j4);
    if (j.x < kend) { store_p1(off + j.x, y.x); }
    if (j.y < kend) { store_p1(off + j.y, y.y); }
    if (j.z < kend) { store_p1(off + j.z, y.z); }
    if (j.w < kend) { store_p1(off + j.w, y.w); }
  }
}

// The visible maximum of vec4 j4 (keys j <= last); NEG_BIG where none is.
fn vmax4(x: vec4<f32>, j4: u32, last: u32) -> f32 {
  let y = select(vec4<f32>(NEG_BIG), x, keys4(j4) <= vec4<u32>(last));
  return max(max(y.x, y.y), max(y.z, y.w));
}

// exp(x - m) where the key is visible, else 0.
fn exp4(x: vec4<f32>, j4: u32, last: u32, m: f32) -> vec4<f32> {
  return select(vec4<f32>(0.0), exp(x - vec4<f32>(m)), keys4(j4) <= vec4<u32>(last));
}

// One (m, l) pair's sum rescaled to the max m (0 for a pair that saw no visible key).
fn rescaled(a: vec2<f32>, m: f32) -> f32 {
  return select(0.0, a.y * exp(a.x - m), a.x > NEG_BIG);
}

// Merge four (m, l) pairs (b, c, e of a step of two: (NEG_BIG, 0)): the max, and the sums
// rescaled to it.
fn merge(a: vec2<f32>, b: vec2<f32>, c: vec2<f32>, e: vec2<f32>) -> vec2<f32> {
  let m = max(max(a.x, b.x), max(c.x, e.x));
  return vec2<f32>(m, rescaled(a, m) + rescaled(b, m) + rescaled(c, m) + rescaled(e, m));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let me = work(wg, 0u, 1u);
  let row = me.first;  // < N: one workgroup per row
  let off = me.table + row * me.n;
  let kend = key_end((row / BR) * BR, me.n, me.causal);  // the scores pass's block of this row
  let whole = me.n % 4u == 0u && kend % 4u == 0u;
  var last = me.n - 1u;  // the last visible key
  if (me.causal) { last = row; }

  // Reads S: kend elements, once each; every load issued before the arithmetic.
  var x0 = load4(off, li, kend, whole);
  var x1 = load4(off, li + WG, kend, whole);
  var x2 = load4(off, li + 2u * WG, kend, whole);
  var x3 = load4(off, li + 3u * WG, kend, whole);
  var x4 = load4(off, li + 4u * WG, kend, whole);
  var x5 = load4(off, li + 5u * WG, kend, whole);
  var x6 = load4(off, li + 6u * WG, kend, whole);
  var x7 = load4(off, li + 7u * WG, kend, whole);
  var x8 = load4(off, li + 8u * WG, kend, whole);
  var x9 = load4(off, li + 9u * WG, kend, whole);
  var x10 = load4(off, li + 10u * WG, kend, whole);
  var x11 = load4(off, li + 11u * WG, kend, whole);
  var x12 = load4(off, li + 12u * WG, kend, whole);
  var x13 = load4(off, li + 13u * WG, kend, whole);
  var x14 = load4(off, li + 14u * WG, kend, whole);
  var x15 = load4(off, li + 15u * WG, kend, whole);

  // This invocation's max over its visible keys, then exp(x - m_i) in place and their sum.
  var mx = max(vmax4(x0, li, last), vmax4(x1, li + WG, last));
  mx = max(mx, max(vmax4(x2, li + 2u * WG, last), vmax4(x3, li + 3u * WG, last)));
  mx = max(mx, max(vmax4(x4, li + 4u * WG, last), vmax4(x5, li + 5u * WG, last)));
  mx = max(mx, max(vmax4(x6, li + 6u * WG, last), vmax4(x7, li + 7u * WG, last)));
  mx = max(mx, max(vmax4(x8, li + 8u * WG, last), vmax4(x9, li + 9u * WG, last)));
  mx = max(mx, max(vmax4(x10, li + 10u * WG, last), vmax4(x11, li + 11u * WG, last)));
  mx = max(mx, max(vmax4(x12, li + 12u * WG, last), vmax4(x13, li + 13u * WG, last)));
  mx = max(mx, max(vmax4(x14, li + 14u * WG, last), vmax4(x15, li + 15u * WG, last)));
  x0 = exp4(x0, li, last, mx);
  x1 = exp4(x1, li + WG, last, mx);
  x2 = exp4(x2, li + 2u * WG, last, mx);
  x3 = exp4(x3, li + 3u * WG, last, mx);
  x4 = exp4(x4, li + 4u * WG, last, mx);
  x5 = exp4(x5, li + 5u * WG, last, mx);
  x6 = exp4(x6, li + 6u * WG, last, mx);
  x7 = exp4(x7, li + 7u * WG, last, mx);
  x8 = exp4(x8, li + 8u * WG, last, mx);
  x9 = exp4(x9, li + 9u * WG, last, mx);
  x10 = exp4(x10, li + 10u * WG, last, mx);
  x11 = exp4(x11, li + 11u * WG, last, mx);
  x12 = exp4(x12, li + 12u * WG, last, mx);
  x13 = exp4(x13, li + 13u * WG, last, mx);
  x14 = exp4(x14, li + 14u * WG, last, mx);
  x15 = exp4(x15, li + 15u * WG, last, mx);
  let one = vec4<f32>(1.0);
  var total = dot(x0, one) + dot(x1, one) + dot(x2, one) + dot(x3, one);
  total += dot(x4, one) + dot(x5, one) + dot(x6, one) + dot(x7, one);
  total += dot(x8, one) + dot(x9, one) + dot(x10, one) + dot(x11, one);
  total += dot(x12, one) + dot(x13, one) + dot(x14, one) + dot(x15, one);

  // The row's (m, l): a tree over the workgroup, four pairs merged a step (two where WG is not
  // a power of four, at the first step): log4 WG steps, a barrier each.
  red[li] = vec2<f32>(mx, total);
  workgroupBarrier();
  let none = vec2<f32>(NEG_BIG, 0.0);
  var w = WG;
  while (w > 1u) {
    let four = (w & 0x55555555u) != 0u;  // w is a power of four
    let step = select(w / 2u, w / 4u, four);
    if (li < step) {
      var c = none;
      var e = none;
      if (four) {
        c = red[li + 2u * step];
        e = red[li + 3u * step];
      }
      red[li] = merge(red[li], red[li + step], c, e);
    }
    workgroupBarrier();
    w = step;
  }
  let row_ml = red[0];
  let f = select(0.0, exp(mx - row_ml.x), mx > NEG_BIG) / row_ml.y;

  // Writes P: kend elements (0 above the diagonal).
  store4(off, li, kend, whole, x0 * f);
  store4(off, li + WG, kend, whole, x1 * f);
  store4(off, li + 2u * WG, kend, whole, x2 * f);
  store4(off, li + 3u * WG, kend, whole, x3 * f);
  store4(off, li + 4u * WG, kend, whole, x4 * f);
  store4(off, li + 5u * WG, kend, whole, x5 * f);
  store4(off, li + 6u * WG, kend, whole, x6 * f);
  store4(off, li + 7u * WG, kend, whole, x7 * f);
  store4(off, li + 8u * WG, kend, whole, x8 * f);
  store4(off, li + 9u * WG, kend, whole, x9 * f);
  store4(off, li + 10u * WG, kend, whole, x10 * f);
  store4(off, li + 11u * WG, kend, whole, x11 * f);
  store4(off, li + 12u * WG, kend, whole, x12 * f);
  store4(off, li + 13u * WG, kend, whole, x13 * f);
  store4(off, li + 14u * WG, kend, whole, x14 * f);
  store4(off, li + 15u * WG, kend, whole, x15 * f);
}
