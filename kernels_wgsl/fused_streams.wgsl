// fused_streams.wgsl: fused attention for timing at d = 16 and d = 64 (manifest kernels
// "fused-fast" and "fused-fast-16k" at those d), with key tiles of any length.
//
// Follows FlashAttention-2 (arXiv:2307.08691), section 3.1 (Algorithm 1): one workgroup
// per query tile, an inner loop over key tiles, online softmax with the running max m and
// the unnormalised sum l per row, O divided by l once at the end. Inside the workgroup
// the keys of each tile are dealt out to TX invocations ("streams") that share the same
// query rows; each stream keeps its own m, l and O micro-tile for its keys, and the TX
// partial results are merged once, after the last key tile, with the rescale rule of
// section 3.1 (the merge of Flash-Decoding): w = exp(m_stream - m_row), l = sum w l_stream,
// O = sum w O_stream / l. So no row maximum or row sum crosses invocations per key tile.
//
// Tiling (per d in manifest.json): TY x TX invocations. Invocation (tx, ty) owns RPI =
// 64 / d query rows (4 at d = 16, 1 at d = 64) and all d columns of them, so its Q and O
// micro-tiles are 16 vec4 registers each (named, no arrays), and in each key tile the keys
// (4g + j) * TX + tx, g < B_c / (4 TX), j < 4. TY = B_r / RPI. K and V tiles are
// double-buffered in workgroup memory, and the next tile's K and V are loaded into
// registers while this tile is computed: one barrier per key tile.
//   fused-fast-16k: d = 16: B_r = 64, B_c = 64, TX = 8    d = 64: B_r = 64, B_c = 16, TX = 4
//   fused-fast:     d = 16: B_r = 64, B_c = 64, TX = 16   d = 64: B_r = 32, B_c = 16, TX = 4
// At d = 64, a device with subgroups runs fused_lanes.wgsl instead, with the same tiles.
// Workgroup array (floats): 2 buffers x (K tile + V tile) = 4 * B_c * d, so 16 * B_c * d
// bytes (16,384 at d = 16, B_c = 64). The Q tile and the final merge reuse it, which needs
// B_r <= 4 B_c, TX >= 4, TX * TY <= B_c * d / 4 <= 2 TX * TY and B_c a multiple of 4 TX.
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid rows
// whose visited key tiles cover keys [0, kend) -- the schedule of fused.wgsl:
//   load Q tile          reads  Q: r * d * 4 bytes            (vec4 loads, once)
//   per key tile         reads  K: keys_in_tile * d * 4 bytes (vec4 loads, once each)
//                        reads  V: keys_in_tile * d * 4 bytes (vec4 loads, once each)
//   at the end           writes O: r * d * 4 bytes            (vec4 stores)
// kend = N for full attention; causal: min(N, ceil(b / B_c) * B_c), b one past the
// tile's last row.
//
// Masking as in fused.wgsl: no -inf (NEG_BIG is finite), masked keys never enter m or
// l (a stream that saw no visible key has w = 0), no early return before a barrier.
// Scores are kept in base 2: Q is scaled by log2(e) / sqrt(d) once, then exp2.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

override D: u32 = 16u;    // head dimension d: 16 or 64 (not 32 or 128)
override BR: u32 = 64u;   // B_r, a multiple of RPI
override BC: u32 = 64u;   // B_c, a multiple of 4 * TX
override RPI: u32 = 64u / D;  // query rows per invocation: 4 at d = 16, 1 at d = 64
override TX: u32 = BC / 4u;
override TY: u32 = BR / RPI;
override THREADS: u32 = TX * TY;
override KG: u32 = BC / (4u * TX);    // key groups of 4 per invocation per tile
override TILE4: u32 = BC * D / 4u;    // vec4s in one K (or V) tile
override LPT: u32 = (TILE4 + THREADS - 1u) / THREADS;  // vec4s of K (and V) each invocation loads: 1 or 2

const NEG_BIG: f32 = -3.0e38;
const LOG2E: f32 = 1.4426950408889634;

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

@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;        // (H, N, d)
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;        // (H, N, d)
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;        // (H, N, d)
@group(0) @binding(4) var<storage, read_write> o: array<vec4<f32>>;  // (H, N, d)


fn load_q(i: u32) -> vec4<f32> { tally(0u, 4u); return q[i]; }
fn load_k(i: u32) -> vec4<f32> { tally(2u, 4u); return k[i]; }
fn load_v(i: u32) -> vec4<f32> { tally(4u, 4u); return v[i]; }
fn store_o(i: u32, x: vec4<f32>) { tally(11u, 4u); o[i] = x; }

// Buffer b: K tile at kv[2b * TILE4 + c * BC + key], V tile at kv[(2b + 1) * TILE4 + c * BC + key]
// (c: column group of 4, key: 0 .. B_c - 1). Also the Q tile, then the merge scratch.
var<workgroup> kv: array<vec4<f32>, 4u * TILE4>;

fn dots(a: vec4<f32>, k0: vec4<f32>, k1: vec4<f32>, k2: vec4<f32>, k3: vec4<f32>) -> vec4<f32> {
  return vec4<f32>(dot(a, k0), dot(a, k1), dot(a, k2), dot(a, k3));
}

// The four keys a, a + TX, a + 2 TX, a + 3 TX of one column group (a vec4 of K or V each)
// as the columns of a matrix: q * m gives the four dot products, m * p the weighted sum.
fn keys4(a: u32) -> mat4x4<f32> { return mat4x4<f32>(kv[a], kv[a + TX], kv[a + 2u * TX], kv[a + 3u * TX]); }

fn max4(x: vec4<f32>) -> f32 { return max(max(x.x, x.y), max(x.z, x.w)); }

// Mask one row of the S micro-tile: keys past kend, past the row (causal), rows past N.
fn mask_row(s: vec4<f32>, row: u32, keys: vec4<u32>, kend: u32, n: u32, causal: bool) -> vec4<f32> {
  var ok = keys < vec4<u32>(kend);
  if (causal) { ok = ok & (keys <= vec4<u32>(row)); }
  ok = ok & vec4<bool>(row < n);
  return select(vec4<f32>(NEG_BIG), s, ok);
}

fn p_row(s: vec4<f32>, m: f32) -> vec4<f32> {
  return select(vec4<f32>(0.0), exp2(s - vec4<f32>(m)), s > vec4<f32>(NEG_BIG));
}

// One element (vec4 e of the tile) of K or V of the key tile at key0; zero past kend.
fn tile_key(e: u32) -> u32 { return e / (D / 4u); }
fn fetch_k(e: u32, key0: u32, kend: u32, base4: u32) -> vec4<f32> {
  var x = vec4<f32>(0.0);
  if (e < TILE4 && key0 + tile_key(e) < kend) { x = load_k(base4 + (key0 + tile_key(e)) * (D / 4u) + e % (D / 4u)); }
  return x;
}
fn fetch_v(e: u32, key0: u32, kend: u32, base4: u32) -> vec4<f32> {
  var x = vec4<f32>(0.0);
  if (e < TILE4 && key0 + tile_key(e) < kend) { x = load_v(base4 + (key0 + tile_key(e)) * (D / 4u) + e % (D / 4u)); }
  return x;
}
fn put_tile(b: u32, e: u32, xk: vec4<f32>, xv: vec4<f32>) {
  if (e < TILE4) {
    let at = (e % (D / 4u)) * BC + tile_key(e);
    kv[2u * b * TILE4 + at] = xk;
    kv[(2u * b + 1u) * TILE4 + at] = xv;
  }
}

// Merge round: four vec4s of each invocation's O micro-tile, row i and column groups
// col0 .. col0 + 3 (already scaled by w / l), are summed over the TX streams by TY * 4
// invocations, one vec4 of O each. Writes O: valid rows only.
fn merge_row(i: u32, col0: u32, li: u32, ty: u32, tx: u32, row0: u32, n: u32, base4: u32,
             a: vec4<f32>, b: vec4<f32>, c: vec4<f32>, e: vec4<f32>) {
  kv[(ty * 4u + 0u) * TX + tx] = a;
  kv[(ty * 4u + 1u) * TX + tx] = b;
  kv[(ty * 4u + 2u) * TX + tx] = c;
  kv[(ty * 4u + 3u) * TX + tx] = e;
  workgroupBarrier();
  if (li < TY * 4u) {
    var total = vec4<f32>(0.0);
    for (var x = 0u; x < TX; x++) { total += kv[li * TX + x]; }
    let row = row0 + RPI * (li / 4u) + i;
    if (row < n) { store_o(base4 + row * (D / 4u) + col0 + li % 4u, total); }
  }
  workgroupBarrier();
}

// d = 16: each invocation owns 4 query rows x 16 columns; after the Q tile is in kv.
fn rows4(li: u32, tx: u32, ty: u32, n: u32, causal: bool, base4: u32, row0: u32, kend: u32, tiles: u32) {
  let qs = LOG2E / sqrt(f32(D));
  let qb = 16u * ty;  // 4 rows x 4 column groups
  let q00 = kv[qb + 0u] * qs;
  let q01 = kv[qb + 1u] * qs;
  let q02 = kv[qb + 2u] * qs;
  let q03 = kv[qb + 3u] * qs;
  let q10 = kv[qb + 4u] * qs;
  let q11 = kv[qb + 5u] * qs;
  let q12 = kv[qb + 6u] * qs;
  let q13 = kv[qb + 7u] * qs;
  let q20 = kv[qb + 8u] * qs;
  let q21 = kv[qb + 9u] * qs;
  let q22 = kv[qb + 10u] * qs;
  let q23 = kv[qb + 11u] * qs;
  let q30 = kv[qb + 12u] * qs;
  let q31 = kv[qb + 13u] * qs;
  let q32 = kv[qb + 14u] * qs;
  let q33 = kv[qb + 15u] * qs;
  workgroupBarrier();  // Q read; kv now holds K and V tiles

  // Key tile 0 into buffer 0.
  put_tile(0u, li, fetch_k(li, 0u, kend, base4), fetch_v(li, 0u, kend, base4));
  if (LPT > 1u) { put_tile(0u, li + THREADS, fetch_k(li + THREADS, 0u, kend, base4), fetch_v(li + THREADS, 0u, kend, base4)); }
  workgroupBarrier();

  var m = vec4<f32>(NEG_BIG);  // this stream's running max of rows 4ty..4ty+3 (base 2)
  var l = vec4<f32>(0.0);      // this stream's running sums
  // O micro-tile: o{i}{c} = row 4ty+i, columns 4c..4c+3.
  var o00 = vec4<f32>(0.0);
  var o01 = vec4<f32>(0.0);
  var o02 = vec4<f32>(0.0);
  var o03 = vec4<f32>(0.0);
  var o10 = vec4<f32>(0.0);
  var o11 = vec4<f32>(0.0);
  var o12 = vec4<f32>(0.0);
  var o13 = vec4<f32>(0.0);
  var o20 = vec4<f32>(0.0);
  var o21 = vec4<f32>(0.0);
  var o22 = vec4<f32>(0.0);
  var o23 = vec4<f32>(0.0);
  var o30 = vec4<f32>(0.0);
  var o31 = vec4<f32>(0.0);
  var o32 = vec4<f32>(0.0);
  var o33 = vec4<f32>(0.0);
  let r0 = row0 + 4u * ty;

  for (var t = 0u; t < tiles; t++) {
    let key0 = t * BC;
    let kb = 2u * (t % 2u) * TILE4;  // this tile's K; its V at kb + TILE4
    // Next tile's K and V into registers now; stored after the arithmetic below.
    let key1 = key0 + BC;
    var nk0 = vec4<f32>(0.0);
    var nv0 = vec4<f32>(0.0);
    var nk1 = vec4<f32>(0.0);
    var nv1 = vec4<f32>(0.0);
    if (t + 1u < tiles) {
      nk0 = fetch_k(li, key1, kend, base4);
      nv0 = fetch_v(li, key1, kend, base4);
      if (LPT > 1u) {
        nk1 = fetch_k(li + THREADS, key1, kend, base4);
        nv1 = fetch_v(li + THREADS, key1, kend, base4);
      }
    }

    for (var g = 0u; g < KG; g++) {
      let kl = 4u * g * TX + tx;  // local keys kl, kl + TX, kl + 2 TX, kl + 3 TX
      let keys = vec4<u32>(key0 + kl) + vec4<u32>(0u, 1u, 2u, 3u) * TX;
      // S micro-tile (4 rows x 4 keys), column group by column group.
      var a = kb + kl;
      var k0 = kv[a];
      var k1 = kv[a + TX];
      var k2 = kv[a + 2u * TX];
      var k3 = kv[a + 3u * TX];
      var s0 = dots(q00, k0, k1, k2, k3);
      var s1 = dots(q10, k0, k1, k2, k3);
      var s2 = dots(q20, k0, k1, k2, k3);
      var s3 = dots(q30, k0, k1, k2, k3);
      a += BC;
      k0 = kv[a];
      k1 = kv[a + TX];
      k2 = kv[a + 2u * TX];
      k3 = kv[a + 3u * TX];
      s0 += dots(q01, k0, k1, k2, k3);
      s1 += dots(q11, k0, k1, k2, k3);
      s2 += dots(q21, k0, k1, k2, k3);
      s3 += dots(q31, k0, k1, k2, k3);
      a += BC;
      k0 = kv[a];
      k1 = kv[a + TX];
      k2 = kv[a + 2u * TX];
      k3 = kv[a + 3u * TX];
      s0 += dots(q02, k0, k1, k2, k3);
      s1 += dots(q12, k0, k1, k2, k3);
      s2 += dots(q22, k0, k1, k2, k3);
      s3 += dots(q32, k0, k1, k2, k3);
      a += BC;
      k0 = kv[a];
      k1 = kv[a + TX];
      k2 = kv[a + 2u * TX];
      k3 = kv[a + 3u * TX];
      s0 += dots(q03, k0, k1, k2, k3);
      s1 += dots(q13, k0, k1, k2, k3);
      s2 += dots(q23, k0, k1, k2, k3);
      s3 += dots(q33, k0, k1, k2, k3);
      s0 = mask_row(s0, r0, keys, kend, n, causal);
      s1 = mask_row(s1, r0 + 1u, keys, kend, n, causal);
      s2 = mask_row(s2, r0 + 2u, keys, kend, n, causal);
      s3 = mask_row(s3, r0 + 3u, keys, kend, n, causal);

      // Online softmax for this stream; rescale only when a row's max moved.
      let m_new = max(m, vec4<f32>(max4(s0), max4(s1), max4(s2), max4(s3)));
      if (any(m_new > m)) {
        let alpha = select(vec4<f32>(0.0), exp2(m - m_new), m > vec4<f32>(NEG_BIG));
        l *= alpha;
        o00 *= alpha.x;
        o01 *= alpha.x;
        o02 *= alpha.x;
        o03 *= alpha.x;
        o10 *= alpha.y;
        o11 *= alpha.y;
        o12 *= alpha.y;
        o13 *= alpha.y;
        o20 *= alpha.z;
        o21 *= alpha.z;
        o22 *= alpha.z;
        o23 *= alpha.z;
        o30 *= alpha.w;
        o31 *= alpha.w;
        o32 *= alpha.w;
        o33 *= alpha.w;
        m = m_new;
      }
      let p0 = p_row(s0, m.x);
      let p1 = p_row(s1, m.y);
      let p2 = p_row(s2, m.z);
      let p3 = p_row(s3, m.w);
      let one = vec4<f32>(1.0);
      l += vec4<f32>(dot(p0, one), dot(p1, one), dot(p2, one), dot(p3, one));

      // O micro-tile += P V, column group by column group.
      a = kb + TILE4 + kl;
      k0 = kv[a];
      k1 = kv[a + TX];
      k2 = kv[a + 2u * TX];
      k3 = kv[a + 3u * TX];
      o00 = fma(vec4<f32>(p0.x), k0, fma(vec4<f32>(p0.y), k1, fma(vec4<f32>(p0.z), k2, fma(vec4<f32>(p0.w), k3, o00))));
      o10 = fma(vec4<f32>(p1.x), k0, fma(vec4<f32>(p1.y), k1, fma(vec4<f32>(p1.z), k2, fma(vec4<f32>(p1.w), k3, o10))));
      o20 = fma(vec4<f32>(p2.x), k0, fma(vec4<f32>(p2.y), k1, fma(vec4<f32>(p2.z), k2, fma(vec4<f32>(p2.w), k3, o20))));
      o30 = fma(vec4<f32>(p3.x), k0, fma(vec4<f32>(p3.y), k1, fma(vec4<f32>(p3.z), k2, fma(vec4<f32>(p3.w), k3, o30))));
      a += BC;
      k0 = kv[a];
      k1 = kv[a + TX];
      k2 = kv[a + 2u * TX];
      k3 = kv[a + 3u * TX];
      o01 = fma(vec4<f32>(p0.x), k0, fma(vec4<f32>(p0.y), k1, fma(vec4<f32>(p0.z), k2, fma(vec4<f32>(p0.w), k3, o01))));
      o11 = fma(vec4<f32>(p1.x), k0, fma(vec4<f32>(p1.y), k1, fma(vec4<f32>(p1.z), k2, fma(vec4<f32>(p1.w), k3, o11))));
      o21 = fma(vec4<f32>(p2.x), k0, fma(vec4<f32>(p2.y), k1, fma(vec4<f32>(p2.z), k2, fma(vec4<f32>(p2.w), k3, o21))));
      o31 = fma(vec4<f32>(p3.x), k0, fma(vec4<f32>(p3.y), k1, fma(vec4<f32>(p3.z), k2, fma(vec4<f32>(p3.w), k3, o31))));
      a += BC;
      k0 = kv[a];
      k1 = kv[a + TX];
      k2 = kv[a + 2u * TX];
      k3 = kv[a + 3u * TX];
      o02 = fma(vec4<f32>(p0.x), k0, fma(vec4<f32>(p0.y), k1, fma(vec4<f32>(p0.z), k2, fma(vec4<f32>(p0.w), k3, o02))));
      o12 = fma(vec4<f32>(p1.x), k0, fma(vec4<f32>(p1.y), k1, fma(vec4<f32>(p1.z), k2, fma(vec4<f32>(p1.w), k3, o12))));
      o22 = fma(vec4<f32>(p2.x), k0, fma(vec4<f32>(p2.y), k1, fma(vec4<f32>(p2.z), k2, fma(vec4<f32>(p2.w), k3, o22))));
      o32 = fma(vec4<f32>(p3.x), k0, fma(vec4<f32>(p3.y), k1, fma(vec4<f32>(p3.z), k2, fma(vec4<f32>(p3.w), k3, o32))));
      a += BC;
      k0 = kv[a];
      k1 = kv[a + TX];
      k2 = kv[a + 2u * TX];
      k3 = kv[a + 3u * TX];
      o03 = fma(vec4<f32>(p0.x), k0, fma(vec4<f32>(p0.y), k1, fma(vec4<f32>(p0.z), k2, fma(vec4<f32>(p0.w), k3, o03))));
      o13 = fma(vec4<f32>(p1.x), k0, fma(vec4<f32>(p1.y), k1, fma(vec4<f32>(p1.z), k2, fma(vec4<f32>(p1.w), k3, o13))));
      o23 = fma(vec4<f32>(p2.x), k0, fma(vec4<f32>(p2.y), k1, fma(vec4<f32>(p2.z), k2, fma(vec4<f32>(p2.w), k3, o23))));
      o33 = fma(vec4<f32>(p3.x), k0, fma(vec4<f32>(p3.y), k1, fma(vec4<f32>(p3.z), k2, fma(vec4<f32>(p3.w), k3, o33))));
    }

    // The other buffer was last read before the previous barrier: fill it.
    if (t + 1u < tiles) {
      let nb = (t + 1u) % 2u;
      put_tile(nb, li, nk0, nv0);
      if (LPT > 1u) { put_tile(nb, li + THREADS, nk1, nv1); }
    }
    workgroupBarrier();
  }

  // Merge the TX streams of each row: m_row = max m, w = exp2(m - m_row) (0 for a stream
  // that saw no visible key), l_row = sum w l, O = sum (w / l_row) O_stream.
  kv[li] = m;
  workgroupBarrier();
  var m_row = vec4<f32>(NEG_BIG);
  for (var x = 0u; x < TX; x++) { m_row = max(m_row, kv[ty * TX + x]); }
  let w = select(vec4<f32>(0.0), exp2(m - m_row), m > vec4<f32>(NEG_BIG));
  workgroupBarrier();
  kv[li] = l * w;
  workgroupBarrier();
  var l_row = vec4<f32>(0.0);
  for (var x = 0u; x < TX; x++) { l_row += kv[ty * TX + x]; }
  let f = w * select(vec4<f32>(0.0), vec4<f32>(1.0) / l_row, l_row > vec4<f32>(0.0));
  workgroupBarrier();
  merge_row(0u, 0u, li, ty, tx, row0, n, base4, o00 * f.x, o01 * f.x, o02 * f.x, o03 * f.x);
  merge_row(1u, 0u, li, ty, tx, row0, n, base4, o10 * f.y, o11 * f.y, o12 * f.y, o13 * f.y);
  merge_row(2u, 0u, li, ty, tx, row0, n, base4, o20 * f.z, o21 * f.z, o22 * f.z, o23 * f.z);
  merge_row(3u, 0u, li, ty, tx, row0, n, base4, o30 * f.w, o31 * f.w, o32 * f.w, o33 * f.w);
}

// d = 64: each invocation owns 1 query row x 64 columns; after the Q tile is in kv.
fn row1(li: u32, tx: u32, ty: u32, n: u32, causal: bool, base4: u32, row0: u32, kend: u32, tiles: u32) {
  let qs = LOG2E / sqrt(f32(D));
  let qb = 16u * ty;  // 1 row x 16 column groups
  let q0 = kv[qb + 0u] * qs;
  let q1 = kv[qb + 1u] * qs;
  let q2 = kv[qb + 2u] * qs;
  let q3 = kv[qb + 3u] * qs;
  let q4 = kv[qb + 4u] * qs;
  let q5 = kv[qb + 5u] * qs;
  let q6 = kv[qb + 6u] * qs;
  let q7 = kv[qb + 7u] * qs;
  let q8 = kv[qb + 8u] * qs;
  let q9 = kv[qb + 9u] * qs;
  let q10 = kv[qb + 10u] * qs;
  let q11 = kv[qb + 11u] * qs;
  let q12 = kv[qb + 12u] * qs;
  let q13 = kv[qb + 13u] * qs;
  let q14 = kv[qb + 14u] * qs;
  let q15 = kv[qb + 15u] * qs;
  workgroupBarrier();  // Q read; kv now holds K and V tiles

  // Key tile 0 into buffer 0.
  put_tile(0u, li, fetch_k(li, 0u, kend, base4), fetch_v(li, 0u, kend, base4));
  if (LPT > 1u) { put_tile(0u, li + THREADS, fetch_k(li + THREADS, 0u, kend, base4), fetch_v(li + THREADS, 0u, kend, base4)); }
  workgroupBarrier();

  var m = NEG_BIG;  // this stream's running max of row ty (base 2)
  var l = 0.0;      // this stream's running sum
  // O micro-tile: o{c} = columns 4c..4c+3 of row ty.
  var o0 = vec4<f32>(0.0);
  var o1 = vec4<f32>(0.0);
  var o2 = vec4<f32>(0.0);
  var o3 = vec4<f32>(0.0);
  var o4 = vec4<f32>(0.0);
  var o5 = vec4<f32>(0.0);
  var o6 = vec4<f32>(0.0);
  var o7 = vec4<f32>(0.0);
  var o8 = vec4<f32>(0.0);
  var o9 = vec4<f32>(0.0);
  var o10 = vec4<f32>(0.0);
  var o11 = vec4<f32>(0.0);
  var o12 = vec4<f32>(0.0);
  var o13 = vec4<f32>(0.0);
  var o14 = vec4<f32>(0.0);
  var o15 = vec4<f32>(0.0);
  let r = row0 + ty;

  for (var t = 0u; t < tiles; t++) {
    let key0 = t * BC;
    let kb = 2u * (t % 2u) * TILE4;  // this tile's K; its V at kb + TILE4
    let key1 = key0 + BC;
    var nk0 = vec4<f32>(0.0);
    var nv0 = vec4<f32>(0.0);
    var nk1 = vec4<f32>(0.0);
    var nv1 = vec4<f32>(0.0);
    if (t + 1u < tiles) {
      nk0 = fetch_k(li, key1, kend, base4);
      nv0 = fetch_v(li, key1, kend, base4);
      if (LPT > 1u) {
        nk1 = fetch_k(li + THREADS, key1, kend, base4);
        nv1 = fetch_v(li + THREADS, key1, kend, base4);
      }
    }

    for (var g = 0u; g < KG; g++) {
      let kl = 4u * g * TX + tx;  // local keys kl, kl + TX, kl + 2 TX, kl + 3 TX
      let keys = vec4<u32>(key0 + kl) + vec4<u32>(0u, 1u, 2u, 3u) * TX;
      // S row (1 row x 4 keys), column group by column group.
      var a = kb + kl;
      var s = vec4<f32>(0.0);
      var km = keys4(a);
      s += q0 * km;
      a += BC;
      km = keys4(a);
      s += q1 * km;
      a += BC;
      km = keys4(a);
      s += q2 * km;
      a += BC;
      km = keys4(a);
      s += q3 * km;
      a += BC;
      km = keys4(a);
      s += q4 * km;
      a += BC;
      km = keys4(a);
      s += q5 * km;
      a += BC;
      km = keys4(a);
      s += q6 * km;
      a += BC;
      km = keys4(a);
      s += q7 * km;
      a += BC;
      km = keys4(a);
      s += q8 * km;
      a += BC;
      km = keys4(a);
      s += q9 * km;
      a += BC;
      km = keys4(a);
      s += q10 * km;
      a += BC;
      km = keys4(a);
      s += q11 * km;
      a += BC;
      km = keys4(a);
      s += q12 * km;
      a += BC;
      km = keys4(a);
      s += q13 * km;
      a += BC;
      km = keys4(a);
      s += q14 * km;
      a += BC;
      km = keys4(a);
      s += q15 * km;
      s = mask_row(s, r, keys, kend, n, causal);

      // Online softmax for this stream; rescale only when the max moved.
      let m_new = max(m, max4(s));
      if (m_new > m) {
        let alpha = select(0.0, exp2(m - m_new), m > NEG_BIG);
        l *= alpha;
        o0 *= alpha;
        o1 *= alpha;
        o2 *= alpha;
        o3 *= alpha;
        o4 *= alpha;
        o5 *= alpha;
        o6 *= alpha;
        o7 *= alpha;
        o8 *= alpha;
        o9 *= alpha;
        o10 *= alpha;
        o11 *= alpha;
        o12 *= alpha;
        o13 *= alpha;
        o14 *= alpha;
        o15 *= alpha;
        m = m_new;
      }
      let p = p_row(s, m);
      l += dot(p, vec4<f32>(1.0));

      // O row += P V, column group by column group.
      a = kb + TILE4 + kl;
      km = keys4(a);
      o0 = o0 + km * p;
      a += BC;
      km = keys4(a);
      o1 = o1 + km * p;
      a += BC;
      km = keys4(a);
      o2 = o2 + km * p;
      a += BC;
      km = keys4(a);
      o3 = o3 + km * p;
      a += BC;
      km = keys4(a);
      o4 = o4 + km * p;
      a += BC;
      km = keys4(a);
      o5 = o5 + km * p;
      a += BC;
      km = keys4(a);
      o6 = o6 + km * p;
      a += BC;
      km = keys4(a);
      o7 = o7 + km * p;
      a += BC;
      km = keys4(a);
      o8 = o8 + km * p;
      a += BC;
      km = keys4(a);
      o9 = o9 + km * p;
      a += BC;
      km = keys4(a);
      o10 = o10 + km * p;
      a += BC;
      km = keys4(a);
      o11 = o11 + km * p;
      a += BC;
      km = keys4(a);
      o12 = o12 + km * p;
      a += BC;
      km = keys4(a);
      o13 = o13 + km * p;
      a += BC;
      km = keys4(a);
      o14 = o14 + km * p;
      a += BC;
      km = keys4(a);
      o15 = o15 + km * p;
    }

    // The other buffer was last read before the previous barrier: fill it.
    if (t + 1u < tiles) {
      let nb = (t + 1u) % 2u;
      put_tile(nb, li, nk0, nv0);
      if (LPT > 1u) { put_tile(nb, li + THREADS, nk1, nv1); }
    }
    workgroupBarrier();
  }

  // Merge the TX streams of the row, as in rows4.
  kv[li] = vec4<f32>(m);
  workgroupBarrier();
  var m_row = NEG_BIG;
  for (var x = 0u; x < TX; x++) { m_row = max(m_row, kv[ty * TX + x].x); }
  let w = select(0.0, exp2(m - m_row), m > NEG_BIG);
  workgroupBarrier();
  kv[li] = vec4<f32>(l * w);
  workgroupBarrier();
  var l_row = 0.0;
  for (var x = 0u; x < TX; x++) { l_row += kv[ty * TX + x].x; }
  let f = w * select(0.0, 1.0 / l_row, l_row > 0.0);
  workgroupBarrier();
  merge_row(0u, 0u, li, ty, tx, row0, n, base4, o0 * f, o1 * f, o2 * f, o3 * f);
  merge_row(0u, 4u, li, ty, tx, row0, n, base4, o4 * f, o5 * f, o6 * f, o7 * f);
  merge_row(0u, 8u, li, ty, tx, row0, n, base4, o8 * f, o9 * f, o10 * f, o11 * f);
  merge_row(0u, 12u, li, ty, tx, row0, n, base4, o12 * f, o13 * f, o14 * f, o15 * f);
}

@compute @workgroup_size(TX, TY)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let n = params.n;
  let causal = params.causal != 0u;
  let d4 = D / 4u;
  let base4 = (params.head_base + wg.y) * n * d4;
  let row0 = (params.x_base + wg.x) * BR;
  let tx = lid.x;
  let ty = lid.y;

  // Q tile through workgroup memory into registers, scaled for exp2. Reads Q: r * d elements.
  for (var e = li; e < BR * d4; e += THREADS) {
    var x = vec4<f32>(0.0);
    if (row0 + e / d4 < n) { x = load_q(base4 + row0 * d4 + e); }
    kv[e] = x;
  }
  workgroupBarrier();
  let row_last = min(n, row0 + BR) - 1u;
  var kend = n;
  if (causal) { kend = min(n, (row_last / BC + 1u) * BC); }
  let tiles = (kend + BC - 1u) / BC;

  if (RPI == 4u) {
    rows4(li, tx, ty, n, causal, base4, row0, kend, tiles);
  } else {
    row1(li, tx, ty, n, causal, base4, row0, kend, tiles);
  }
}
