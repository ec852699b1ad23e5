// parts/fused_body.wgsl: the body of the lesson's fused kernel, shared by fused.wgsl
// (any device) and fused_lanes.wgsl (devices with subgroups): bindings, counted loaders,
// workgroup memory and main. fused.wgsl's opening comment describes the kernel: tiling,
// lanes, streams, traffic, masking.
//
// The including file includes parts/header.wgsl and parts/fused_tiles.wgsl first, then
// gives the two things the variants differ in:
// * override NBUF: u32, the K and V buffers (1 or 2), declared before this part (Naga
//   wants an override declared before its first use);
// * fn lanes_sum(li: u32, sc: mat4x4<f32>) -> mat4x4<f32>: column i of sc holds this
//   lane's partial scores of row ty R + i against four keys; it returns them summed over
//   the TD lanes of the row group. Called in uniform control flow.

// #include "parts/walk.wgsl"

const LOG2E: f32 = 1.4426950408889634;

// #include "parts/qkv.wgsl"

@group(0) @binding(4) var<storage, read_write> o: array<vec4<f32>>;  // (H, N, d)

fn store_o(i: u32, x: vec4<f32>) { tally(11u, 4u); o[i] = x; }

// M bytes: the Q tile, then buffers b of K (part 0) and V (part 1), the lanes' partial
// scores, and the merge.
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

// Mask one row of scores: local keys past the tile, keys past kend or past the row
// (causal), rows past N.
fn mask_row(s: vec4<f32>, row: u32, kl: vec4<u32>, keys: vec4<u32>, kend: u32, n: u32,
            causal: bool) -> vec4<f32> {
  var ok = keys < vec4<u32>(kend);
  if (BC % (4u * TX) != 0u) { ok = ok & (kl < vec4<u32>(BC)); }
  if (causal) { ok = ok & (keys <= vec4<u32>(row)); }
  ok = ok & vec4<bool>(row < n);
  return select(vec4<f32>(NEG_BIG), s, ok);
}

fn p_row(s: vec4<f32>, m: f32) -> vec4<f32> {
  return select(vec4<f32>(0.0), exp2(s - vec4<f32>(m)), s > vec4<f32>(NEG_BIG));
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
  let me = work(wg, D4, BR);
  let my = lane_of(li, TD);
  let x = my.group % TX;        // its stream
  let ty = my.group / TX;       // its row group
  let ra = me.first + ty * R;  // this invocation's rows: ra .. ra + R - 1
  let kend = key_end(me.first, me.n, me.causal);
  let tiles = (kend + BC - 1u) / BC;

  // Q tile through workgroup memory (each element read once), then into registers scaled
  // for exp2: q{i}{c} = row ra + i, column group c TD + lane. Reads Q: r * d elements.
  for (var e = li; e < BR * D4; e += THREADS) {
    var xq = vec4<f32>(0.0);
    if (me.first + e / D4 < me.n) { xq = load_q(me.base4 + me.first * D4 + e); }
    kv[e] = xq;
  }
  workgroupBarrier();
  let qs = LOG2E / sqrt(f32(D));
  let qa = (ty * R) * D4 + my.lane;
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
    put(0u, e, fetch(0u, e, 0u, kend, me.base4), fetch(1u, e, 0u, kend, me.base4));
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
    let b = t % NBUF;
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
      nk0 = fetch(0u, li, key1, kend, me.base4);
      nv0 = fetch(1u, li, key1, kend, me.base4);
      if (LPT > 1u) {
        nk1 = fetch(0u, li + THREADS, key1, kend, me.base4);
        nv1 = fetch(1u, li + THREADS, key1, kend, me.base4);
      }
      if (LPT > 2u) {
        nk2 = fetch(0u, li + 2u * THREADS, key1, kend, me.base4);
        nv2 = fetch(1u, li + 2u * THREADS, key1, kend, me.base4);
        nk3 = fetch(0u, li + 3u * THREADS, key1, kend, me.base4);
        nv3 = fetch(1u, li + 3u * THREADS, key1, kend, me.base4);
      }
    }

    for (var g = 0u; g < KG; g++) {
      let kl = (vec4<u32>(4u * g) + vec4<u32>(0u, 1u, 2u, 3u)) * TX + vec4<u32>(x);
      var kr = kl;  // where a ragged last group reads (masked below)
      if (BC % (4u * TX) != 0u) { kr = min(kl, vec4<u32>(BC - 1u)); }
      let keys = vec4<u32>(key0) + kl;
      // Partial scores over this lane's 16 columns: row i, keys kl.
      var s0 = vec4<f32>(0.0);
      var s1 = vec4<f32>(0.0);
      var s2 = vec4<f32>(0.0);
      var s3 = vec4<f32>(0.0);
      var km = keys4(b, 0u, kr, my.lane);
      s0 += q00 * km;
      if (R > 1u) { s1 += q10 * km; }
      if (R > 2u) { s2 += q20 * km; s3 += q30 * km; }
      km = keys4(b, 0u, kr, TD + my.lane);
      s0 += q01 * km;
      if (R > 1u) { s1 += q11 * km; }
      if (R > 2u) { s2 += q21 * km; s3 += q31 * km; }
      km = keys4(b, 0u, kr, 2u * TD + my.lane);
      s0 += q02 * km;
      if (R > 1u) { s1 += q12 * km; }
      if (R > 2u) { s2 += q22 * km; s3 += q32 * km; }
      km = keys4(b, 0u, kr, 3u * TD + my.lane);
      s0 += q03 * km;
      if (R > 1u) { s1 += q13 * km; }
      if (R > 2u) { s2 += q23 * km; s3 += q33 * km; }
      // Whole scores: sum over the lanes (workgroup-uniform control flow).
      let whole = lanes_sum(li, mat4x4<f32>(s0, s1, s2, s3));
      s0 = mask_row(whole[0], ra, kl, keys, kend, me.n, me.causal);
      s1 = vec4<f32>(NEG_BIG);
      s2 = vec4<f32>(NEG_BIG);
      s3 = vec4<f32>(NEG_BIG);
      if (R > 1u) { s1 = mask_row(whole[1], ra + 1u, kl, keys, kend, me.n, me.causal); }
      if (R > 2u) {
        s2 = mask_row(whole[2], ra + 2u, kl, keys, kend, me.n, me.causal);
        s3 = mask_row(whole[3], ra + 3u, kl, keys, kend, me.n, me.causal);
      }

      // Online softmax for this stream (rows as the components of m and l); with RESCALE,
      // l and O are rescaled when a max moved.
      let m_new = max(m, vec4<f32>(max4(s0), max4(s1), max4(s2), max4(s3)));
      if (any(m_new > m)) {
        if (RESCALE) {
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
      var vm = keys4(b, 1u, kr, my.lane);
      o00 += vm * p0;
      if (R > 1u) { o10 += vm * p1; }
      if (R > 2u) { o20 += vm * p2; o30 += vm * p3; }
      vm = keys4(b, 1u, kr, TD + my.lane);
      o01 += vm * p0;
      if (R > 1u) { o11 += vm * p1; }
      if (R > 2u) { o21 += vm * p2; o31 += vm * p3; }
      vm = keys4(b, 1u, kr, 2u * TD + my.lane);
      o02 += vm * p0;
      if (R > 1u) { o12 += vm * p1; }
      if (R > 2u) { o22 += vm * p2; o32 += vm * p3; }
      vm = keys4(b, 1u, kr, 3u * TD + my.lane);
      o03 += vm * p0;
      if (R > 1u) { o13 += vm * p1; }
      if (R > 2u) { o23 += vm * p2; o33 += vm * p3; }
    }

    // Store the next tile: into the other buffer (last read before the previous barrier),
    // or, single-buffered, into this one once every invocation is done with it.
    if (NBUF == 1u) { workgroupBarrier(); }
    if (t + 1u < tiles) {
      let nb = (t + 1u) % NBUF;
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
  for (var xs = 0u; xs < TX; xs++) { m_row = max(m_row, kv[(ty * TX + xs) * TD + my.lane]); }
  let w = select(vec4<f32>(0.0), exp2(m - m_row), m > vec4<f32>(NEG_BIG));
  workgroupBarrier();
  kv[li] = l * w;
  workgroupBarrier();
  var l_row = vec4<f32>(0.0);
  for (var xs = 0u; xs < TX; xs++) { l_row += kv[(ty * TX + xs) * TD + my.lane]; }
  let f = w * select(vec4<f32>(0.0), vec4<f32>(1.0) / l_row, l_row > vec4<f32>(0.0));
  workgroupBarrier();
  merge_row(ra, li, my.lane, x, ty, me.n, me.base4, o00 * f.x, o01 * f.x, o02 * f.x, o03 * f.x);
  if (R > 1u) { merge_row(ra + 1u, li, my.lane, x, ty, me.n, me.base4, o10 * f.y, o11 * f.y, o12 * f.y, o13 * f.y); }
  if (R > 2u) {
    merge_row(ra + 2u, li, my.lane, x, ty, me.n, me.base4, o20 * f.z, o21 * f.z, o22 * f.z, o23 * f.z);
    merge_row(ra + 3u, li, my.lane, x, ty, me.n, me.base4, o30 * f.w, o31 * f.w, o32 * f.w, o33 * f.w);
  }
}
