// plain_softmax.wgsl: pass 2 of 3 of plain attention, P = softmax(S) row by row, read
// from and written to global memory.
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Algorithm 0, line 2: "read S from
// HBM, compute P = softmax(S), write P to HBM". Safe softmax: subtract the row max before
// exp, so no exp overflows.
//
// Tiling: one workgroup of WG = 256 invocations per query row. Invocation li holds the
// row's elements li + (4 t + c) WG, t < 8, c < 4, as component c of the named vec4
// register x{t}: 32 elements, so rows of up to 256 * 32 = 8,192 keys (manifest
// "softmax_max_row"; past N = 5,792 one head's S no longer fits WebGPU's default 128 MiB
// storage binding anyway). Each element of S is read once and each element of P written
// once, neighbouring invocations touch neighbouring elements (coalesced), and the loads
// of a group of four are issued together. Each invocation first takes its own max m_i and
// sum l_i = sum exp(x - m_i), keeping exp(x - m_i); the pairs are merged over the
// workgroup in one reduction (two barriers) with the online-softmax rule
// m = max(m_a, m_b), l = l_a exp(m_a - m) + l_b exp(m_b - m); then
// P = exp(x - m_i) * exp(m_i - m) / l, one exp per element. Fewer registers than holding
// 64 elements lets more rows run at once on a multiprocessor. The row's
// length is the visited block of the scores pass: kend = N for full attention, and for
// causal kend = min(N, ceil(b / B_c) * B_c) where b is one past the last row of the row's
// query tile (B_r, B_c: lesson tiling, given as overrides, as in plain_scores.wgsl).
//
// Global memory traffic, float32 (4 bytes an element), per row:
//   reads  S: kend * 4 bytes
//   writes P: kend * 4 bytes (entries above the diagonal written as 0)
// so per head the same elements as the scores pass wrote: N x N for full attention. This
// pass does almost no arithmetic per byte: it shows what the card's bandwidth allows.
//
// Masking is by position (key j > row i under causal), never by the stored value; the row
// max is taken over visible keys only, and key 0 is always visible, so the sum is at least
// 1 (no 0 / 0).
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

override BR: u32 = 32u;   // B_r of the scores pass
override BC: u32 = 16u;   // B_c of the scores pass
override WG: u32 = 256u;  // invocations per row (256: the register layout below assumes it)

const GROUPS: u32 = 16u;  // invocations that combine the first step of the reduction

// #include "parts/header.wgsl"
// #include "parts/walk.wgsl"

// S and P hold the heads of one dispatch (wg.y); head_base is not used here.
@group(0) @binding(5) var<storage, read> s: array<f32>;        // (H_batch, N, N)
@group(0) @binding(6) var<storage, read_write> p: array<f32>;  // (H_batch, N, N)

fn load_s(i: u32) -> f32 { tally(6u, 1u); return s[i]; }
fn store_p(i: u32, x: f32) { tally(9u, 1u); p[i] = x; }

var<workgroup> red: array<vec2<f32>, WG>;       // (m, l) of each invocation
var<workgroup> red2: array<vec2<f32>, GROUPS>;

// Element j of the row at off: S where j < kend, else NEG_BIG.
fn ld(off: u32, j: u32, kend: u32) -> f32 {
  var x = NEG_BIG;
  if (j < kend) { x = load_s(off + j); }
  return x;
}

// Elements 4 t WG + li + c WG (c < 4) of the row at off: four loads with no branch
// between them where the whole group lies inside the row, so they are all in flight at once.
fn load4(off: u32, t: u32, li: u32, kend: u32) -> vec4<f32> {
  var x = vec4<f32>(NEG_BIG);
  let j = 4u * t * WG + li;
  if (4u * (t + 1u) * WG <= kend) {
    x = vec4<f32>(load_s(off + j), load_s(off + j + WG), load_s(off + j + 2u * WG), load_s(off + j + 3u * WG));
  } else if (j < kend) {  // the row's last, partial group
    x = vec4<f32>(ld(off, j, kend), ld(off, j + WG, kend), ld(off, j + 2u * WG, kend), ld(off, j + 3u * WG, kend));
  }
  return x;
}

// exp(x - mx) where the key is visible (j <= last), else 0.
fn exp4(x: vec4<f32>, t: u32, li: u32, last: u32, mx: f32) -> vec4<f32> {
  let j = vec4<u32>(4u * t * WG + li) + vec4<u32>(0u, 1u, 2u, 3u) * WG;
  return select(vec4<f32>(0.0), exp(x - vec4<f32>(mx)), j <= vec4<u32>(last));
}

fn st(off: u32, j: u32, kend: u32, y: f32) {
  if (j < kend) { store_p(off + j, y); }
}

fn store4(off: u32, t: u32, li: u32, kend: u32, y: vec4<f32>) {
  let j = 4u * t * WG + li;
  if (4u * (t + 1u) * WG <= kend) {
    store_p(off + j, y.x);
    store_p(off + j + WG, y.y);
    store_p(off + j + 2u * WG, y.z);
    store_p(off + j + 3u * WG, y.w);
  } else if (j < kend) {
    st(off, j, kend, y.x);
    st(off, j + WG, kend, y.y);
    st(off, j + 2u * WG, kend, y.z);
    st(off, j + 3u * WG, kend, y.w);
  }
}

// The visible maximum of x (keys j <= last).
fn vmax4(x: vec4<f32>, t: u32, li: u32, last: u32) -> f32 {
  let j = vec4<u32>(4u * t * WG + li) + vec4<u32>(0u, 1u, 2u, 3u) * WG;
  let y = select(vec4<f32>(NEG_BIG), x, j <= vec4<u32>(last));
  return max(max(y.x, y.y), max(y.z, y.w));
}

// Merge two (m, l) pairs: the max, and the sums rescaled to it (FlashAttention §3.1).
fn merge(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
  let m = max(a.x, b.x);
  var l = 0.0;
  if (a.x > NEG_BIG) { l += a.y * exp(a.x - m); }
  if (b.x > NEG_BIG) { l += b.y * exp(b.x - m); }
  return vec2<f32>(m, l);
}

// The row's (max, sum) from every invocation's own: two barriers.
fn reduce(li: u32, x: vec2<f32>) -> vec2<f32> {
  red[li] = x;
  workgroupBarrier();
  if (li < GROUPS) {
    var acc = red[li * (WG / GROUPS)];
    for (var i = 1u; i < WG / GROUPS; i++) { acc = merge(acc, red[li * (WG / GROUPS) + i]); }
    red2[li] = acc;
  }
  workgroupBarrier();
  var out = red2[0];
  for (var i = 1u; i < GROUPS; i++) { out = merge(out, red2[i]); }
  return out;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let me = work(wg, 0u, 1u);
  let row = me.first;  // < N: one workgroup per row
  let off = me.table + row * me.n;

  let kend = key_end((row / BR) * BR, me.n, me.causal);  // the scores pass's block of this row
  var last = me.n - 1u;               // last visible key
  if (me.causal) { last = row; }

  // Reads S: kend elements, once each.
  var x0 = load4(off, 0u, li, kend);
  var x1 = load4(off, 1u, li, kend);
  var x2 = load4(off, 2u, li, kend);
  var x3 = load4(off, 3u, li, kend);
  var x4 = load4(off, 4u, li, kend);
  var x5 = load4(off, 5u, li, kend);
  var x6 = load4(off, 6u, li, kend);
  var x7 = load4(off, 7u, li, kend);

  // This invocation's max over its visible keys, then exp(x - m_i) in place and their sum.
  var mx = max(vmax4(x0, 0u, li, last), vmax4(x1, 1u, li, last));
  mx = max(mx, max(vmax4(x2, 2u, li, last), vmax4(x3, 3u, li, last)));
  mx = max(mx, max(vmax4(x4, 4u, li, last), vmax4(x5, 5u, li, last)));
  mx = max(mx, max(vmax4(x6, 6u, li, last), vmax4(x7, 7u, li, last)));
  x0 = exp4(x0, 0u, li, last, mx);
  x1 = exp4(x1, 1u, li, last, mx);
  x2 = exp4(x2, 2u, li, last, mx);
  x3 = exp4(x3, 3u, li, last, mx);
  x4 = exp4(x4, 4u, li, last, mx);
  x5 = exp4(x5, 5u, li, last, mx);
  x6 = exp4(x6, 6u, li, last, mx);
  x7 = exp4(x7, 7u, li, last, mx);
  let one = vec4<f32>(1.0);
  var total = dot(x0, one) + dot(x1, one) + dot(x2, one) + dot(x3, one);
  total += dot(x4, one) + dot(x5, one) + dot(x6, one) + dot(x7, one);
  // The row's max and sum; key 0 is visible, so the sum is at least 1.
  let row_ml = reduce(li, vec2<f32>(mx, total));
  let f = select(0.0, exp(mx - row_ml.x), mx > NEG_BIG) / row_ml.y;

  // Writes P: kend elements (0 above the diagonal).
  store4(off, 0u, li, kend, x0 * f);
  store4(off, 1u, li, kend, x1 * f);
  store4(off, 2u, li, kend, x2 * f);
  store4(off, 3u, li, kend, x3 * f);
  store4(off, 4u, li, kend, x4 * f);
  store4(off, 5u, li, kend, x5 * f);
  store4(off, 6u, li, kend, x6 * f);
  store4(off, 7u, li, kend, x7 * f);
}
