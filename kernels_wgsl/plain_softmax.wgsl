// plain_softmax.wgsl: pass 2 of 3 of plain attention, P = softmax(S) row by row,
// read from and written to global memory.
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Algorithm 0, line 2: "read S
// from HBM, compute P = softmax(S), write P to HBM". Safe softmax: subtract the row
// max before exp, so no exp overflows.
//
// Tiling: one workgroup of WG invocations (256) per query row. Each invocation keeps
// its strided share of the row in registers (at most PER_LANE = 64 elements), so each
// element of S is read once and each element of P written once; rows of up to
// WG * PER_LANE = 16,384 keys. The row's length is the visited block of the scores
// pass: kend = N for full attention, and for causal kend = min(N, ceil(b / B_c) * B_c)
// where b is one past the last row of the row's query tile (B_r, B_c: lesson tiling,
// given as overrides, same as plain_scores.wgsl).
//
// Global memory traffic, float32 (4 bytes an element), per row:
//   reads  S: kend * 4 bytes
//   writes P: kend * 4 bytes (entries above the diagonal written as 0)
// so per head the same elements as the scores pass wrote: N x N for full attention.
//
// Masking is by position (key j > row i under causal), never by the stored value; the
// row max is taken over visible keys only, and key 0 is always visible, so the sum is
// at least 1 (no 0 / 0).
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

override BR: u32 = 32u;   // B_r of the scores pass
override BC: u32 = 16u;   // B_c of the scores pass
override WG: u32 = 256u;  // invocations per row

const PER_LANE: u32 = 64u;
const NEG_BIG: f32 = -3.0e38;

struct Params {
  n: u32,
  causal: u32,
  head_base: u32,  // unused here: S and P hold the heads of one dispatch (wg.y)
  x_base: u32,     // first row of this dispatch
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(5) var<storage, read> s: array<f32>;        // (H_batch, N, N)
@group(0) @binding(6) var<storage, read_write> p: array<f32>;  // (H_batch, N, N)
// @instrument: @group(0) @binding(7) var<storage, read_write> counters: array<atomic<u32>, 28>;

// Counter slots (elements): 0 Q read, 1 Q write, 2 K read, 3 K write, 4 V read,
// 5 V write, 6 S read, 7 S write, 8 P read, 9 P write, 10 O read, 11 O write,
// 12 dO read, 13 dO write, 14 L read, 15 L write, 16 D read, 17 D write,
// 18 dP read, 19 dP write, 20 dS read, 21 dS write, 22 dQ read, 23 dQ write,
// 24 dK read, 25 dK write, 26 dV read, 27 dV write.
fn tally(slot: u32, elems: u32) {
  // @instrument: atomicAdd(&counters[slot], elems);
}

fn load_s(i: u32) -> f32 { tally(6u, 1u); return s[i]; }
fn store_p(i: u32, x: f32) { tally(9u, 1u); p[i] = x; }

var<workgroup> red: array<f32, WG>;

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

  var x: array<f32, PER_LANE>;
  var mx = NEG_BIG;
  for (var t = 0u; t < PER_LANE; t++) {
    let j = li + t * WG;
    if (j < kend) {
      x[t] = load_s(off + j);
      if (j <= last) { mx = max(mx, x[t]); }
    }
  }
  red[li] = mx;
  workgroupBarrier();
  for (var w = WG / 2u; w > 0u; w /= 2u) {
    if (li < w) { red[li] = max(red[li], red[li + w]); }
    workgroupBarrier();
  }
  let row_max = red[0];
  workgroupBarrier();

  var total = 0.0;
  for (var t = 0u; t < PER_LANE; t++) {
    let j = li + t * WG;
    var e = 0.0;
    if (j <= last && j < kend) { e = exp(x[t] - row_max); }
    x[t] = e;
    total += e;
  }
  red[li] = total;
  workgroupBarrier();
  for (var w = WG / 2u; w > 0u; w /= 2u) {
    if (li < w) { red[li] += red[li + w]; }
    workgroupBarrier();
  }
  let inv = 1.0 / red[0];

  for (var t = 0u; t < PER_LANE; t++) {
    let j = li + t * WG;
    if (j < kend) { store_p(off + j, x[t] * inv); }
  }
}
