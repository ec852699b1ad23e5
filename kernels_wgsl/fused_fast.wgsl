// fused_fast.wgsl: the fused attention kernel tuned for timing, same arithmetic as
// fused.wgsl (online softmax, one pass over K and V per query tile).
//
// Follows FlashAttention-2 (arXiv:2307.08691), section 3.1 (Algorithm 1): the
// outer loop is over query tiles (one workgroup each), the inner loop over key tiles;
// l is kept unnormalised and O is divided by l once at the end. Section 3.3's
// split of work inside a block is done here by an invocation grid of TY x TX.
//
// Tiling: explicit per head dimension (manifest.json: "fused-fast-16k" at d = 128 on a device
// without subgroups of 8, B_r = 16, B_c = 8, TX = 8, TY = 16 by default). Each of the
// TY x TX invocations owns RM = B_r / TY query rows; for S = Q K^T it owns CN = B_c / TX
// key columns of those rows (columns tx, tx + TX, ...), and for O it owns DN = d / TX
// columns of d. Two register micro-tiles per invocation, RM x CN scores and RM x DN
// outputs, so each value read from workgroup memory feeds several multiply-adds.
// Workgroup arrays (floats): Q tile transposed d*B_r, one K-or-V tile B_c*d (V is
// loaded over K once the scores are done), P tile transposed B_c*B_r (also used for
// the row-max and row-sum exchange). Total 4*(d*B_r + B_c*d + B_c*B_r) bytes.
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid
// rows whose visited key tiles cover keys [0, kend) -- the same schedule as fused.wgsl:
//   load Q tile          reads  Q: r * d * 4 bytes        (vec4 loads, once)
//   per key tile         reads  K: keys_in_tile * d * 4 bytes (vec4 loads)
//                        reads  V: keys_in_tile * d * 4 bytes (vec4 loads)
//   at the end           writes O: r * d * 4 bytes
// kend = N for full attention; causal: min(N, ceil(b / B_c) * B_c), b one past the
// tile's last row. The emulator counts this kernel from the manifest's tiling.
//
// Masking as in fused.wgsl: no -inf (NEG_BIG is finite), masked keys never enter m or
// l, no early return before a barrier. Private arrays are sized by constants (WGSL
// rule) at the largest micro-tile the shader allows (the manifest's one use needs
// RM = 1, CN = 1, DN = 16); after the overrides are fixed
// every loop bound is a constant, so drivers can unroll them into registers.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

override D: u32 = 64u;    // head dimension d
override BR: u32 = 64u;   // B_r: query rows per workgroup
override BC: u32 = 64u;   // B_c: key rows per tile
override TX: u32 = 16u;   // invocations across columns
override TY: u32 = 16u;   // invocations across rows
override RM: u32 = BR / TY;
override CN: u32 = BC / TX;
override DN: u32 = D / TX;

const S_MAX: u32 = 32u;   // RM * CN at most
const O_MAX: u32 = 32u;   // RM * DN at most
const R_MAX: u32 = 8u;    // RM at most
const NEG_BIG: f32 = -3.0e38;

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

@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;  // (H, N, d)
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;  // (H, N, d)
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;  // (H, N, d)
@group(0) @binding(4) var<storage, read_write> o: array<f32>;  // (H, N, d)


fn load_q(i: u32) -> vec4<f32> { tally(0u, 4u); return q[i]; }
fn load_k(i: u32) -> vec4<f32> { tally(2u, 4u); return k[i]; }
fn load_v(i: u32) -> vec4<f32> { tally(4u, 4u); return v[i]; }
fn store_o(i: u32, x: f32) { tally(11u, 1u); o[i] = x; }

var<workgroup> qt: array<f32, D * BR>;   // Q tile, transposed: qt[c * BR + row]
var<workgroup> kv: array<f32, BC * D>;   // K tile transposed kv[c * BC + key], then V tile kv[key * D + c]
var<workgroup> pt: array<f32, BC * BR>;  // P tile, transposed: pt[key * BR + row]; also row exchange

@compute @workgroup_size(TX, TY)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let n = params.n;
  let causal = params.causal != 0u;
  let base4 = (params.head_base + wg.y) * n * (D / 4u);  // in vec4s
  let base = (params.head_base + wg.y) * n * D;
  let row0 = (params.x_base + wg.x) * BR;
  let tx = lid.x;
  let ty = lid.y;
  let wgsize = TX * TY;
  let d4 = D / 4u;
  let scale = 1.0 / sqrt(f32(D));

  // Q tile, transposed on the bench. Reads Q: r * d elements.
  for (var e = li; e < BR * d4; e += wgsize) {
    let r = e / d4;
    let c = (e % d4) * 4u;
    var x = vec4<f32>(0.0);
    if (row0 + r < n) { x = load_q(base4 + (row0 + r) * d4 + e % d4); }
    qt[c * BR + r] = x.x;
    qt[(c + 1u) * BR + r] = x.y;
    qt[(c + 2u) * BR + r] = x.z;
    qt[(c + 3u) * BR + r] = x.w;
  }

  let row_last = min(n, row0 + BR) - 1u;
  var kend = n;
  if (causal) { kend = min(n, (row_last / BC + 1u) * BC); }
  let tiles = (kend + BC - 1u) / BC;

  var m: array<f32, R_MAX>;
  var l: array<f32, R_MAX>;       // this invocation's share of the row sum
  var acc: array<f32, O_MAX>;     // acc[i * DN + j]: row ty*RM+i, column j*TX+tx
  for (var i = 0u; i < RM; i++) { m[i] = NEG_BIG; }

  for (var t = 0u; t < tiles; t++) {
    let key0 = t * BC;
    workgroupBarrier();
    // K tile, transposed. Reads K: keys_in_tile * d elements.
    for (var e = li; e < BC * d4; e += wgsize) {
      let j = e / d4;
      let c = (e % d4) * 4u;
      var x = vec4<f32>(0.0);
      if (key0 + j < kend) { x = load_k(base4 + (key0 + j) * d4 + e % d4); }
      kv[c * BC + j] = x.x;
      kv[(c + 1u) * BC + j] = x.y;
      kv[(c + 2u) * BC + j] = x.z;
      kv[(c + 3u) * BC + j] = x.w;
    }
    workgroupBarrier();

    // S micro-tile: rows ty*RM + i, keys key0 + j*TX + tx.
    // Zeroed here on every tile: some compilers hoist a loop-body `var` to the
    // function's start and zero it only once.
    var s: array<f32, S_MAX>;
    for (var i = 0u; i < RM * CN; i++) { s[i] = 0.0; }
    for (var c = 0u; c < D; c++) {
      var a: array<f32, R_MAX>;
      for (var i = 0u; i < RM; i++) { a[i] = qt[c * BR + ty * RM + i]; }
      for (var j = 0u; j < CN; j++) {
        let b = kv[c * BC + j * TX + tx];
        for (var i = 0u; i < RM; i++) { s[i * CN + j] = fma(a[i], b, s[i * CN + j]); }
      }
    }
    // Mask and this invocation's max per row.
    for (var i = 0u; i < RM; i++) {
      let row = row0 + ty * RM + i;
      var mx = NEG_BIG;
      for (var j = 0u; j < CN; j++) {
        let key = key0 + j * TX + tx;
        let ok = row < n && key < kend && (!causal || key <= row);
        let x = s[i * CN + j] * scale;
        s[i * CN + j] = select(NEG_BIG, x, ok);
        if (ok) { mx = max(mx, x); }
      }
      pt[(ty * RM + i) * TX + tx] = mx;
    }
    workgroupBarrier();
    // Row max over the TX invocations of the row; rescale; P = exp(S - m_new).
    var m_new: array<f32, R_MAX>;
    for (var i = 0u; i < RM; i++) {
      var mx = m[i];
      for (var x = 0u; x < TX; x++) { mx = max(mx, pt[(ty * RM + i) * TX + x]); }
      m_new[i] = mx;
    }
    workgroupBarrier();  // everyone has read the maxima and is done with the K tile
    // V tile over the K tile. Reads V: keys_in_tile * d elements.
    for (var e = li; e < BC * d4; e += wgsize) {
      let j = e / d4;
      var x = vec4<f32>(0.0);
      if (key0 + j < kend) { x = load_v(base4 + (key0 + j) * d4 + e % d4); }
      let c = (e % d4) * 4u;
      kv[j * D + c] = x.x;
      kv[j * D + c + 1u] = x.y;
      kv[j * D + c + 2u] = x.z;
      kv[j * D + c + 3u] = x.w;
    }
    for (var i = 0u; i < RM; i++) {
      let alpha = select(0.0, exp(m[i] - m_new[i]), m[i] > NEG_BIG);
      l[i] *= alpha;
      for (var j = 0u; j < DN; j++) { acc[i * DN + j] *= alpha; }
      for (var j = 0u; j < CN; j++) {
        let x = s[i * CN + j];
        let p = select(0.0, exp(x - m_new[i]), x > NEG_BIG);
        l[i] += p;
        pt[(j * TX + tx) * BR + ty * RM + i] = p;
      }
      m[i] = m_new[i];
    }
    workgroupBarrier();
    // O micro-tile += P V: rows ty*RM + i, columns j*TX + tx.
    for (var key = 0u; key < BC; key++) {
      var a: array<f32, R_MAX>;
      for (var i = 0u; i < RM; i++) { a[i] = pt[key * BR + ty * RM + i]; }
      for (var j = 0u; j < DN; j++) {
        let b = kv[key * D + j * TX + tx];
        for (var i = 0u; i < RM; i++) { acc[i * DN + j] = fma(a[i], b, acc[i * DN + j]); }
      }
    }
  }

  // Row sums: add up the TX shares. Writes O: r * d elements.
  workgroupBarrier();
  for (var i = 0u; i < RM; i++) { pt[(ty * RM + i) * TX + tx] = l[i]; }
  workgroupBarrier();
  for (var i = 0u; i < RM; i++) {
    let row = row0 + ty * RM + i;
    var total = 0.0;
    for (var x = 0u; x < TX; x++) { total += pt[(ty * RM + i) * TX + x]; }
    let inv = select(0.0, 1.0 / total, total > 0.0);
    if (row < n) {
      for (var j = 0u; j < DN; j++) { store_o(base + row * D + j * TX + tx, acc[i * DN + j] * inv); }
    }
  }
}
