// parts/fused_reg_body.wgsl: the body of the register-tiled fused kernel, shared by
// fused_reg.wgsl (any device) and fused_reg_lanes.wgsl (devices with subgroups): override
// constants, bindings, counted loaders, workgroup memory and main. fused_reg.wgsl's opening
// comment describes the kernel: tiling, blocks, traffic, masking.
//
// The including file includes parts/header.wgsl first, declares const MAX_BARRIER: bool
// (whether row_max ends with a workgroup barrier), and gives after this part
// * fn row_max(li: u32, ty: u32, x: vec4<f32>) -> vec4<f32> and fn row_sum(...) likewise:
//   x's components (one per row of the block) combined over the TXK invocations of row
//   group ty (max, sum). Called in uniform control flow.

override D: u32 = 64u;       // head dimension d: 16, 32, 64 or 128
override BR: u32 = 64u;      // B_r: query rows per workgroup, a multiple of TM
override BC: u32 = 32u;      // B_c: keys per tile, a multiple of 16 with B_c / 4 <= d / 4
override D4: u32 = D / 4u;   // vec4s in a row
override TXK: u32 = BC / 4u; // invocations across keys (and across column groups of O)
override TM: u32 = 4u;       // query rows an invocation keeps: 4 or 8
override TY: u32 = BR / TM;  // row groups
override THREADS: u32 = TXK * TY;
override OC: u32 = D4 / TXK; // vec4 column groups of O an invocation keeps: 1, 2 or 4
override QPAD: u32 = 1u;     // vec4s of padding after each row of the Q tile
override KPAD: u32 = 1u;     // and of the K and V tiles
override KSWZ: u32 = 0u;     // column groups of key kl sit at cg ^ (kl & KSWZ) (a bank swizzle)
override PPAD: u32 = 1u;     // vec4s of padding after each row of the P tile
override QS: u32 = D4 + QPAD;  // row stride (vec4s) of the Q tile
override KS: u32 = D4 + KPAD;  // row stride (vec4s) of the K and V tiles
override PS4: u32 = TXK + PPAD;  // row stride (vec4s) of the P tile
override LPT: u32 = (BC * D4 + THREADS - 1u) / THREADS;  // vec4s of K (and of V) an invocation loads
override QPT: u32 = (BR * D4 + THREADS - 1u) / THREADS;  // vec4s of Q an invocation loads
override SHARE: bool = false;  // the V tile takes the K tile's place once the scores are done
override VB: u32 = select(BC * KS, 0u, SHARE);  // where the V tile starts in kvt
// Hold the next tiles' vec4s in registers during the arithmetic, stored after it: the next K
// and V (at most 4 vec4s of each an invocation); with SHARE, this tile's V during the scores
// and the next tile's K during P V (at most 8).
override PREFETCH: bool = LPT <= 4u || (SHARE && LPT <= 8u);
override DIAG: u32 = 0u;  // benchmarks only (wrong output): 1 one column group of the scores, 2 no P V
override KVN: u32 = select(2u, 1u, SHARE) * BC * KS;  // vec4s of kvt

// #include "parts/walk.wgsl"

const LOG2E: f32 = 1.4426950408889634;

// #include "parts/qkv.wgsl"

@group(0) @binding(4) var<storage, read_write> o: array<vec4<f32>>;  // (H, N, d)

fn store_o(i: u32, x: vec4<f32>) { tally(11u, 4u); o[i] = x; }

var<workgroup> qt: array<vec4<f32>, BR * QS>;   // Q tile, scaled: [row][column group]
// K tile [key][column group], then the V tile likewise (at VB: in K's place with SHARE).
var<workgroup> kvt: array<vec4<f32>, KVN>;
var<workgroup> pt: array<vec4<f32>, BR * PS4>;  // P tile: [row][group of 4 keys]

fn max4(x: vec4<f32>) -> f32 { return max(max(x.x, x.y), max(x.z, x.w)); }

// Row i of the block against keys kj: s where visible (key < kend, key <= row under
// causal, row < N), NEG_BIG elsewhere.
fn mask_row(s: vec4<f32>, row: u32, keys: vec4<u32>, kend: u32, n: u32, causal: bool) -> vec4<f32> {
  var ok = keys < vec4<u32>(kend);
  if (causal) { ok = ok & (keys <= vec4<u32>(row)); }
  ok = ok & vec4<bool>(row < n);
  return select(vec4<f32>(NEG_BIG), s, ok);
}

// Probabilities of one masked row: 0 where masked.
fn p_masked(s: vec4<f32>, m: f32) -> vec4<f32> {
  return select(vec4<f32>(0.0), exp2(s - vec4<f32>(m)), s > vec4<f32>(NEG_BIG));
}

// Load the K (part 0) or V (part 1) tile at key0, zero past kend, into workgroup memory.
fn load_tile(part: u32, li: u32, key0: u32, kend: u32, base4: u32) {
  for (var i = 0u; i < LPT; i++) {
    let e = li + i * THREADS;
    if (e < BC * D4) {
      let kl = e / D4;
      let cg = e % D4;
      var x = vec4<f32>(0.0);
      if (key0 + kl < kend) {
        let g = base4 + (key0 + kl) * D4 + cg;
        if (part == 0u) { x = load_k(g); } else { x = load_v(g); }
      }
      kvt[part * VB + kl * KS + (cg ^ (kl & KSWZ))] = x;
    }
  }
}

// One vec4 (e) of the K (part 0) or V (part 1) tile at key0, zero past kend or the tile.
fn fetch(part: u32, e: u32, key0: u32, kend: u32, base4: u32) -> vec4<f32> {
  var x = vec4<f32>(0.0);
  let kl = e / D4;
  if (e < BC * D4 && key0 + kl < kend) {
    let g = base4 + (key0 + kl) * D4 + e % D4;
    if (part == 0u) { x = load_k(g); } else { x = load_v(g); }
  }
  return x;
}
fn put(part: u32, e: u32, x: vec4<f32>) {
  let kl = e / D4;
  if (e < BC * D4) { kvt[part * VB + kl * KS + ((e % D4) ^ (kl & KSWZ))] = x; }
}

// Where column group cg of key kl of the K tile sits (add VB for the V tile).
fn at(kl: u32, cg: u32) -> u32 { return kl * KS + (cg ^ (kl & KSWZ)); }

// The four keys tx + TXK j of the block, column group cg, as the columns of a matrix.
fn keys4(tx: u32, cg: u32) -> mat4x4<f32> {
  return mat4x4<f32>(kvt[at(tx, cg)], kvt[at(tx + TXK, cg)], kvt[at(tx + 2u * TXK, cg)],
                     kvt[at(tx + 3u * TXK, cg)]);
}

// Write row r's four probabilities (keys tx + TXK j) into the P tile.
fn put_p(r: u32, tx: u32, p: vec4<f32>) {
  let a = r * PS4 + tx / 4u;
  let c = tx % 4u;
  pt[a][c] = p.x;
  pt[a + TXK / 4u][c] = p.y;
  pt[a + 2u * (TXK / 4u)][c] = p.z;
  pt[a + 3u * (TXK / 4u)][c] = p.w;
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let me = work(wg, D4, BR);
  let tx = li % TXK;
  let ty = li / TXK;
  let kend = key_end(me.first, me.n, me.causal);
  let tiles = (kend + BC - 1u) / BC;
  let rows_in = me.first + BR <= me.n;  // every row of the tile is below N
  // This invocation's rows: ty + TY i (local), ra + TY i (global), i < TM.
  let ra = me.first + ty;

  // Q tile, scaled for exp2. Reads Q: r * d elements.
  let qs = LOG2E / sqrt(f32(D));
  for (var i = 0u; i < QPT; i++) {
    let e = li + i * THREADS;
    if (e < BR * D4) {
      var xq = vec4<f32>(0.0);
      if (me.first + e / D4 < me.n) { xq = load_q(me.base4 + me.first * D4 + e); }
      qt[(e / D4) * QS + e % D4] = xq * qs;
    }
  }
  load_tile(0u, li, 0u, kend, me.base4);
  if (!SHARE) { load_tile(1u, li, 0u, kend, me.base4); }
  workgroupBarrier();

  // Running max (base 2) and this invocation's part of the running sum of rows ra + TY i:
  // component i of ma and la (i < 4), i - 4 of mb and lb (TM = 8).
  var ma = vec4<f32>(NEG_BIG);
  var mb = vec4<f32>(NEG_BIG);
  var la = vec4<f32>(0.0);
  var lb = vec4<f32>(0.0);
  // O: o{i}{c} = row ra + TY i, column group tx + TXK c.
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
  var o40 = vec4<f32>(0.0);
  var o41 = vec4<f32>(0.0);
  var o42 = vec4<f32>(0.0);
  var o43 = vec4<f32>(0.0);
  var o50 = vec4<f32>(0.0);
  var o51 = vec4<f32>(0.0);
  var o52 = vec4<f32>(0.0);
  var o53 = vec4<f32>(0.0);
  var o60 = vec4<f32>(0.0);
  var o61 = vec4<f32>(0.0);
  var o62 = vec4<f32>(0.0);
  var o63 = vec4<f32>(0.0);
  var o70 = vec4<f32>(0.0);
  var o71 = vec4<f32>(0.0);
  var o72 = vec4<f32>(0.0);
  var o73 = vec4<f32>(0.0);
  let q0 = ty * QS;
  let q1 = (ty + TY) * QS;
  let q2 = (ty + 2u * TY) * QS;
  let q3 = (ty + 3u * TY) * QS;
  let q4 = (ty + 4u * TY) * QS;
  let q5 = (ty + 5u * TY) * QS;
  let q6 = (ty + 6u * TY) * QS;
  let q7 = (ty + 7u * TY) * QS;

  for (var t = 0u; t < tiles; t++) {
    let key0 = t * BC;
    let more = t + 1u < tiles;
    // Prefetch (PREFETCH): x{i} the next K tile's vec4s li + i THREADS, or with SHARE this
    // tile's V (then the next K, below); y{i} the next V.
    // #include "parts/next_regs.wgsl"
    var y0 = vec4<f32>(0.0);
    var y1 = vec4<f32>(0.0);
    var y2 = vec4<f32>(0.0);
    var y3 = vec4<f32>(0.0);
    if (PREFETCH) {
      if (SHARE) {
        x0 = fetch(1u, li, key0, kend, me.base4);
        if (LPT > 1u) { x1 = fetch(1u, li + THREADS, key0, kend, me.base4); }
        if (LPT > 2u) { x2 = fetch(1u, li + 2u * THREADS, key0, kend, me.base4); }
        if (LPT > 3u) { x3 = fetch(1u, li + 3u * THREADS, key0, kend, me.base4); }
        if (LPT > 4u) { x4 = fetch(1u, li + 4u * THREADS, key0, kend, me.base4); }
        if (LPT > 5u) { x5 = fetch(1u, li + 5u * THREADS, key0, kend, me.base4); }
        if (LPT > 6u) { x6 = fetch(1u, li + 6u * THREADS, key0, kend, me.base4); }
        if (LPT > 7u) { x7 = fetch(1u, li + 7u * THREADS, key0, kend, me.base4); }
      } else if (more) {
        x0 = fetch(0u, li, key0 + BC, kend, me.base4);
        if (LPT > 1u) { x1 = fetch(0u, li + THREADS, key0 + BC, kend, me.base4); }
        if (LPT > 2u) { x2 = fetch(0u, li + 2u * THREADS, key0 + BC, kend, me.base4); }
        if (LPT > 3u) { x3 = fetch(0u, li + 3u * THREADS, key0 + BC, kend, me.base4); }
        y0 = fetch(1u, li, key0 + BC, kend, me.base4);
        if (LPT > 1u) { y1 = fetch(1u, li + THREADS, key0 + BC, kend, me.base4); }
        if (LPT > 2u) { y2 = fetch(1u, li + 2u * THREADS, key0 + BC, kend, me.base4); }
        if (LPT > 3u) { y3 = fetch(1u, li + 3u * THREADS, key0 + BC, kend, me.base4); }
      }
    }
    // S block: rows ty + TY i, keys tx + TXK j (component j of s{i}).
    var s0 = vec4<f32>(0.0);
    var s1 = vec4<f32>(0.0);
    var s2 = vec4<f32>(0.0);
    var s3 = vec4<f32>(0.0);
    var s4 = vec4<f32>(0.0);
    var s5 = vec4<f32>(0.0);
    var s6 = vec4<f32>(0.0);
    var s7 = vec4<f32>(0.0);
    for (var cg = 0u; cg < select(D4, 1u, (DIAG & 1u) != 0u); cg++) {
      let km = keys4(tx, cg);
      s0 += qt[q0 + cg] * km;
      s1 += qt[q1 + cg] * km;
      s2 += qt[q2 + cg] * km;
      s3 += qt[q3 + cg] * km;
      if (TM > 4u) {
        s4 += qt[q4 + cg] * km;
        s5 += qt[q5 + cg] * km;
        s6 += qt[q6 + cg] * km;
        s7 += qt[q7 + cg] * km;
      }
    }
    let inside = !me.causal && rows_in && key0 + BC <= kend;
    if (!inside) {
      let keys = vec4<u32>(key0 + tx) + vec4<u32>(0u, TXK, 2u * TXK, 3u * TXK);
      s0 = mask_row(s0, ra, keys, kend, me.n, me.causal);
      s1 = mask_row(s1, ra + TY, keys, kend, me.n, me.causal);
      s2 = mask_row(s2, ra + 2u * TY, keys, kend, me.n, me.causal);
      s3 = mask_row(s3, ra + 3u * TY, keys, kend, me.n, me.causal);
      if (TM > 4u) {
        s4 = mask_row(s4, ra + 4u * TY, keys, kend, me.n, me.causal);
        s5 = mask_row(s5, ra + 5u * TY, keys, kend, me.n, me.causal);
        s6 = mask_row(s6, ra + 6u * TY, keys, kend, me.n, me.causal);
        s7 = mask_row(s7, ra + 7u * TY, keys, kend, me.n, me.causal);
      }
    }
    // Row maxima over the tile: this invocation's, then its row group's.
    let mta = row_max(li, ty, vec4<f32>(max4(s0), max4(s1), max4(s2), max4(s3)));
    var mtb = vec4<f32>(NEG_BIG);
    if (TM > 4u) {
      if (MAX_BARRIER) { workgroupBarrier(); }  // every invocation has read red
      mtb = row_max(li, ty, vec4<f32>(max4(s4), max4(s5), max4(s6), max4(s7)));
    }
    let na = max(ma, mta);
    let nb = max(mb, mtb);
    let alpha = exp2(ma - na);  // 0 while m is NEG_BIG and the new max is not
    let beta = exp2(mb - nb);
    ma = na;
    mb = nb;
    var p0: vec4<f32>;
    var p1: vec4<f32>;
    var p2: vec4<f32>;
    var p3: vec4<f32>;
    var p4: vec4<f32>;
    var p5: vec4<f32>;
    var p6: vec4<f32>;
    var p7: vec4<f32>;
    if (inside) {
      p0 = exp2(s0 - vec4<f32>(ma.x));
      p1 = exp2(s1 - vec4<f32>(ma.y));
      p2 = exp2(s2 - vec4<f32>(ma.z));
      p3 = exp2(s3 - vec4<f32>(ma.w));
      p4 = exp2(s4 - vec4<f32>(mb.x));
      p5 = exp2(s5 - vec4<f32>(mb.y));
      p6 = exp2(s6 - vec4<f32>(mb.z));
      p7 = exp2(s7 - vec4<f32>(mb.w));
    } else {
      p0 = p_masked(s0, ma.x);
      p1 = p_masked(s1, ma.y);
      p2 = p_masked(s2, ma.z);
      p3 = p_masked(s3, ma.w);
      p4 = p_masked(s4, mb.x);
      p5 = p_masked(s5, mb.y);
      p6 = p_masked(s6, mb.z);
      p7 = p_masked(s7, mb.w);
    }
    let one = vec4<f32>(1.0);
    la = la * alpha + vec4<f32>(dot(p0, one), dot(p1, one), dot(p2, one), dot(p3, one));
    lb = lb * beta + vec4<f32>(dot(p4, one), dot(p5, one), dot(p6, one), dot(p7, one));
    put_p(ty, tx, p0);
    put_p(ty + TY, tx, p1);
    put_p(ty + 2u * TY, tx, p2);
    put_p(ty + 3u * TY, tx, p3);
    if (TM > 4u) {
      put_p(ty + 4u * TY, tx, p4);
      put_p(ty + 5u * TY, tx, p5);
      put_p(ty + 6u * TY, tx, p6);
      put_p(ty + 7u * TY, tx, p7);
    }
    o00 *= alpha.x;
    o10 *= alpha.y;
    o20 *= alpha.z;
    o30 *= alpha.w;
    if (OC > 1u) {
      o01 *= alpha.x;
      o11 *= alpha.y;
      o21 *= alpha.z;
      o31 *= alpha.w;
    }
    if (OC > 2u) {
      o02 *= alpha.x;
      o03 *= alpha.x;
      o12 *= alpha.y;
      o13 *= alpha.y;
      o22 *= alpha.z;
      o23 *= alpha.z;
      o32 *= alpha.w;
      o33 *= alpha.w;
    }
    if (TM > 4u) {
      o40 *= beta.x;
      o50 *= beta.y;
      o60 *= beta.z;
      o70 *= beta.w;
      if (OC > 1u) {
        o41 *= beta.x;
        o51 *= beta.y;
        o61 *= beta.z;
        o71 *= beta.w;
      }
      if (OC > 2u) {
        o42 *= beta.x;
        o43 *= beta.x;
        o52 *= beta.y;
        o53 *= beta.y;
        o62 *= beta.z;
        o63 *= beta.z;
        o72 *= beta.w;
        o73 *= beta.w;
      }
    }
    if (SHARE) {  // the scores are done: V takes K's place
      if (!MAX_BARRIER) { workgroupBarrier(); }
      if (PREFETCH) {
        put(1u, li, x0);
        if (LPT > 1u) { put(1u, li + THREADS, x1); }
        if (LPT > 2u) { put(1u, li + 2u * THREADS, x2); }
        if (LPT > 3u) { put(1u, li + 3u * THREADS, x3); }
        if (LPT > 4u) { put(1u, li + 4u * THREADS, x4); }
        if (LPT > 5u) { put(1u, li + 5u * THREADS, x5); }
        if (LPT > 6u) { put(1u, li + 6u * THREADS, x6); }
        if (LPT > 7u) { put(1u, li + 7u * THREADS, x7); }
        if (more) {
          x0 = fetch(0u, li, key0 + BC, kend, me.base4);
          if (LPT > 1u) { x1 = fetch(0u, li + THREADS, key0 + BC, kend, me.base4); }
          if (LPT > 2u) { x2 = fetch(0u, li + 2u * THREADS, key0 + BC, kend, me.base4); }
          if (LPT > 3u) { x3 = fetch(0u, li + 3u * THREADS, key0 + BC, kend, me.base4); }
          if (LPT > 4u) { x4 = fetch(0u, li + 4u * THREADS, key0 + BC, kend, me.base4); }
          if (LPT > 5u) { x5 = fetch(0u, li + 5u * THREADS, key0 + BC, kend, me.base4); }
          if (LPT > 6u) { x6 = fetch(0u, li + 6u * THREADS, key0 + BC, kend, me.base4); }
          if (LPT > 7u) { x7 = fetch(0u, li + 7u * THREADS, key0 + BC, kend, me.base4); }
        }
      } else {
        load_tile(1u, li, key0, kend, me.base4);
      }
    }
    workgroupBarrier();

    // O += P V: rows ty + TY i, column groups tx + TXK c.
    for (var kg = 0u; kg < select(TXK, 0u, (DIAG & 2u) != 0u); kg++) {
      let pp0 = pt[(ty) * PS4 + kg];
      let pp1 = pt[(ty + TY) * PS4 + kg];
      let pp2 = pt[(ty + 2u * TY) * PS4 + kg];
      let pp3 = pt[(ty + 3u * TY) * PS4 + kg];
      var pp4 = vec4<f32>(0.0);
      var pp5 = vec4<f32>(0.0);
      var pp6 = vec4<f32>(0.0);
      var pp7 = vec4<f32>(0.0);
      if (TM > 4u) {
        pp4 = pt[(ty + 4u * TY) * PS4 + kg];
        pp5 = pt[(ty + 5u * TY) * PS4 + kg];
        pp6 = pt[(ty + 6u * TY) * PS4 + kg];
        pp7 = pt[(ty + 7u * TY) * PS4 + kg];
      }
      let k4 = 4u * kg;
      let vm0 = mat4x4<f32>(kvt[VB + at(k4, tx)], kvt[VB + at(k4 + 1u, tx)], kvt[VB + at(k4 + 2u, tx)],
                              kvt[VB + at(k4 + 3u, tx)]);
      o00 += vm0 * pp0;
      o10 += vm0 * pp1;
      o20 += vm0 * pp2;
      o30 += vm0 * pp3;
      if (TM > 4u) {
        o40 += vm0 * pp4;
        o50 += vm0 * pp5;
        o60 += vm0 * pp6;
        o70 += vm0 * pp7;
      }
      if (OC > 1u) {
        let vm1 = mat4x4<f32>(kvt[VB + at(k4, tx + TXK)], kvt[VB + at(k4 + 1u, tx + TXK)], kvt[VB + at(k4 + 2u, tx + TXK)],
                                kvt[VB + at(k4 + 3u, tx + TXK)]);
        o01 += vm1 * pp0;
        o11 += vm1 * pp1;
        o21 += vm1 * pp2;
        o31 += vm1 * pp3;
        if (TM > 4u) {
          o41 += vm1 * pp4;
          o51 += vm1 * pp5;
          o61 += vm1 * pp6;
          o71 += vm1 * pp7;
        }
      }
      if (OC > 2u) {
        let vm2 = mat4x4<f32>(kvt[VB + at(k4, tx + 2u * TXK)], kvt[VB + at(k4 + 1u, tx + 2u * TXK)], kvt[VB + at(k4 + 2u, tx + 2u * TXK)],
                                kvt[VB + at(k4 + 3u, tx + 2u * TXK)]);
        o02 += vm2 * pp0;
        o12 += vm2 * pp1;
        o22 += vm2 * pp2;
        o32 += vm2 * pp3;
        if (TM > 4u) {
          o42 += vm2 * pp4;
          o52 += vm2 * pp5;
          o62 += vm2 * pp6;
          o72 += vm2 * pp7;
        }
      let vm3 = mat4x4<f32>(kvt[VB + at(k4, tx + 3u * TXK)], kvt[VB + at(k4 + 1u, tx + 3u * TXK)], kvt[VB + at(k4 + 2u, tx + 3u * TXK)],
                              kvt[VB + at(k4 + 3u, tx + 3u * TXK)]);
      o03 += vm3 * pp0;
      o13 += vm3 * pp1;
      o23 += vm3 * pp2;
      o33 += vm3 * pp3;
      if (TM > 4u) {
        o43 += vm3 * pp4;
        o53 += vm3 * pp5;
        o63 += vm3 * pp6;
        o73 += vm3 * pp7;
      }
      }
    }
    workgroupBarrier();
    if (more) {
      if (PREFETCH) {
        put(0u, li, x0);
        if (LPT > 1u) { put(0u, li + THREADS, x1); }
        if (LPT > 2u) { put(0u, li + 2u * THREADS, x2); }
        if (LPT > 3u) { put(0u, li + 3u * THREADS, x3); }
        if (LPT > 4u) { put(0u, li + 4u * THREADS, x4); }
        if (LPT > 5u) { put(0u, li + 5u * THREADS, x5); }
        if (LPT > 6u) { put(0u, li + 6u * THREADS, x6); }
        if (LPT > 7u) { put(0u, li + 7u * THREADS, x7); }
        if (!SHARE) {
          put(1u, li, y0);
          if (LPT > 1u) { put(1u, li + THREADS, y1); }
          if (LPT > 2u) { put(1u, li + 2u * THREADS, y2); }
          if (LPT > 3u) { put(1u, li + 3u * THREADS, y3); }
        }
      } else {
        load_tile(0u, li, key0 + BC, kend, me.base4);
        if (!SHARE) { load_tile(1u, li, key0 + BC, kend, me.base4); }
      }
    }
    workgroupBarrier();
  }

  // Row sums over the row group's invocations, then O / l for rows below N.
  let lta = row_sum(li, ty, la);
  var ltb = vec4<f32>(0.0);
  if (TM > 4u) { ltb = row_sum(li, ty, lb); }
  let fa = select(vec4<f32>(0.0), vec4<f32>(1.0) / lta, lta > vec4<f32>(0.0));
  let fb = select(vec4<f32>(0.0), vec4<f32>(1.0) / ltb, ltb > vec4<f32>(0.0));
  let ob = me.base4 + ra * D4 + tx;
  let rs = TY * D4;  // from one of this invocation's rows to the next, in vec4s
  if (ra < me.n) {
    store_o(ob, o00 * fa.x);
    if (OC > 1u) { store_o(ob + TXK, o01 * fa.x); }
    if (OC > 2u) { store_o(ob + 2u * TXK, o02 * fa.x); store_o(ob + 3u * TXK, o03 * fa.x); }
  }
  if (ra + TY < me.n) {
    store_o(ob + rs, o10 * fa.y);
    if (OC > 1u) { store_o(ob + rs + TXK, o11 * fa.y); }
    if (OC > 2u) { store_o(ob + rs + 2u * TXK, o12 * fa.y); store_o(ob + rs + 3u * TXK, o13 * fa.y); }
  }
  if (ra + 2u * TY < me.n) {
    store_o(ob + 2u * rs, o20 * fa.z);
    if (OC > 1u) { store_o(ob + 2u * rs + TXK, o21 * fa.z); }
    if (OC > 2u) { store_o(ob + 2u * rs + 2u * TXK, o22 * fa.z); store_o(ob + 2u * rs + 3u * TXK, o23 * fa.z); }
  }
  if (ra + 3u * TY < me.n) {
    store_o(ob + 3u * rs, o30 * fa.w);
    if (OC > 1u) { store_o(ob + 3u * rs + TXK, o31 * fa.w); }
    if (OC > 2u) { store_o(ob + 3u * rs + 2u * TXK, o32 * fa.w); store_o(ob + 3u * rs + 3u * TXK, o33 * fa.w); }
  }
  if (TM > 4u) {
    if (ra + 4u * TY < me.n) {
      store_o(ob + 4u * rs, o40 * fb.x);
      if (OC > 1u) { store_o(ob + 4u * rs + TXK, o41 * fb.x); }
      if (OC > 2u) { store_o(ob + 4u * rs + 2u * TXK, o42 * fb.x); store_o(ob + 4u * rs + 3u * TXK, o43 * fb.x); }
    }
    if (ra + 5u * TY < me.n) {
      store_o(ob + 5u * rs, o50 * fb.y);
      if (OC > 1u) { store_o(ob + 5u * rs + TXK, o51 * fb.y); }
      if (OC > 2u) { store_o(ob + 5u * rs + 2u * TXK, o52 * fb.y); store_o(ob + 5u * rs + 3u * TXK, o53 * fb.y); }
    }
    if (ra + 6u * TY < me.n) {
      store_o(ob + 6u * rs, o60 * fb.z);
      if (OC > 1u) { store_o(ob + 6u * rs + TXK, o61 * fb.z); }
      if (OC > 2u) { store_o(ob + 6u * rs + 2u * TXK, o62 * fb.z); store_o(ob + 6u * rs + 3u * TXK, o63 * fb.z); }
    }
    if (ra + 7u * TY < me.n) {
      store_o(ob + 7u * rs, o70 * fb.w);
      if (OC > 1u) { store_o(ob + 7u * rs + TXK, o71 * fb.w); }
      if (OC > 2u) { store_o(ob + 7u * rs + 2u * TXK, o72 * fb.w); store_o(ob + 7u * rs + 3u * TXK, o73 * fb.w); }
    }
  }
}
