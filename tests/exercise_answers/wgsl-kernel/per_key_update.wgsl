// The fused forward pass, one query tile per workgroup (exercise 4, both steps: another correct shader, the
// online softmax updated one key at a time instead of once per key tile).
//
// One invocation per query row (workgroup size B_r). The query tile sits in workgroup
// memory for the whole run; key and value tiles of B_c rows stream past it. Each row
// keeps a running maximum m, a running sum l of exp(s - m) and an unnormalised O row,
// and rescales l and the O row by exp(m_old - m_new) whenever the maximum grows
// (FlashAttention, arXiv:2205.14135, Algorithm 1; FlashAttention-2, arXiv:2307.08691,
// section 3.1: divide by l once at the end).
//
// Traffic per query tile of r valid rows visiting keys [0, kend): Q r*d elements read,
// K and V kend*d each, O r*d written; the page compares the counters with
// emulator.traffic.count("fused", N, d, causal, M).
//
// No -inf: NEG_BIG is a finite "nothing seen yet", and keys a row may not see are
// skipped, never scored. Every invocation reaches every workgroupBarrier(): rows past N
// stay in the loops and only skip their store.

override D: u32 = 64u;        // head dimension d
override BR: u32 = 32u;       // B_r: query rows per workgroup (= workgroup size)
override BC: u32 = 16u;       // B_c: key rows per tile

// WGSL sizes function-scope arrays with constant expressions only, so the O row
// accumulator is declared at the largest head dimension the manifest lists; every loop
// runs to D.
const D_MAX: u32 = 128u;
const NEG_BIG: f32 = -3.0e38;

struct Params {
  n: u32,          // N, rows of Q, K, V per head
  causal: u32,     // 1: key j is visible to query i only when j <= i
  head_base: u32,  // first head of this dispatch (wg.y is added)
  x_base: u32,     // first query tile of this dispatch (wg.x is added)
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;        // (H, N, d)
@group(0) @binding(2) var<storage, read> k: array<f32>;        // (H, N, d)
@group(0) @binding(3) var<storage, read> v: array<f32>;        // (H, N, d)
@group(0) @binding(4) var<storage, read_write> o: array<f32>;  // (H, N, d)
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
fn load_v(i: u32) -> f32 { tally(4u, 1u); return v[i]; }
fn store_o(i: u32, x: f32) { tally(11u, 1u); o[i] = x; }

var<workgroup> q_tile: array<f32, BR * D>;
var<workgroup> k_tile: array<f32, BC * D>;
var<workgroup> v_tile: array<f32, BC * D>;

// Scaled score of local query row r against local key row j: dot(q, k) / sqrt(d).
fn score(r: u32, j: u32, scale: f32) -> f32 {
  var s = 0.0;
  for (var c = 0u; c < D; c++) {
    s += q_tile[r * D + c] * k_tile[j * D + c];
  }
  return s * scale;
}

@compute @workgroup_size(BR)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let n = params.n;
  let causal = params.causal != 0u;
  let base = (params.head_base + wg.y) * n * D;   // first element of this head
  let row0 = (params.x_base + wg.x) * BR;         // first query row of this tile (< n)
  let row = row0 + li;
  let row_ok = row < n;
  let scale = 1.0 / sqrt(f32(D));

  // Q tile: reads Q, r * d elements; rows past N are zero on the bench.
  for (var e = li; e < BR * D; e += BR) {
    var x = 0.0;
    if (row0 + e / D < n) { x = load_q(base + row0 * D + e); }
    q_tile[e] = x;
  }

  // Visited keys [0, kend): causal skips key tiles that start past the last row.
  let row_last = min(n, row0 + BR) - 1u;
  var kend = n;
  if (causal) { kend = min(n, (row_last / BC + 1u) * BC); }
  let tiles = (kend + BC - 1u) / BC;

  var acc: array<f32, D_MAX>;  // O row, unnormalised (zero-initialised)
  var m = NEG_BIG;             // running max of the scores seen
  var l = 0.0;                 // running sum of exp(s - m)

  for (var t = 0u; t < tiles; t++) {
    let key0 = t * BC;
    workgroupBarrier();  // everyone is done with the previous K and V tiles
    // K and V tiles: reads K and V, keys_in_tile * d elements each.
    for (var e = li; e < BC * D; e += BR) {
      var kx = 0.0;
      var vx = 0.0;
      if (key0 + e / D < kend) {
        kx = load_k(base + key0 * D + e);
        vx = load_v(base + key0 * D + e);
      }
      k_tile[e] = kx;
      v_tile[e] = vx;
    }
    workgroupBarrier();

    let count = min(BC, kend - key0);
    // Which keys this row may see in this tile: [0, visible).
    var visible = 0u;
    if (row_ok) {
      visible = count;
      if (causal) { visible = min(count, select(0u, row - key0 + 1u, row >= key0)); }
    }

    // One key at a time (Milakov & Gimelshein 2018, Algorithm 3): the running max moves
    // key by key, and l and the O row are rescaled at each key, not once per tile. While
    // nothing has been seen, m - m_new is about -3e38: exp gives 0, and l and acc are 0.
    for (var j = 0u; j < visible; j++) {
      let s = score(li, j, scale);
      let m_new = max(m, s);
      let alpha = exp(m - m_new);
      let p = exp(s - m_new);
      l = l * alpha + p;
      for (var c = 0u; c < D; c++) { acc[c] = acc[c] * alpha + p * v_tile[j * D + c]; }
      m = m_new;
    }
  }

  // O row: writes O, d elements. A row with no visible key (l = 0) gets 0.
  if (row_ok) {
    let inv = select(0.0, 1.0 / l, l > 0.0);
    for (var c = 0u; c < D; c++) { store_o(base + row * D + c, acc[c] * inv); }
  }
}
