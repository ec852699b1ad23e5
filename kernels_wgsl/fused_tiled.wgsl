// fused_tiled.wgsl: fused attention with 4 x 4 register micro-tiles held in vec4s, for
// timing (manifest kernels "fused-fast" at d = 32 and 128, "fused-fast-16k" at d = 32).
//
// Follows FlashAttention-2 (arXiv:2307.08691), section 3.1 (Algorithm 1): one
// workgroup per query tile, an inner loop over key tiles, the running max m and the
// unnormalised sum l per row, O divided by l once at the end.
//
// Tiling (per d in manifest.json): TY x TX invocations with TX = B_c/4, TY = B_r/4.
// Invocation (ty, tx) owns query rows 4ty..4ty+3. For S = Q K^T it owns keys
// 4tx..4tx+3 of the key tile. d is walked in NCH = d / B_c chunks of B_c columns
// (NCH = 1 to 4): S sums over the chunks, and for O = P V the invocation owns columns
// 4tx..4tx+3 of each chunk. Every micro-tile is four vec4 registers (no arrays), so
// nothing spills: one vec4 read of Q and one of K feed 16 multiply-adds, likewise P, V.
//   fused-fast:     d = 32: B_r = 128, B_c = 32 (NCH = 1)   d = 128: B_r = 64, B_c = 32 (NCH = 4)
//   fused-fast-16k: d = 32: B_r = 32,  B_c = 32 (NCH = 1)
// Workgroup arrays (floats): Q tile transposed d*B_r, one chunk of K or V B_c*B_c (V is
// loaded over K once the scores are done), P tile transposed B_c*B_r (also the row-max
// and row-sum exchange): 4*(d*B_r + B_c*B_c + B_c*B_r) bytes.
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid
// rows whose visited key tiles cover keys [0, kend) -- the schedule of fused.wgsl:
//   load Q tile          reads  Q: r * d * 4 bytes            (vec4 loads, once)
//   per key tile         reads  K: keys_in_tile * d * 4 bytes (vec4 loads, chunk by chunk)
//                        reads  V: keys_in_tile * d * 4 bytes (vec4 loads, chunk by chunk)
//   at the end           writes O: r * d * 4 bytes            (vec4 stores)
// kend = N for full attention; causal: min(N, ceil(b / B_c) * B_c), b one past the
// tile's last row.
//
// Masking as in fused.wgsl: no -inf (NEG_BIG is finite), masked keys never enter m or
// l, no early return before a barrier.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

override D: u32 = 64u;    // head dimension d
override BR: u32 = 64u;   // B_r, a multiple of 4
override BC: u32 = 64u;   // B_c: d / NCH
override TX: u32 = BC / 4u;
override TY: u32 = BR / 4u;
override NCH: u32 = D / BC;  // chunks of d: 1, 2, 3 or 4

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

@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;        // (H, N, d)
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;        // (H, N, d)
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;        // (H, N, d)
@group(0) @binding(4) var<storage, read_write> o: array<vec4<f32>>;  // (H, N, d)


fn load_q(i: u32) -> vec4<f32> { tally(0u, 4u); return q[i]; }
fn load_k(i: u32) -> vec4<f32> { tally(2u, 4u); return k[i]; }
fn load_v(i: u32) -> vec4<f32> { tally(4u, 4u); return v[i]; }
fn store_o(i: u32, x: vec4<f32>) { tally(11u, 4u); o[i] = x; }

var<workgroup> qt: array<vec4<f32>, D * BR / 4u>;  // qt[c * TY + g]: rows 4g..4g+3 at column c
var<workgroup> kv: array<vec4<f32>, BC * BC / 4u>; // K chunk: kv[c * TX + g] keys 4g..4g+3 at column c
                                                    // V chunk: kv[key * TX + g] columns 4g..4g+3 of key
var<workgroup> pt: array<vec4<f32>, BC * BR / 4u>; // pt[key * TY + g]: rows 4g..4g+3 at key

// Row i of the 4 x 4 block whose rows are a, b, c, e (each a vec4 over 4 columns).
fn column(a: vec4<f32>, b: vec4<f32>, c: vec4<f32>, e: vec4<f32>, i: u32) -> vec4<f32> {
  return vec4<f32>(a[i], b[i], c[i], e[i]);
}

// Scale, mask and the 4 keys' max of one row of the S micro-tile.
fn mask_row(x: vec4<f32>, row: u32, key: u32, kend: u32, n: u32, causal: bool, scale: f32) -> vec4<f32> {
  let keys = vec4<u32>(key) + vec4<u32>(0u, 1u, 2u, 3u);
  var ok = keys < vec4<u32>(kend);
  if (causal) { ok = ok & (keys <= vec4<u32>(row)); }
  ok = ok & vec4<bool>(row < n);
  return select(vec4<f32>(NEG_BIG), x * scale, ok);
}

// V chunk ch (columns ch*B_c ..) of the key tile into kv. Reads V: keys_in_tile * B_c elements.
fn load_v_chunk(ch: u32, key0: u32, kend: u32, base4: u32, li: u32, threads: u32) {
  let d4 = D / 4u;
  for (var e = li; e < BC * TX; e += threads) {
    let key = e / TX;
    var x = vec4<f32>(0.0);
    if (key0 + key < kend) { x = load_v(base4 + (key0 + key) * d4 + ch * TX + e % TX); }
    kv[e] = x;
  }
}

// Four rows r0..r0+3 of O (those below N), each one vec4 at column group col.
fn store_rows(r0: u32, n: u32, base4: u32, col: u32, a: vec4<f32>, b: vec4<f32>, c: vec4<f32>, e: vec4<f32>) {
  let d4 = D / 4u;
  if (r0 < n) { store_o(base4 + r0 * d4 + col, a); }
  if (r0 + 1u < n) { store_o(base4 + (r0 + 1u) * d4 + col, b); }
  if (r0 + 2u < n) { store_o(base4 + (r0 + 2u) * d4 + col, c); }
  if (r0 + 3u < n) { store_o(base4 + (r0 + 3u) * d4 + col, e); }
}

fn max4(x: vec4<f32>) -> f32 { return max(max(x.x, x.y), max(x.z, x.w)); }

fn p_row(s: vec4<f32>, m: f32) -> vec4<f32> {
  return select(vec4<f32>(0.0), exp(s - vec4<f32>(m)), s > vec4<f32>(NEG_BIG));
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
  let threads = TX * TY;
  let scale = 1.0 / sqrt(f32(D));

  // Q tile: 4 rows x 4 columns per step, transposed into qt. Reads Q: r * d elements.
  for (var e = li; e < TY * d4; e += threads) {
    let g = e / d4;   // row group
    let cg = e % d4;  // column group
    var r: array<vec4<f32>, 4>;
    for (var i = 0u; i < 4u; i++) {
      r[i] = vec4<f32>(0.0);
      if (row0 + 4u * g + i < n) { r[i] = load_q(base4 + (row0 + 4u * g + i) * d4 + cg); }
    }
    for (var c = 0u; c < 4u; c++) { qt[(4u * cg + c) * TY + g] = column(r[0], r[1], r[2], r[3], c); }
  }

  let row_last = min(n, row0 + BR) - 1u;
  var kend = n;
  if (causal) { kend = min(n, (row_last / BC + 1u) * BC); }
  let tiles = (kend + BC - 1u) / BC;

  var m = vec4<f32>(NEG_BIG);  // running max of rows 4ty..4ty+3
  var l = vec4<f32>(0.0);      // this invocation's share of their running sums
  // O rows 4ty+i; chunk h of d (columns h*B_c + 4tx..4tx+3) in o{4h}..o{4h+3}.
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

  for (var t = 0u; t < tiles; t++) {
    let key0 = t * BC;
    // S micro-tile: rows 4ty+i, keys key0 + 4tx + j, summed over the chunks of d.
    var s0 = vec4<f32>(0.0);
    var s1 = vec4<f32>(0.0);
    var s2 = vec4<f32>(0.0);
    var s3 = vec4<f32>(0.0);
    for (var ch = 0u; ch < NCH; ch++) {
      workgroupBarrier();
      // K chunk, 4 keys x 4 columns per step, transposed. Reads K: keys_in_tile * B_c elements.
      for (var e = li; e < TX * TX; e += threads) {
        let g = e / TX;   // key group
        let cg = e % TX;  // column group within the chunk
        var r: array<vec4<f32>, 4>;
        for (var i = 0u; i < 4u; i++) {
          r[i] = vec4<f32>(0.0);
          if (key0 + 4u * g + i < kend) { r[i] = load_k(base4 + (key0 + 4u * g + i) * d4 + ch * TX + cg); }
        }
        for (var c = 0u; c < 4u; c++) { kv[(4u * cg + c) * TX + g] = column(r[0], r[1], r[2], r[3], c); }
      }
      workgroupBarrier();
      for (var c = 0u; c < BC; c++) {
        let a = qt[(ch * BC + c) * TY + ty];
        let b = kv[c * TX + tx];
        s0 = fma(vec4<f32>(a.x), b, s0);
        s1 = fma(vec4<f32>(a.y), b, s1);
        s2 = fma(vec4<f32>(a.z), b, s2);
        s3 = fma(vec4<f32>(a.w), b, s3);
      }
    }
    let r0 = row0 + 4u * ty;
    let key = key0 + 4u * tx;
    s0 = mask_row(s0, r0, key, kend, n, causal, scale);
    s1 = mask_row(s1, r0 + 1u, key, kend, n, causal, scale);
    s2 = mask_row(s2, r0 + 2u, key, kend, n, causal, scale);
    s3 = mask_row(s3, r0 + 3u, key, kend, n, causal, scale);
    pt[ty * TX + tx] = vec4<f32>(max4(s0), max4(s1), max4(s2), max4(s3));
    workgroupBarrier();
    var m_new = m;
    for (var x = 0u; x < TX; x++) { m_new = max(m_new, pt[ty * TX + x]); }
    workgroupBarrier();  // maxima read, K tile no longer needed

    // Rescale what was summed so far, then P = exp(S - m_new).
    let alpha = select(vec4<f32>(0.0), exp(m - m_new), m > vec4<f32>(NEG_BIG));
    l *= alpha;
    o0 *= alpha.x;
    o1 *= alpha.y;
    o2 *= alpha.z;
    o3 *= alpha.w;
    o4 *= alpha.x;
    o5 *= alpha.y;
    o6 *= alpha.z;
    o7 *= alpha.w;
    o8 *= alpha.x;
    o9 *= alpha.y;
    o10 *= alpha.z;
    o11 *= alpha.w;
    o12 *= alpha.x;
    o13 *= alpha.y;
    o14 *= alpha.z;
    o15 *= alpha.w;
    let p0 = p_row(s0, m_new.x);
    let p1 = p_row(s1, m_new.y);
    let p2 = p_row(s2, m_new.z);
    let p3 = p_row(s3, m_new.w);
    let one = vec4<f32>(1.0);
    l += vec4<f32>(dot(p0, one), dot(p1, one), dot(p2, one), dot(p3, one));
    for (var j = 0u; j < 4u; j++) { pt[(4u * tx + j) * TY + ty] = column(p0, p1, p2, p3, j); }
    m = m_new;

    // O micro-tile += P V, one chunk of d at a time (NCH is a constant: the ifs fold away).
    load_v_chunk(0u, key0, kend, base4, li, threads);
    workgroupBarrier();
    for (var kk = 0u; kk < BC; kk++) {
      let a = pt[kk * TY + ty];
      let b = kv[kk * TX + tx];
      o0 = fma(vec4<f32>(a.x), b, o0);
      o1 = fma(vec4<f32>(a.y), b, o1);
      o2 = fma(vec4<f32>(a.z), b, o2);
      o3 = fma(vec4<f32>(a.w), b, o3);
    }
    if (NCH > 1u) {
      workgroupBarrier();
      load_v_chunk(1u, key0, kend, base4, li, threads);
      workgroupBarrier();
      for (var kk = 0u; kk < BC; kk++) {
        let a = pt[kk * TY + ty];
        let b = kv[kk * TX + tx];
        o4 = fma(vec4<f32>(a.x), b, o4);
        o5 = fma(vec4<f32>(a.y), b, o5);
        o6 = fma(vec4<f32>(a.z), b, o6);
        o7 = fma(vec4<f32>(a.w), b, o7);
      }
    }
    if (NCH > 2u) {
      workgroupBarrier();
      load_v_chunk(2u, key0, kend, base4, li, threads);
      workgroupBarrier();
      for (var kk = 0u; kk < BC; kk++) {
        let a = pt[kk * TY + ty];
        let b = kv[kk * TX + tx];
        o8 = fma(vec4<f32>(a.x), b, o8);
        o9 = fma(vec4<f32>(a.y), b, o9);
        o10 = fma(vec4<f32>(a.z), b, o10);
        o11 = fma(vec4<f32>(a.w), b, o11);
      }
    }
    if (NCH > 3u) {
      workgroupBarrier();
      load_v_chunk(3u, key0, kend, base4, li, threads);
      workgroupBarrier();
      for (var kk = 0u; kk < BC; kk++) {
        let a = pt[kk * TY + ty];
        let b = kv[kk * TX + tx];
        o12 = fma(vec4<f32>(a.x), b, o12);
        o13 = fma(vec4<f32>(a.y), b, o13);
        o14 = fma(vec4<f32>(a.z), b, o14);
        o15 = fma(vec4<f32>(a.w), b, o15);
      }
    }
  }

  // Row sums: add up the TX shares. Writes O: r * d elements.
  workgroupBarrier();
  pt[ty * TX + tx] = l;
  workgroupBarrier();
  var total = vec4<f32>(0.0);
  for (var x = 0u; x < TX; x++) { total += pt[ty * TX + x]; }
  let inv = select(vec4<f32>(0.0), vec4<f32>(1.0) / total, total > vec4<f32>(0.0));
  let r0 = row0 + 4u * ty;
  store_rows(r0, n, base4, tx, o0 * inv.x, o1 * inv.y, o2 * inv.z, o3 * inv.w);
  if (NCH > 1u) { store_rows(r0, n, base4, TX + tx, o4 * inv.x, o5 * inv.y, o6 * inv.z, o7 * inv.w); }
  if (NCH > 2u) { store_rows(r0, n, base4, 2u * TX + tx, o8 * inv.x, o9 * inv.y, o10 * inv.z, o11 * inv.w); }
  if (NCH > 3u) { store_rows(r0, n, base4, 3u * TX + tx, o12 * inv.x, o13 * inv.y, o14 * inv.z, o15 * inv.w); }
}
