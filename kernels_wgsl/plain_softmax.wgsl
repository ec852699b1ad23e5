// plain_softmax.wgsl: pass 2 of 3 of plain attention, P = softmax(S) row by row, read
// from and written to global memory.
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Algorithm 0, line 2: "read S from
// HBM, compute P = softmax(S), write P to HBM". Safe softmax: subtract the row max before
// exp, so no exp overflows.
//
// Tiling: one workgroup of WG = 256 invocations per query row. Invocation li holds the
// row's elements li + (4 t + c) WG, t < 16, c < 4, as component c of the named vec4
// register x{t}: 64 elements, so rows of up to 256 * 64 = 16,384 keys (manifest
// "softmax_max_row"), each element of S read once and each element of P written once, and
// neighbouring invocations touch neighbouring elements (coalesced). The row's max and sum
// are reduced over the workgroup through workgroup memory, two barriers each. The row's
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

const NEG_BIG: f32 = -3.0e38;
const GROUPS: u32 = 16u;  // WG / GROUPS invocations combine the first step of a reduction

// ---- shared header: byte-identical in every kernel file ----
struct Params {
  n: u32,          // N, rows of Q, K, V per head
  causal: u32,     // 1: key j is visible to query i only when j <= i
  head_base: u32,  // first head of this dispatch (Q, K, V, O); wg.y is added
  x_base: u32,     // first workgroup along x of this dispatch; wg.x is added
}

@group(0) @binding(0) var<uniform> params: Params;
// @instrument: @group(0) @binding(7) var<storage, read_write> counters: array<atomic<u32>, 12>;

// Counter slots (elements): 0 Q read, 1 Q write, 2 K read, 3 K write, 4 V read,
// 5 V write, 6 S read, 7 S write, 8 P read, 9 P write, 10 O read, 11 O write.
// Every global load and store goes through a load_* or store_* helper that calls tally.
fn tally(slot: u32, elems: u32) {
  // @instrument: atomicAdd(&counters[slot], elems);
}
// ---- end of shared header ----

// S and P hold the heads of one dispatch (wg.y); head_base is not used here.
@group(0) @binding(5) var<storage, read> s: array<f32>;        // (H_batch, N, N)
@group(0) @binding(6) var<storage, read_write> p: array<f32>;  // (H_batch, N, N)

fn load_s(i: u32) -> f32 { tally(6u, 1u); return s[i]; }
fn store_p(i: u32, x: f32) { tally(9u, 1u); p[i] = x; }

var<workgroup> red: array<f32, WG>;
var<workgroup> red2: array<f32, GROUPS>;

// Element j of the row at off: S where j < kend, else NEG_BIG.
fn ld(off: u32, j: u32, kend: u32) -> f32 {
  var x = NEG_BIG;
  if (j < kend) { x = load_s(off + j); }
  return x;
}

// Elements 4 t WG + li + c WG (c < 4) of the row at off.
fn load4(off: u32, t: u32, li: u32, kend: u32) -> vec4<f32> {
  var x = vec4<f32>(NEG_BIG);
  let j = 4u * t * WG + li;
  if (j < kend) {  // skips whole groups past the row's end
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
  if (j < kend) {
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

// Workgroup max (op 0) or sum (op 1) of one value per invocation: two barriers.
fn reduce(li: u32, x: f32, op: u32) -> f32 {
  red[li] = x;
  workgroupBarrier();
  if (li < GROUPS) {
    var acc = red[li * (WG / GROUPS)];
    for (var i = 1u; i < WG / GROUPS; i++) {
      let y = red[li * (WG / GROUPS) + i];
      acc = select(acc + y, max(acc, y), op == 0u);
    }
    red2[li] = acc;
  }
  workgroupBarrier();
  var out = red2[0];
  for (var i = 1u; i < GROUPS; i++) { out = select(out + red2[i], max(out, red2[i]), op == 0u); }
  return out;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let n = params.n;
  let causal = params.causal != 0u;
  let row = params.x_base + wg.x;  // < n: one workgroup per row
  let off = wg.y * n * n + row * n;

  let b = min(n, (row / BR + 1u) * BR);
  var kend = n;
  if (causal) { kend = min(n, ((b - 1u) / BC + 1u) * BC); }
  var last = n - 1u;               // last visible key
  if (causal) { last = row; }

  // Reads S: kend elements, once each.
  var x0 = load4(off, 0u, li, kend);
  var x1 = load4(off, 1u, li, kend);
  var x2 = load4(off, 2u, li, kend);
  var x3 = load4(off, 3u, li, kend);
  var x4 = load4(off, 4u, li, kend);
  var x5 = load4(off, 5u, li, kend);
  var x6 = load4(off, 6u, li, kend);
  var x7 = load4(off, 7u, li, kend);
  var x8 = load4(off, 8u, li, kend);
  var x9 = load4(off, 9u, li, kend);
  var x10 = load4(off, 10u, li, kend);
  var x11 = load4(off, 11u, li, kend);
  var x12 = load4(off, 12u, li, kend);
  var x13 = load4(off, 13u, li, kend);
  var x14 = load4(off, 14u, li, kend);
  var x15 = load4(off, 15u, li, kend);

  var mx = max(vmax4(x0, 0u, li, last), vmax4(x1, 1u, li, last));
  mx = max(mx, max(vmax4(x2, 2u, li, last), vmax4(x3, 3u, li, last)));
  mx = max(mx, max(vmax4(x4, 4u, li, last), vmax4(x5, 5u, li, last)));
  mx = max(mx, max(vmax4(x6, 6u, li, last), vmax4(x7, 7u, li, last)));
  mx = max(mx, max(vmax4(x8, 8u, li, last), vmax4(x9, 9u, li, last)));
  mx = max(mx, max(vmax4(x10, 10u, li, last), vmax4(x11, 11u, li, last)));
  mx = max(mx, max(vmax4(x12, 12u, li, last), vmax4(x13, 13u, li, last)));
  mx = max(mx, max(vmax4(x14, 14u, li, last), vmax4(x15, 15u, li, last)));
  let row_max = reduce(li, mx, 0u);
  workgroupBarrier();  // red2 is read by everyone before the sum overwrites it

  x0 = exp4(x0, 0u, li, last, row_max);
  x1 = exp4(x1, 1u, li, last, row_max);
  x2 = exp4(x2, 2u, li, last, row_max);
  x3 = exp4(x3, 3u, li, last, row_max);
  x4 = exp4(x4, 4u, li, last, row_max);
  x5 = exp4(x5, 5u, li, last, row_max);
  x6 = exp4(x6, 6u, li, last, row_max);
  x7 = exp4(x7, 7u, li, last, row_max);
  x8 = exp4(x8, 8u, li, last, row_max);
  x9 = exp4(x9, 9u, li, last, row_max);
  x10 = exp4(x10, 10u, li, last, row_max);
  x11 = exp4(x11, 11u, li, last, row_max);
  x12 = exp4(x12, 12u, li, last, row_max);
  x13 = exp4(x13, 13u, li, last, row_max);
  x14 = exp4(x14, 14u, li, last, row_max);
  x15 = exp4(x15, 15u, li, last, row_max);
  let one = vec4<f32>(1.0);
  var total = dot(x0, one) + dot(x1, one) + dot(x2, one) + dot(x3, one);
  total += dot(x4, one) + dot(x5, one) + dot(x6, one) + dot(x7, one);
  total += dot(x8, one) + dot(x9, one) + dot(x10, one) + dot(x11, one);
  total += dot(x12, one) + dot(x13, one) + dot(x14, one) + dot(x15, one);
  let inv = 1.0 / reduce(li, total, 1u);

  // Writes P: kend elements (0 above the diagonal).
  store4(off, 0u, li, kend, x0 * inv);
  store4(off, 1u, li, kend, x1 * inv);
  store4(off, 2u, li, kend, x2 * inv);
  store4(off, 3u, li, kend, x3 * inv);
  store4(off, 4u, li, kend, x4 * inv);
  store4(off, 5u, li, kend, x5 * inv);
  store4(off, 6u, li, kend, x6 * inv);
  store4(off, 7u, li, kend, x7 * inv);
  store4(off, 8u, li, kend, x8 * inv);
  store4(off, 9u, li, kend, x9 * inv);
  store4(off, 10u, li, kend, x10 * inv);
  store4(off, 11u, li, kend, x11 * inv);
  store4(off, 12u, li, kend, x12 * inv);
  store4(off, 13u, li, kend, x13 * inv);
  store4(off, 14u, li, kend, x14 * inv);
  store4(off, 15u, li, kend, x15 * inv);
}
