// plain_reg_pv.wgsl: pass 3 of 3 of the register-tiled plain attention ("plain-reg" in
// manifest.json), O = P V, P read from global memory. The lesson's readable pass is
// plain_pv.wgsl; this one keeps a block of O in registers as fused_reg.wgsl does.
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Algorithm 0, line 3: "load P and V by
// blocks, compute O = P V, write O to HBM".
//
// Tiling (the kernel's B_r x B_c, the same as plain_reg_scores.wgsl): one workgroup per query
// tile of B_r rows, an inner loop over key tiles of B_c keys. Workgroup memory holds the
// tile's P (B_r rows of B_c floats; rows padded by PPAD vec4s, or unpadded with row lr's group
// of four keys g at g ^ (lr & PSWZ), so that neighbouring rows fall in other banks) and the V
// tile (B_c rows of d floats, padded by VPAD).
//
// Inside a workgroup (free: only global memory is counted): invocation li is (ty, tx),
// tx = li % TXO, ty = li / TXO, with TXO = min(d / 4, 16) invocations across the column
// groups (vec4s) of O and TY = B_r / TM row groups (TM = 4 rows an invocation, or 2 where 4
// would leave fewer than 128 invocations). It keeps a TM x OC block of vec4s of O in named
// registers, rows ty + TY i, column groups tx + TXO c (OC = d / (4 TXO): 1 or 2), like
// fused_reg.wgsl's O block: per group of four keys it reads one vec4 of P per row and 4 OC
// vec4s of V for 16 TM OC multiply-adds. Where an invocation's shares of a P tile and of a V
// tile are at most 8 vec4s each (PREFETCH), the next tile's P and V are loaded into
// registers during this tile's arithmetic and stored after it. Where N and kend are
// multiples of 4 (uniform over the workgroup), P is read as vec4s; otherwise one float at a
// time, through a component of the table viewed as array<vec4<f32>>.
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid rows whose
// visited key tiles cover keys [0, kend) (kend as in plain_reg_scores.wgsl):
//   per key tile      reads  P: r * keys_in_tile * 4 bytes
//                     reads  V: keys_in_tile * d * 4 bytes (vec4 loads, once each)
//   at the end        writes O: r * d * 4 bytes            (vec4 stores, once)
// so per head: P read once (the elements the softmax pass wrote), V read once per query tile,
// O written once: the manifest's "pv" formulas.
//
// Every barrier sits in control flow that depends only on override constants, uniforms and
// the workgroup id.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

// #include "parts/header.wgsl"

override D: u32 = 64u;       // head dimension d: 16, 32, 64 or 128
override BR: u32 = 64u;      // B_r: query rows per workgroup, a multiple of 4
override BC: u32 = 64u;      // B_c: keys per tile, a multiple of 4
override D4: u32 = D / 4u;   // vec4s in a row of V and O
override BC4: u32 = BC / 4u; // vec4s in a row of the P tile
override TXO: u32 = min(D4, 16u);  // invocations across column groups of O
override OC: u32 = D4 / TXO;       // column groups an invocation keeps: 1 or 2
override TM: u32 = select(4u, 2u, (BR / 4u) * TXO < 128u);  // rows an invocation keeps: 4 or 2
override TY: u32 = BR / TM;        // row groups
override THREADS: u32 = TXO * TY;
override PPAD: u32 = 0u;     // vec4s of padding after each row of the P tile
override PSWZ: u32 = 0u;     // group g of local row lr sits at g ^ (lr & PSWZ); below BC4
override VPAD: u32 = 0u;     // and of the V tile
override PS4: u32 = BC4 + PPAD;  // row stride (vec4s) of the P tile
override VS: u32 = D4 + VPAD;    // row stride (vec4s) of the V tile
override PPT: u32 = (BR * BC4 + THREADS - 1u) / THREADS;  // vec4s of P an invocation loads
override VPT: u32 = (BC * D4 + THREADS - 1u) / THREADS;   // vec4s of V an invocation loads
override PREFETCH: bool = PPT <= 8u && VPT <= 8u;  // the next tile in registers during this one

// #include "parts/walk.wgsl"

@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;        // (H, N, d)
@group(0) @binding(4) var<storage, read_write> o: array<vec4<f32>>;  // (H, N, d)
@group(0) @binding(6) var<storage, read> p: array<vec4<f32>>;        // (H_batch, N, N), whole vec4s

fn load_v(i: u32) -> vec4<f32> { tally(4u, 4u); return v[i]; }
fn load_p4(i4: u32) -> vec4<f32> { tally(8u, 4u); return p[i4]; }
fn load_p1(i: u32) -> f32 { tally(8u, 1u); return p[i / 4u][i % 4u]; }
fn store_o(i: u32, x: vec4<f32>) { tally(11u, 4u); o[i] = x; }

var<workgroup> pt: array<vec4<f32>, BR * PS4>;  // P tile: [row][group of 4 keys]
var<workgroup> vt: array<vec4<f32>, BC * VS>;   // V tile: [key][column group]

// Vec4 e of the P tile at key0 (row e / BC4, keys 4 (e % BC4) ..): zero past N, kend or the tile.
fn fetch_p(e: u32, row0: u32, key0: u32, kend: u32, n: u32, table: u32, whole: bool) -> vec4<f32> {
  var x = vec4<f32>(0.0);
  let row = row0 + e / BC4;
  let key = key0 + 4u * (e % BC4);
  if (e < BR * BC4 && row < n) {
    let off = table + row * n + key;
    if (whole) {
      if (key < kend) { x = load_p4(off / 4u); }
    } else {
      if (key < kend) { x.x = load_p1(off); }
      if (key + 1u < kend) { x.y = load_p1(off + 1u); }
      if (key + 2u < kend) { x.z = load_p1(off + 2u); }
      if (key + 3u < kend) { x.w = load_p1(off + 3u); }
    }
  }
  return x;
}
fn put_p(e: u32, x: vec4<f32>) {
  let lr = e / BC4;
  if (e < BR * BC4) { pt[lr * PS4 + ((e % BC4) ^ (lr & PSWZ))] = x; }
}

// Vec4 e of the V tile at key0, zero past kend or the tile.
fn fetch_v(e: u32, key0: u32, kend: u32, base4: u32) -> vec4<f32> {
  var x = vec4<f32>(0.0);
  let kl = e / D4;
  if (e < BC * D4 && key0 + kl < kend) { x = load_v(base4 + (key0 + kl) * D4 + e % D4); }
  return x;
}
fn put_v(e: u32, x: vec4<f32>) {
  if (e < BC * D4) { vt[(e / D4) * VS + e % D4] = x; }
}

fn load_tiles(li: u32, row0: u32, key0: u32, kend: u32, n: u32, table: u32, base4: u32, whole: bool) {
  for (var i = 0u; i < PPT; i++) { put_p(li + i * THREADS, fetch_p(li + i * THREADS, row0, key0, kend, n, table, whole)); }
  for (var i = 0u; i < VPT; i++) { put_v(li + i * THREADS, fetch_v(li + i * THREADS, key0, kend, base4)); }
}

// Keys 4 kg .. 4 kg + 3 of the V tile, column group cg, as the columns of a matrix: m * p
// is the sum of the four rows weighted by p.
fn vkeys(kg: u32, cg: u32) -> mat4x4<f32> {
  let a = 4u * kg * VS + cg;
  return mat4x4<f32>(vt[a], vt[a + VS], vt[a + 2u * VS], vt[a + 3u * VS]);
}

// Store row `row` of the block (column groups tx, tx + TXO); rows past N are not stored.
fn store_row(row: u32, n: u32, base4: u32, tx: u32, a: vec4<f32>, b: vec4<f32>) {
  if (row >= n) { return; }
  store_o(base4 + row * D4 + tx, a);
  if (OC > 1u) { store_o(base4 + row * D4 + tx + TXO, b); }
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let me = work(wg, D4, BR);
  let tx = li % TXO;
  let ty = li / TXO;
  let kend = key_end(me.first, me.n, me.causal);
  let tiles = (kend + BC - 1u) / BC;
  let whole = me.n % 4u == 0u && kend % 4u == 0u;

  // Tile 0: reads P, r * keys_in_tile elements, and V, keys_in_tile * d, per tile.
  load_tiles(li, me.first, 0u, kend, me.n, me.table, me.base4, whole);
  workgroupBarrier();

  // O: o{i}{c} = local row ty + TY i, column group tx + TXO c.
  var o00 = vec4<f32>(0.0);
  var o01 = vec4<f32>(0.0);
  var o10 = vec4<f32>(0.0);
  var o11 = vec4<f32>(0.0);
  var o20 = vec4<f32>(0.0);
  var o21 = vec4<f32>(0.0);
  var o30 = vec4<f32>(0.0);
  var o31 = vec4<f32>(0.0);
  let r0 = ty * PS4;
  let r1 = (ty + TY) * PS4;
  let r2 = (ty + 2u * TY) * PS4;
  let r3 = (ty + 3u * TY) * PS4;
  let w0 = ty & PSWZ;
  let w1 = (ty + TY) & PSWZ;
  let w2 = (ty + 2u * TY) & PSWZ;
  let w3 = (ty + 3u * TY) & PSWZ;

  for (var t = 0u; t < tiles; t++) {
    let key1 = (t + 1u) * BC;
    let more = t + 1u < tiles;
    // The next tile's P (x{i}) and V (y{i}) into registers now; stored after the arithmetic.
    // #include "parts/next_regs.wgsl"
    var y0 = vec4<f32>(0.0);
    var y1 = vec4<f32>(0.0);
    var y2 = vec4<f32>(0.0);
    var y3 = vec4<f32>(0.0);
    var y4 = vec4<f32>(0.0);
    var y5 = vec4<f32>(0.0);
    var y6 = vec4<f32>(0.0);
    var y7 = vec4<f32>(0.0);
    if (PREFETCH && more) {
      x0 = fetch_p(li, me.first, key1, kend, me.n, me.table, whole);
      if (PPT > 1u) { x1 = fetch_p(li + THREADS, me.first, key1, kend, me.n, me.table, whole); }
      if (PPT > 2u) { x2 = fetch_p(li + 2u * THREADS, me.first, key1, kend, me.n, me.table, whole); }
      if (PPT > 3u) { x3 = fetch_p(li + 3u * THREADS, me.first, key1, kend, me.n, me.table, whole); }
      if (PPT > 4u) { x4 = fetch_p(li + 4u * THREADS, me.first, key1, kend, me.n, me.table, whole); }
      if (PPT > 5u) { x5 = fetch_p(li + 5u * THREADS, me.first, key1, kend, me.n, me.table, whole); }
      if (PPT > 6u) { x6 = fetch_p(li + 6u * THREADS, me.first, key1, kend, me.n, me.table, whole); }
      if (PPT > 7u) { x7 = fetch_p(li + 7u * THREADS, me.first, key1, kend, me.n, me.table, whole); }
      y0 = fetch_v(li, key1, kend, me.base4);
      if (VPT > 1u) { y1 = fetch_v(li + THREADS, key1, kend, me.base4); }
      if (VPT > 2u) { y2 = fetch_v(li + 2u * THREADS, key1, kend, me.base4); }
      if (VPT > 3u) { y3 = fetch_v(li + 3u * THREADS, key1, kend, me.base4); }
      if (VPT > 4u) { y4 = fetch_v(li + 4u * THREADS, key1, kend, me.base4); }
      if (VPT > 5u) { y5 = fetch_v(li + 5u * THREADS, key1, kend, me.base4); }
      if (VPT > 6u) { y6 = fetch_v(li + 6u * THREADS, key1, kend, me.base4); }
      if (VPT > 7u) { y7 = fetch_v(li + 7u * THREADS, key1, kend, me.base4); }
    }

    // O += P V over the tile's groups of four keys.
    for (var kg = 0u; kg < BC4; kg++) {
      let pp0 = pt[r0 + (kg ^ w0)];
      let pp1 = pt[r1 + (kg ^ w1)];
      var pp2 = vec4<f32>(0.0);
      var pp3 = vec4<f32>(0.0);
      if (TM > 2u) {
        pp2 = pt[r2 + (kg ^ w2)];
        pp3 = pt[r3 + (kg ^ w3)];
      }
      let vm0 = vkeys(kg, tx);
      o00 += vm0 * pp0;
      o10 += vm0 * pp1;
      if (TM > 2u) {
        o20 += vm0 * pp2;
        o30 += vm0 * pp3;
      }
      if (OC > 1u) {
        let vm1 = vkeys(kg, tx + TXO);
        o01 += vm1 * pp0;
        o11 += vm1 * pp1;
        if (TM > 2u) {
          o21 += vm1 * pp2;
          o31 += vm1 * pp3;
        }
      }
    }
    workgroupBarrier();  // everyone is done with this P tile and V tile
    if (more) {
      if (PREFETCH) {
        put_p(li, x0);
        if (PPT > 1u) { put_p(li + THREADS, x1); }
        if (PPT > 2u) { put_p(li + 2u * THREADS, x2); }
        if (PPT > 3u) { put_p(li + 3u * THREADS, x3); }
        if (PPT > 4u) { put_p(li + 4u * THREADS, x4); }
        if (PPT > 5u) { put_p(li + 5u * THREADS, x5); }
        if (PPT > 6u) { put_p(li + 6u * THREADS, x6); }
        if (PPT > 7u) { put_p(li + 7u * THREADS, x7); }
        put_v(li, y0);
        if (VPT > 1u) { put_v(li + THREADS, y1); }
        if (VPT > 2u) { put_v(li + 2u * THREADS, y2); }
        if (VPT > 3u) { put_v(li + 3u * THREADS, y3); }
        if (VPT > 4u) { put_v(li + 4u * THREADS, y4); }
        if (VPT > 5u) { put_v(li + 5u * THREADS, y5); }
        if (VPT > 6u) { put_v(li + 6u * THREADS, y6); }
        if (VPT > 7u) { put_v(li + 7u * THREADS, y7); }
      } else {
        load_tiles(li, me.first, key1, kend, me.n, me.table, me.base4, whole);
      }
    }
    workgroupBarrier();
  }

  // Writes O: r * d elements.
  let ra = me.first + ty;
  store_row(ra, me.n, me.base4, tx, o00, o01);
  store_row(ra + TY, me.n, me.base4, tx, o10, o11);
  if (TM > 2u) {
    store_row(ra + 2u * TY, me.n, me.base4, tx, o20, o21);
    store_row(ra + 3u * TY, me.n, me.base4, tx, o30, o31);
  }
}
