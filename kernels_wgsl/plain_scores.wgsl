// plain_scores.wgsl: pass 1 of 3 of plain attention, S = Q K^T / sqrt(d), written to
// global memory.
//
// The standard attention of FlashAttention (Dao et al. 2022, arXiv:2205.14135),
// Algorithm 0, line 1: "load Q, K by blocks, compute S = Q K^T, write S to HBM".
// The next passes are plain_softmax.wgsl (S -> P) and plain_pv.wgsl (P V -> O).
//
// Tiling (the lesson preset, manifest.json "lesson", same as fused.wgsl): B_r =
// (M/2) / (4 d) query rows per workgroup, one invocation per row; key tiles of
// B_c = B_r / 2 rows. Workgroup arrays: Q tile B_r*d + K tile B_c*d floats = 3M/4 bytes.
//   d = 16: B_r = 128, B_c = 64      d = 32: B_r = 64, B_c = 32
//   d = 64: B_r = 32,  B_c = 16      d = 128: B_r = 16, B_c = 8
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid
// rows whose visited key tiles cover keys [0, kend):
//   load Q tile       reads  Q: r * d * 4 bytes      (once per query tile)
//   per key tile      reads  K: keys_in_tile * d * 4 bytes
//                     writes S: r * keys_in_tile * 4 bytes
// so per head: Q read once, K read once per query tile, S written as r x kend blocks.
// Full attention: kend = N, so all N x N scores. Causal: kend = min(N, ceil(b / B_c) * B_c)
// with b one past the tile's last row; entries inside the block above the diagonal are
// written as NEG_BIG (a finite stand-in for -inf: WGSL has no infinities), and
// the softmax pass masks them by position, not by value. S is (H_batch, N, N) float32.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

override D: u32 = 64u;    // head dimension d
override BR: u32 = 32u;   // B_r: query rows per workgroup (= workgroup size)
override BC: u32 = 16u;   // B_c: key rows per tile

const NEG_BIG: f32 = -3.0e38;

struct Params {
  n: u32,          // N
  causal: u32,     // 1: key j is visible to query i only when j <= i
  head_base: u32,  // first head of this dispatch; S holds the heads of one dispatch
  x_base: u32,     // first query tile of this dispatch
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;        // (H, N, d)
@group(0) @binding(2) var<storage, read> k: array<f32>;        // (H, N, d)
@group(0) @binding(5) var<storage, read_write> s: array<f32>;  // (H_batch, N, N)
// @instrument: @group(0) @binding(7) var<storage, read_write> counters: array<atomic<u32>, 28>;

// Counter slots (elements): 0 Q read, 1 Q write, 2 K read, 3 K write, 4 V read,
// 5 V write, 6 S read, 7 S write, 8 P read, 9 P write, 10 O read, 11 O write,
// 12 dO read, 13 dO write, 14 L read, 15 L write, 16 D read, 17 D write,
// 18 dP read, 19 dP write, 20 dS read, 21 dS write, 22 dQ read, 23 dQ write,
// 24 dK read, 25 dK write, 26 dV read, 27 dV write.
fn tally(slot: u32, elems: u32) {
  // @instrument: atomicAdd(&counters[slot], elems);
}

fn load_q(i: u32) -> f32 { tally(0u, 1u); return q[i]; }
fn load_k(i: u32) -> f32 { tally(2u, 1u); return k[i]; }
fn store_s(i: u32, x: f32) { tally(7u, 1u); s[i] = x; }

var<workgroup> q_tile: array<f32, BR * D>;
var<workgroup> k_tile: array<f32, BC * D>;

@compute @workgroup_size(BR)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let n = params.n;
  let causal = params.causal != 0u;
  let base = (params.head_base + wg.y) * n * D;
  let s_base = wg.y * n * n;
  let row0 = (params.x_base + wg.x) * BR;
  let row = row0 + li;
  let row_ok = row < n;
  let scale = 1.0 / sqrt(f32(D));

  for (var e = li; e < BR * D; e += BR) {
    var x = 0.0;
    if (row0 + e / D < n) { x = load_q(base + row0 * D + e); }
    q_tile[e] = x;
  }

  let row_last = min(n, row0 + BR) - 1u;
  var kend = n;
  if (causal) { kend = min(n, (row_last / BC + 1u) * BC); }
  let tiles = (kend + BC - 1u) / BC;

  for (var t = 0u; t < tiles; t++) {
    let key0 = t * BC;
    workgroupBarrier();
    for (var e = li; e < BC * D; e += BR) {
      var x = 0.0;
      if (key0 + e / D < kend) { x = load_k(base + key0 * D + e); }
      k_tile[e] = x;
    }
    workgroupBarrier();

    if (row_ok) {
      let count = min(BC, kend - key0);
      for (var j = 0u; j < count; j++) {
        var x = NEG_BIG;
        if (!causal || key0 + j <= row) {
          var acc = 0.0;
          for (var c = 0u; c < D; c++) { acc += q_tile[li * D + c] * k_tile[j * D + c]; }
          x = acc * scale;
        }
        store_s(s_base + row * n + key0 + j, x);
      }
    }
  }
}
