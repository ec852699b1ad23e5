// plain_pv.wgsl: pass 3 of 3 of plain attention, O = P V, P read from global memory.
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Algorithm 0, line 3: "load P and
// V by blocks, compute O = P V, write O to HBM".
//
// Tiling (the lesson preset, same B_r and B_c as plain_scores.wgsl): one workgroup per
// query tile of B_r rows, one invocation per row; V tiles of B_c rows in workgroup
// memory (B_c * d floats = M/4 bytes); each invocation reads its own row of P.
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid
// rows whose visited key tiles cover keys [0, kend) (kend as in plain_scores.wgsl):
//   per key tile      reads  V: keys_in_tile * d * 4 bytes
//                     reads  P: r * keys_in_tile * 4 bytes
//   at the end        writes O: r * d * 4 bytes
// so per head: P read once (the elements the softmax pass wrote), V read once per
// query tile, O written once.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

override D: u32 = 64u;    // head dimension d
override BR: u32 = 32u;   // B_r
override BC: u32 = 16u;   // B_c

// Function-scope arrays need constant sizes in WGSL: the O row is declared at the
// largest head dimension the manifest lists, and loops run to D.
const D_MAX: u32 = 128u;

struct Params {
  n: u32,
  causal: u32,
  head_base: u32,
  x_base: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(3) var<storage, read> v: array<f32>;        // (H, N, d)
@group(0) @binding(4) var<storage, read_write> o: array<f32>;  // (H, N, d)
@group(0) @binding(6) var<storage, read> p: array<f32>;        // (H_batch, N, N)
// @instrument: @group(0) @binding(7) var<storage, read_write> counters: array<atomic<u32>, 28>;

// Counter slots (elements): 0 Q read, 1 Q write, 2 K read, 3 K write, 4 V read,
// 5 V write, 6 S read, 7 S write, 8 P read, 9 P write, 10 O read, 11 O write,
// 12 dO read, 13 dO write, 14 L read, 15 L write, 16 D read, 17 D write,
// 18 dP read, 19 dP write, 20 dS read, 21 dS write, 22 dQ read, 23 dQ write,
// 24 dK read, 25 dK write, 26 dV read, 27 dV write.
fn tally(slot: u32, elems: u32) {
  // @instrument: atomicAdd(&counters[slot], elems);
}

fn load_v(i: u32) -> f32 { tally(4u, 1u); return v[i]; }
fn load_p(i: u32) -> f32 { tally(8u, 1u); return p[i]; }
fn store_o(i: u32, x: f32) { tally(11u, 1u); o[i] = x; }

var<workgroup> v_tile: array<f32, BC * D>;

@compute @workgroup_size(BR)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let n = params.n;
  let causal = params.causal != 0u;
  let base = (params.head_base + wg.y) * n * D;
  let p_base = wg.y * n * n;
  let row0 = (params.x_base + wg.x) * BR;
  let row = row0 + li;
  let row_ok = row < n;

  let row_last = min(n, row0 + BR) - 1u;
  var kend = n;
  if (causal) { kend = min(n, (row_last / BC + 1u) * BC); }
  let tiles = (kend + BC - 1u) / BC;

  var acc: array<f32, D_MAX>;
  for (var t = 0u; t < tiles; t++) {
    let key0 = t * BC;
    workgroupBarrier();
    for (var e = li; e < BC * D; e += BR) {
      var x = 0.0;
      if (key0 + e / D < kend) { x = load_v(base + key0 * D + e); }
      v_tile[e] = x;
    }
    workgroupBarrier();

    if (row_ok) {
      let count = min(BC, kend - key0);
      for (var j = 0u; j < count; j++) {
        let pj = load_p(p_base + row * n + key0 + j);
        for (var c = 0u; c < D; c++) { acc[c] += pj * v_tile[j * D + c]; }
      }
    }
  }

  if (row_ok) {
    for (var c = 0u; c < D; c++) { store_o(base + row * D + c, acc[c]); }
  }
}
