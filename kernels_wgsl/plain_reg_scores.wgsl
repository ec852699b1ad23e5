// plain_reg_scores.wgsl: pass 1 of 3 of the register-tiled plain attention ("plain-reg" in
// manifest.json), S = Q K^T / sqrt(d) written to global memory. The lesson's readable pass is
// plain_scores.wgsl; this one keeps fused_reg.wgsl's register tiling, so that plain and fused
// are compared at the same craft.
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Algorithm 0, line 1: "load Q, K by
// blocks, compute S = Q K^T, write S to HBM". The next passes are plain_reg_softmax.wgsl
// (S -> P) and plain_reg_pv.wgsl (P V -> O).
//
// Tiling (manifest "plain-reg": explicit B_r x B_c per d, the same for its three passes): one
// workgroup per query tile of B_r rows, an inner loop over key tiles of B_c keys. Workgroup
// memory holds the Q tile (B_r rows of d floats) and the K tile (B_c rows), rows padded by
// QPAD and KPAD vec4s, or unpadded with key kl's column group cg at cg ^ (kl & KSWZ) (a bank
// swizzle, as in fused_reg.wgsl).
//
// Inside a workgroup (free: only global memory is counted): invocation li is (ty, tx),
// tx = li % TXK, ty = li / TXK, TXK = B_c / 4, TY = B_r / 4 (THREADS = TXK TY). It keeps a
// 4 x 4 block of S in named vec4 registers, rows ty + TY i, keys tx + TXK j: per column group
// (a vec4 of d) it reads 4 vec4s of Q and 4 of K from workgroup memory for 64 multiply-adds;
// neighbouring invocations read neighbouring keys, and the TXK invocations of a row group
// read the same Q (a broadcast). Where an invocation's share of a K tile is at most 8 vec4s
// (PREFETCH), the next K tile is loaded into registers during this tile's arithmetic and
// stored after it. The block's 16 scores are stored as single floats: for each (i, j) the
// TXK invocations of a row group store TXK neighbouring entries of one row of S.
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid rows
// whose visited key tiles cover keys [0, kend):
//   load Q tile       reads  Q: r * d * 4 bytes            (vec4 loads, once per query tile)
//   per key tile      reads  K: keys_in_tile * d * 4 bytes (vec4 loads, once each)
//                     writes S: r * keys_in_tile * 4 bytes
// so per head: Q read once, K read once per query tile, S written as r x kend blocks: the
// manifest's "scores" formulas, plain's, at this kernel's tiles. Full attention: kend = N;
// causal: kend = min(N, ceil(b / B_c) * B_c) with b one past the tile's last row; entries
// inside the block above the diagonal are written as NEG_BIG (a finite stand-in for -inf),
// and the softmax pass masks them by position, not by value. S is (H_batch, N, N) float32:
// the heads of one dispatch.
//
// Every barrier sits in control flow that depends only on override constants, uniforms and
// the workgroup id.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

// #include "parts/header.wgsl"

override D: u32 = 64u;       // head dimension d: 16, 32, 64 or 128
override BR: u32 = 64u;      // B_r: query rows per workgroup, a multiple of 4
override BC: u32 = 64u;      // B_c: keys per tile, a multiple of 4
override D4: u32 = D / 4u;   // vec4s in a row
override TXK: u32 = BC / 4u; // invocations across keys
override TY: u32 = BR / 4u;  // row groups
override THREADS: u32 = TXK * TY;
override QPAD: u32 = 0u;     // vec4s of padding after each row of the Q tile
override KPAD: u32 = 0u;     // and of the K tile
override KSWZ: u32 = 0u;     // column group cg of key kl sits at cg ^ (kl & KSWZ); below D4
override QS: u32 = D4 + QPAD;  // row stride (vec4s) of the Q tile
override KS: u32 = D4 + KPAD;  // row stride (vec4s) of the K tile
override LPT: u32 = (BC * D4 + THREADS - 1u) / THREADS;  // vec4s of K an invocation loads
override QPT: u32 = (BR * D4 + THREADS - 1u) / THREADS;  // vec4s of Q an invocation loads
override PREFETCH: bool = LPT <= 8u;  // the next K tile in registers during this one

// #include "parts/walk.wgsl"

@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;  // (H, N, d)
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;  // (H, N, d)
@group(0) @binding(5) var<storage, read_write> s: array<f32>;  // (H_batch, N, N)

fn load_q(i: u32) -> vec4<f32> { tally(0u, 4u); return q[i]; }
fn load_k(i: u32) -> vec4<f32> { tally(2u, 4u); return k[i]; }
fn store_s(i: u32, x: f32) { tally(7u, 1u); s[i] = x; }

var<workgroup> qt: array<vec4<f32>, BR * QS>;  // Q tile: [row][column group]
var<workgroup> kt: array<vec4<f32>, BC * KS>;  // K tile: [key][column group]

// Where column group cg of key kl of the K tile sits.
fn at(kl: u32, cg: u32) -> u32 { return kl * KS + (cg ^ (kl & KSWZ)); }

// One vec4 (e) of the K tile at key0, zero past kend or past the tile.
fn fetch(e: u32, key0: u32, kend: u32, base4: u32) -> vec4<f32> {
  var x = vec4<f32>(0.0);
  let kl = e / D4;
  if (e < BC * D4 && key0 + kl < kend) { x = load_k(base4 + (key0 + kl) * D4 + e % D4); }
  return x;
}
fn put(e: u32, x: vec4<f32>) {
  if (e < BC * D4) { kt[at(e / D4, e % D4)] = x; }
}
fn load_tile(li: u32, key0: u32, kend: u32, base4: u32) {
  for (var i = 0u; i < LPT; i++) { put(li + i * THREADS, fetch(li + i * THREADS, key0, kend, base4)); }
}

// The four keys tx + TXK j of the block, column group cg, as the columns of a matrix.
fn keys4(tx: u32, cg: u32) -> mat4x4<f32> {
  return mat4x4<f32>(kt[at(tx, cg)], kt[at(tx + TXK, cg)], kt[at(tx + 2u * TXK, cg)],
                     kt[at(tx + 3u * TXK, cg)]);
}

// Store one row of the block (keys key0 + tx + TXK j): rows past N and keys past kend are
// not stored; under causal a key past the row is stored as NEG_BIG.
fn store_row(x: vec4<f32>, row: u32, key0: u32, tx: u32, kend: u32, n: u32, causal: bool, base: u32) {
  if (row >= n) { return; }
  let keys = vec4<u32>(key0 + tx) + vec4<u32>(0u, TXK, 2u * TXK, 3u * TXK);
  let y = select(x, vec4<f32>(NEG_BIG), vec4<bool>(causal) & (keys > vec4<u32>(row)));
  let off = base + row * n;
  if (keys.x < kend) { store_s(off + keys.x, y.x); }
  if (keys.y < kend) { store_s(off + keys.y, y.y); }
  if (keys.z < kend) { store_s(off + keys.z, y.z); }
  if (keys.w < kend) { store_s(off + keys.w, y.w); }
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let me = work(wg, D4, BR);
  let tx = li % TXK;
  let ty = li / TXK;
  let kend = key_end(me.first, me.n, me.causal);
  let tiles = (kend + BC - 1u) / BC;
  let ra = me.first + ty;  // this invocation's rows: ra + TY i

  // Q tile. Reads Q: r * d elements. The products are divided by sqrt(d) as they are stored.
  let scale = 1.0 / sqrt(f32(D));
  for (var i = 0u; i < QPT; i++) {
    let e = li + i * THREADS;
    if (e < BR * D4) {
      var xq = vec4<f32>(0.0);
      if (me.first + e / D4 < me.n) { xq = load_q(me.base4 + me.first * D4 + e); }
      qt[(e / D4) * QS + e % D4] = xq;
    }
  }
  load_tile(li, 0u, kend, me.base4);
  workgroupBarrier();

  let q0 = ty * QS;
  let q1 = (ty + TY) * QS;
  let q2 = (ty + 2u * TY) * QS;
  let q3 = (ty + 3u * TY) * QS;
  for (var t = 0u; t < tiles; t++) {
    let key0 = t * BC;
    let key1 = key0 + BC;
    let more = t + 1u < tiles;
    // The next K tile's vec4s li + i THREADS into registers now; stored after the arithmetic.
    // #include "parts/next_regs.wgsl"
    if (PREFETCH && more) {
      x0 = fetch(li, key1, kend, me.base4);
      if (LPT > 1u) { x1 = fetch(li + THREADS, key1, kend, me.base4); }
      if (LPT > 2u) { x2 = fetch(li + 2u * THREADS, key1, kend, me.base4); }
      if (LPT > 3u) { x3 = fetch(li + 3u * THREADS, key1, kend, me.base4); }
      if (LPT > 4u) { x4 = fetch(li + 4u * THREADS, key1, kend, me.base4); }
      if (LPT > 5u) { x5 = fetch(li + 5u * THREADS, key1, kend, me.base4); }
      if (LPT > 6u) { x6 = fetch(li + 6u * THREADS, key1, kend, me.base4); }
      if (LPT > 7u) { x7 = fetch(li + 7u * THREADS, key1, kend, me.base4); }
    }
    // S block: rows ty + TY i, keys tx + TXK j (component j of s{i}).
    var s0 = vec4<f32>(0.0);
    var s1 = vec4<f32>(0.0);
    var s2 = vec4<f32>(0.0);
    var s3 = vec4<f32>(0.0);
    for (var cg = 0u; cg < D4; cg++) {
      let km = keys4(tx, cg);
      s0 += qt[q0 + cg] * km;
      s1 += qt[q1 + cg] * km;
      s2 += qt[q2 + cg] * km;
      s3 += qt[q3 + cg] * km;
    }
    // Writes S: r * keys_in_tile elements.
    store_row(s0 * scale, ra, key0, tx, kend, me.n, me.causal, me.table);
    store_row(s1 * scale, ra + TY, key0, tx, kend, me.n, me.causal, me.table);
    store_row(s2 * scale, ra + 2u * TY, key0, tx, kend, me.n, me.causal, me.table);
    store_row(s3 * scale, ra + 3u * TY, key0, tx, kend, me.n, me.causal, me.table);
    workgroupBarrier();  // everyone is done with this K tile
    if (more) {
      if (PREFETCH) {
        put(li, x0);
        if (LPT > 1u) { put(li + THREADS, x1); }
        if (LPT > 2u) { put(li + 2u * THREADS, x2); }
        if (LPT > 3u) { put(li + 3u * THREADS, x3); }
        if (LPT > 4u) { put(li + 4u * THREADS, x4); }
        if (LPT > 5u) { put(li + 5u * THREADS, x5); }
        if (LPT > 6u) { put(li + 6u * THREADS, x6); }
        if (LPT > 7u) { put(li + 7u * THREADS, x7); }
      } else {
        load_tile(li, key1, kend, me.base4);
      }
    }
    workgroupBarrier();
  }
}
