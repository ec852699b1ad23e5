// fused_lanes.wgsl: fused attention for timing, on devices with the "subgroups" feature.
// It stands in for fused_streams.wgsl at d = 64 and fused_fast.wgsl at d = 128 (same
// manifest kernel, same tiles B_r x B_c, so the same bytes) where the adapter offers
// subgroups; the host checks the feature and the smallest subgroup size (>= TD) first,
// and runs the other shader otherwise.
//
// Follows FlashAttention-2 (arXiv:2307.08691), section 3.1 (Algorithm 1): one workgroup per
// query tile, an inner loop over key tiles, online softmax with the running max m and the
// unnormalised running sum l per row, O divided by l once at the end.
//
// Why another kernel: in fused_streams.wgsl at d = 64 an invocation owns one whole query row,
// so each vec4 of K or V it reads from workgroup memory feeds only 4 multiply-adds, and its
// Q and O rows fill 128 registers. Here the d columns of a row are split over TD = d / 16
// neighbouring invocations ("lanes", 16 columns each) that own the same R query rows. A lane
// reads 16 columns of a key and uses them for R rows (4R multiply-adds per vec4), and the TD
// partial dot products of a score are summed with subgroupShuffleXor (log2 TD rounds). Every
// lane then holds the whole score, so the lanes of a row keep identical m and l and need no
// other exchange. As in fused_streams.wgsl, the keys of a tile are also dealt out to TX
// "streams", each with its own m, l and O, merged once after the last key tile with the
// rescale rule of section 3.1: w = exp(m_stream - m_row), l = sum w l_stream,
// O = sum w O_stream / l.
//
// Invocation li: lane = li % TD, stream = (li / TD) % TX, row group ty = li / (TD TX), which
// owns query rows ty R .. ty R + R - 1 of the tile and column groups (vec4s) c TD + lane,
// c < 4. The shuffles assume that the TD lanes of a row group sit in one subgroup at indices
// that differ only in their low bits, as they do when subgroups are made of consecutive
// local_invocation_index values (every implementation we know); the Time button and the
// benchmark check each kernel's output against float64 before timing it.
//
// Stream x takes the local keys (4g + j) TX + x of each key tile (g < KG, j < 4). K and V
// tiles are double-buffered in workgroup memory, key-major, with column group cg of key kl
// stored at cg ^ 4 (kl & 1) when d >= 32 (neighbouring streams then read different banks);
// the next tile's K and V are loaded into registers while this one is computed: one barrier
// per key tile. Q is staged through the same array once, and so is the final merge.
//
// Tiling (manifest.json, "with_subgroups"; the tiles are the kernel's own, so the bytes are too):
//   fused-fast-16k: d = 64: B_r = 64, B_c = 16, R = 2, TX = 1 (128 invocations, TD = 4)
//                   d = 128: B_r = 16, B_c = 8, R = 2, TX = 2 (128 invocations, TD = 8)
//   fused-fast:     d = 64: B_r = 32, B_c = 16, R = 2, TX = 2 (128 invocations, TD = 4)
//
// Workgroup array (floats): 2 buffers x (K tile + V tile) = 4 B_c d, i.e. 16 B_c d bytes
// (16,384 at d = 64, B_c = 16). Needs B_r <= 4 B_c, B_c a multiple of 4 TX, R in {1, 2, 4},
// TD TX B_r / R <= min(256, B_c d / 4), and at most 4 vec4s of K (and of V) per invocation.
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid rows whose
// visited key tiles cover keys [0, kend) -- the schedule of fused.wgsl:
//   load Q tile          reads  Q: r * d * 4 bytes            (vec4 loads, once)
//   per key tile         reads  K: keys_in_tile * d * 4 bytes (vec4 loads, once each)
//                        reads  V: keys_in_tile * d * 4 bytes (vec4 loads, once each)
//   at the end           writes O: r * d * 4 bytes            (vec4 stores)
// kend = N for full attention; causal: min(N, ceil(b / B_c) * B_c), b one past the tile's
// last row.
//
// Masking as in fused.wgsl: no -inf (NEG_BIG is finite), masked keys never enter m or l (a
// stream that saw no visible key has w = 0), no early return before a barrier, and every
// subgroup operation sits in workgroup-uniform control flow. Scores are kept in base 2: Q is
// scaled by log2(e) / sqrt(d) once, then exp2.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

enable subgroups;

override D: u32 = 64u;     // head dimension d: 16, 32, 64 or 128
override BR: u32 = 64u;    // B_r, a multiple of R
override BC: u32 = 16u;    // B_c, a multiple of 4 TX
override R: u32 = 4u;      // query rows per invocation: 1, 2 or 4
override TX: u32 = 2u;     // key streams per row group
override TD: u32 = D / 16u;          // lanes per row group, 16 columns each
override D4: u32 = D / 4u;           // vec4s in a row
override TY: u32 = BR / R;           // row groups
override THREADS: u32 = TD * TX * TY;
override KG: u32 = BC / (4u * TX);   // key groups of 4 per stream per tile
override TILE4: u32 = BC * D4;       // vec4s in one K (or V) tile
override LPT: u32 = (TILE4 + THREADS - 1u) / THREADS;  // vec4s of K (and V) each invocation loads
override SWZ: u32 = select(0u, 4u, D4 >= 8u);          // bank swizzle of odd keys

const NEG_BIG: f32 = -3.0e38;
const LOG2E: f32 = 1.4426950408889634;

struct Params {
  n: u32,
  causal: u32,
  head_base: u32,
  x_base: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;        // (H, N, d)
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;        // (H, N, d)
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;        // (H, N, d)
@group(0) @binding(4) var<storage, read_write> o: array<vec4<f32>>;  // (H, N, d)
// @instrument: @group(0) @binding(7) var<storage, read_write> counters: array<atomic<u32>, 28>;

// Counter slots (elements): 0 Q read, 1 Q write, 2 K read, 3 K write, 4 V read,
// 5 V write, 6 S read, 7 S write, 8 P read, 9 P write, 10 O read, 11 O write,
// 12 dO read, 13 dO write, 14 L read, 15 L write, 16 D read, 17 D write,
// 18 dP read, 19 dP write, 20 dS read, 21 dS write, 22 dQ read, 23 dQ write,
// 24 dK read, 25 dK write, 26 dV read, 27 dV write.
fn tally(slot: u32, elems: u32) {
  // @instrument: atomicAdd(&counters[slot], elems);
}

fn load_q(i: u32) -> vec4<f32> { tally(0u, 4u); return q[i]; }
fn load_k(i: u32) -> vec4<f32> { tally(2u, 4u); return k[i]; }
fn load_v(i: u32) -> vec4<f32> { tally(4u, 4u); return v[i]; }
fn store_o(i: u32, x: vec4<f32>) { tally(11u, 4u); o[i] = x; }

// The Q tile (row-major), then buffers b = 0, 1 of K (part 0) and V (part 1), then the merge.
var<workgroup> kv: array<vec4<f32>, 4u * TILE4>;

// Where column group cg of local key kl of part (0 K, 1 V) of buffer b lives in kv.
fn at(b: u32, part: u32, kl: u32, cg: u32) -> u32 {
  return (2u * b + part) * TILE4 + kl * D4 + (cg ^ ((kl & 1u) * SWZ));
}

// Column group cg of the four local keys kl as the columns of a matrix: q * m gives the four
// dot products, m * p the sum of the four rows weighted by p.
fn keys4(b: u32, part: u32, kl: vec4<u32>, cg: u32) -> mat4x4<f32> {
  return mat4x4<f32>(kv[at(b, part, kl.x, cg)], kv[at(b, part, kl.y, cg)],
                     kv[at(b, part, kl.z, cg)], kv[at(b, part, kl.w, cg)]);
}

fn max4(x: vec4<f32>) -> f32 { return max(max(x.x, x.y), max(x.z, x.w)); }

// Mask one row of scores: keys past kend, past the row (causal), rows past N.
fn mask_row(s: vec4<f32>, row: u32, keys: vec4<u32>, kend: u32, n: u32, causal: bool) -> vec4<f32> {
  var ok = keys < vec4<u32>(kend);
  if (causal) { ok = ok & (keys <= vec4<u32>(row)); }
  ok = ok & vec4<bool>(row < n);
  return select(vec4<f32>(NEG_BIG), s, ok);
}

fn p_row(s: vec4<f32>, m: f32) -> vec4<f32> {
  return select(vec4<f32>(0.0), exp2(s - vec4<f32>(m)), s > vec4<f32>(NEG_BIG));
}

// Sum a lane's partial scores over the TD lanes of its row group.
fn lanes_sum(x: vec4<f32>) -> vec4<f32> {
  var y = x;
  if (TD > 1u) { y += subgroupShuffleXor(y, 1u); }
  if (TD > 2u) { y += subgroupShuffleXor(y, 2u); }
  if (TD > 4u) { y += subgroupShuffleXor(y, 4u); }
  return y;
}

// One vec4 (e) of the key tile starting at key0, K or V; zero past kend.
fn fetch(part: u32, e: u32, key0: u32, kend: u32, base4: u32) -> vec4<f32> {
  var x = vec4<f32>(0.0);
  let key = key0 + e / D4;
  if (e < TILE4 && key < kend) {
    let i = base4 + key * D4 + e % D4;
    if (part == 0u) { x = load_k(i); } else { x = load_v(i); }
  }
  return x;
}
fn put(b: u32, e: u32, xk: vec4<f32>, xv: vec4<f32>) {
  if (e < TILE4) {
    kv[at(b, 0u, e / D4, e % D4)] = xk;
    kv[at(b, 1u, e / D4, e % D4)] = xv;
  }
}

// Merge one query row over the TX streams. Each invocation puts its 4 vec4s of the row
// (already scaled by w / l); stream 0's invocations sum them and write O (valid rows only).
fn merge_row(row: u32, li: u32, lane: u32, x: u32, ty: u32, n: u32, base4: u32,
             a: vec4<f32>, b: vec4<f32>, c: vec4<f32>, e: vec4<f32>) {
  kv[4u * li + 0u] = a;
  kv[4u * li + 1u] = b;
  kv[4u * li + 2u] = c;
  kv[4u * li + 3u] = e;
  workgroupBarrier();
  if (x == 0u && row < n) {
    for (var cc = 0u; cc < 4u; cc++) {
      var total = vec4<f32>(0.0);
      for (var xs = 0u; xs < TX; xs++) { total += kv[4u * ((ty * TX + xs) * TD + lane) + cc]; }
      store_o(base4 + row * D4 + cc * TD + lane, total);
    }
  }
  workgroupBarrier();
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let n = params.n;
  let causal = params.causal != 0u;
  let base4 = (params.head_base + wg.y) * n * D4;
  let row0 = (params.x_base + wg.x) * BR;
  let lane = li % TD;
  let x = (li / TD) % TX;
  let ty = li / (TD * TX);
  let ra = row0 + ty * R;  // this invocation's rows: ra .. ra + R - 1
  let row_last = min(n, row0 + BR) - 1u;
  var kend = n;
  if (causal) { kend = min(n, (row_last / BC + 1u) * BC); }
  let tiles = (kend + BC - 1u) / BC;

  // Q tile through workgroup memory (each element read once), then into registers scaled
  // for exp2: q{i}{c} = row ra + i, column group c TD + lane. Reads Q: r * d elements.
  for (var e = li; e < BR * D4; e += THREADS) {
    var xq = vec4<f32>(0.0);
    if (row0 + e / D4 < n) { xq = load_q(base4 + row0 * D4 + e); }
    kv[e] = xq;
  }
  workgroupBarrier();
  let qs = LOG2E / sqrt(f32(D));
  let qa = (ty * R) * D4 + lane;
  let q00 = kv[qa] * qs;
  let q01 = kv[qa + TD] * qs;
  let q02 = kv[qa + 2u * TD] * qs;
  let q03 = kv[qa + 3u * TD] * qs;
  var q10 = vec4<f32>(0.0);
  var q11 = vec4<f32>(0.0);
  var q12 = vec4<f32>(0.0);
  var q13 = vec4<f32>(0.0);
  var q20 = vec4<f32>(0.0);
  var q21 = vec4<f32>(0.0);
  var q22 = vec4<f32>(0.0);
  var q23 = vec4<f32>(0.0);
  var q30 = vec4<f32>(0.0);
  var q31 = vec4<f32>(0.0);
  var q32 = vec4<f32>(0.0);
  var q33 = vec4<f32>(0.0);
  if (R > 1u) {
    q10 = kv[qa + D4] * qs;
    q11 = kv[qa + D4 + TD] * qs;
    q12 = kv[qa + D4 + 2u * TD] * qs;
    q13 = kv[qa + D4 + 3u * TD] * qs;
  }
  if (R > 2u) {
    q20 = kv[qa + 2u * D4] * qs;
    q21 = kv[qa + 2u * D4 + TD] * qs;
    q22 = kv[qa + 2u * D4 + 2u * TD] * qs;
    q23 = kv[qa + 2u * D4 + 3u * TD] * qs;
    q30 = kv[qa + 3u * D4] * qs;
    q31 = kv[qa + 3u * D4 + TD] * qs;
    q32 = kv[qa + 3u * D4 + 2u * TD] * qs;
    q33 = kv[qa + 3u * D4 + 3u * TD] * qs;
  }
  workgroupBarrier();  // Q read; kv now holds K and V tiles

  // Key tile 0 into buffer 0.
  for (var i = 0u; i < LPT; i++) {
    let e = li + i * THREADS;
    put(0u, e, fetch(0u, e, 0u, kend, base4), fetch(1u, e, 0u, kend, base4));
  }
  workgroupBarrier();

  var m = vec4<f32>(NEG_BIG);  // this stream's running max of rows ra + 0..3 (base 2)
  var l = vec4<f32>(0.0);      // this stream's running sums
  // O: o{i}{c} = row ra + i, column group c TD + lane.
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

  for (var t = 0u; t < tiles; t++) {
    let key0 = t * BC;
    let b = t % 2u;
    // Next tile's K and V into registers now; stored after the arithmetic below.
    let key1 = key0 + BC;
    var nk0 = vec4<f32>(0.0);
    var nv0 = vec4<f32>(0.0);
    var nk1 = vec4<f32>(0.0);
    var nv1 = vec4<f32>(0.0);
    var nk2 = vec4<f32>(0.0);
    var nv2 = vec4<f32>(0.0);
    var nk3 = vec4<f32>(0.0);
    var nv3 = vec4<f32>(0.0);
    if (t + 1u < tiles) {
      nk0 = fetch(0u, li, key1, kend, base4);
      nv0 = fetch(1u, li, key1, kend, base4);
      if (LPT > 1u) {
        nk1 = fetch(0u, li + THREADS, key1, kend, base4);
        nv1 = fetch(1u, li + THREADS, key1, kend, base4);
      }
      if (LPT > 2u) {
        nk2 = fetch(0u, li + 2u * THREADS, key1, kend, base4);
        nv2 = fetch(1u, li + 2u * THREADS, key1, kend, base4);
        nk3 = fetch(0u, li + 3u * THREADS, key1, kend, base4);
        nv3 = fetch(1u, li + 3u * THREADS, key1, kend, base4);
      }
    }

    for (var g = 0u; g < KG; g++) {
      let kl = (vec4<u32>(4u * g) + vec4<u32>(0u, 1u, 2u, 3u)) * TX + vec4<u32>(x);
      let keys = vec4<u32>(key0) + kl;
      // Partial scores over this lane's 16 columns: row i, keys kl.
      var s0 = vec4<f32>(0.0);
      var s1 = vec4<f32>(0.0);
      var s2 = vec4<f32>(0.0);
      var s3 = vec4<f32>(0.0);
      var km = keys4(b, 0u, kl, lane);
      s0 += q00 * km;
      if (R > 1u) { s1 += q10 * km; }
      if (R > 2u) { s2 += q20 * km; s3 += q30 * km; }
      km = keys4(b, 0u, kl, TD + lane);
      s0 += q01 * km;
      if (R > 1u) { s1 += q11 * km; }
      if (R > 2u) { s2 += q21 * km; s3 += q31 * km; }
      km = keys4(b, 0u, kl, 2u * TD + lane);
      s0 += q02 * km;
      if (R > 1u) { s1 += q12 * km; }
      if (R > 2u) { s2 += q22 * km; s3 += q32 * km; }
      km = keys4(b, 0u, kl, 3u * TD + lane);
      s0 += q03 * km;
      if (R > 1u) { s1 += q13 * km; }
      if (R > 2u) { s2 += q23 * km; s3 += q33 * km; }
      // Whole scores: sum over the lanes (workgroup-uniform control flow).
      s0 = mask_row(lanes_sum(s0), ra, keys, kend, n, causal);
      if (R > 1u) { s1 = mask_row(lanes_sum(s1), ra + 1u, keys, kend, n, causal); } else { s1 = vec4<f32>(NEG_BIG); }
      if (R > 2u) {
        s2 = mask_row(lanes_sum(s2), ra + 2u, keys, kend, n, causal);
        s3 = mask_row(lanes_sum(s3), ra + 3u, keys, kend, n, causal);
      } else {
        s2 = vec4<f32>(NEG_BIG);
        s3 = vec4<f32>(NEG_BIG);
      }

      // Online softmax for this stream (rows as the components of m and l); rescale only
      // when a max moved.
      let m_new = max(m, vec4<f32>(max4(s0), max4(s1), max4(s2), max4(s3)));
      if (any(m_new > m)) {
        let alpha = select(vec4<f32>(0.0), exp2(m - m_new), m > vec4<f32>(NEG_BIG));
        l *= alpha;
        o00 *= alpha.x;
        o01 *= alpha.x;
        o02 *= alpha.x;
        o03 *= alpha.x;
        if (R > 1u) {
          o10 *= alpha.y;
          o11 *= alpha.y;
          o12 *= alpha.y;
          o13 *= alpha.y;
        }
        if (R > 2u) {
          o20 *= alpha.z;
          o21 *= alpha.z;
          o22 *= alpha.z;
          o23 *= alpha.z;
          o30 *= alpha.w;
          o31 *= alpha.w;
          o32 *= alpha.w;
          o33 *= alpha.w;
        }
        m = m_new;
      }
      let p0 = p_row(s0, m.x);
      let p1 = p_row(s1, m.y);
      let p2 = p_row(s2, m.z);
      let p3 = p_row(s3, m.w);
      let one = vec4<f32>(1.0);
      l += vec4<f32>(dot(p0, one), dot(p1, one), dot(p2, one), dot(p3, one));

      // O += P V over this lane's 16 columns.
      var vm = keys4(b, 1u, kl, lane);
      o00 += vm * p0;
      if (R > 1u) { o10 += vm * p1; }
      if (R > 2u) { o20 += vm * p2; o30 += vm * p3; }
      vm = keys4(b, 1u, kl, TD + lane);
      o01 += vm * p0;
      if (R > 1u) { o11 += vm * p1; }
      if (R > 2u) { o21 += vm * p2; o31 += vm * p3; }
      vm = keys4(b, 1u, kl, 2u * TD + lane);
      o02 += vm * p0;
      if (R > 1u) { o12 += vm * p1; }
      if (R > 2u) { o22 += vm * p2; o32 += vm * p3; }
      vm = keys4(b, 1u, kl, 3u * TD + lane);
      o03 += vm * p0;
      if (R > 1u) { o13 += vm * p1; }
      if (R > 2u) { o23 += vm * p2; o33 += vm * p3; }
    }

    // The other buffer was last read before the previous barrier: fill it.
    if (t + 1u < tiles) {
      let nb = 1u - b;
      put(nb, li, nk0, nv0);
      if (LPT > 1u) { put(nb, li + THREADS, nk1, nv1); }
      if (LPT > 2u) {
        put(nb, li + 2u * THREADS, nk2, nv2);
        put(nb, li + 3u * THREADS, nk3, nv3);
      }
    }
    workgroupBarrier();
  }

  // Merge the TX streams of each row: m_row, then w, l_row, and O / l.
  kv[li] = m;
  workgroupBarrier();
  var m_row = vec4<f32>(NEG_BIG);
  for (var xs = 0u; xs < TX; xs++) { m_row = max(m_row, kv[(ty * TX + xs) * TD + lane]); }
  let w = select(vec4<f32>(0.0), exp2(m - m_row), m > vec4<f32>(NEG_BIG));
  workgroupBarrier();
  kv[li] = l * w;
  workgroupBarrier();
  var l_row = vec4<f32>(0.0);
  for (var xs = 0u; xs < TX; xs++) { l_row += kv[(ty * TX + xs) * TD + lane]; }
  let f = w * select(vec4<f32>(0.0), vec4<f32>(1.0) / l_row, l_row > vec4<f32>(0.0));
  workgroupBarrier();
  merge_row(ra, li, lane, x, ty, n, base4, o00 * f.x, o01 * f.x, o02 * f.x, o03 * f.x);
  if (R > 1u) { merge_row(ra + 1u, li, lane, x, ty, n, base4, o10 * f.y, o11 * f.y, o12 * f.y, o13 * f.y); }
  if (R > 2u) {
    merge_row(ra + 2u, li, lane, x, ty, n, base4, o20 * f.z, o21 * f.z, o22 * f.z, o23 * f.z);
    merge_row(ra + 3u, li, lane, x, ty, n, base4, o30 * f.w, o31 * f.w, o32 * f.w, o33 * f.w);
  }
}
