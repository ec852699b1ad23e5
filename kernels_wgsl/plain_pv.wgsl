// plain_pv.wgsl: pass 3 of 3 of plain attention, O = P V, P read from global memory.
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Algorithm 0, line 3: "load P and V
// by blocks, compute O = P V, write O to HBM".
//
// Tiling (the lesson preset, same B_r and B_c as plain_scores.wgsl): one workgroup per
// query tile of B_r rows; V tiles of B_c rows in workgroup memory (M/4), and the query
// tile's rows of P for KC = min(B_c, d, max(4, 4 CX / R)) keys of the tile at a time (at most
// M/2), both zero-padded to whole groups of 4 keys. The next chunk of P (4 floats an
// invocation) and, with the first chunk of a tile, its V tile (4 vec4s) are loaded into
// registers while this chunk is computed; any more, only at large M, are loaded after.
// (Holding 8 floats of P this way made SwiftShader's compiler run for minutes and lose the
// device, so the chunk is sized to 4.)
//
// Inside a workgroup: invocation (ty, cx) owns R query rows and CV column groups (vec4s)
// cx, cx + D4/CV, ... of O, named vec4 registers o{i}{c}. Per group of 4 keys it reads one
// vec4 of P per row and 4 vec4s of V per column group, for 16 R CV multiply-adds.
// R and CV grow with the tile (B_r d / 4 vec4s of O) so the workgroup keeps 128 to 256
// invocations at every M up to 65,536: 32 x 16 at d = 64 gives R = 2, CV = 2; at d = 16,
// R = 1 while the workgroup stays within 256 invocations (128 x 64: R = 1, CV = 2).
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid rows
// whose visited key tiles cover keys [0, kend) (kend as in plain_scores.wgsl):
//   per key tile      reads  V: keys_in_tile * d * 4 bytes (vec4 loads)
//                     reads  P: r * keys_in_tile * 4 bytes
//   at the end        writes O: r * d * 4 bytes            (vec4 stores)
// so per head: P read once (the elements the softmax pass wrote), V read once per query
// tile, O written once.
//
// The instrumented build (tests only) uncomments every "// @instrument: " line.

override D: u32 = 64u;    // head dimension d
override BR: u32 = 32u;   // B_r
override BC: u32 = 16u;   // B_c
override D4: u32 = D / 4u;
override NB: u32 = BR * D4;  // vec4s of O in the tile
override CV: u32 = select(select(1u, 2u, NB > 256u), 4u, NB > 1024u);
override CX: u32 = D4 / CV;  // column groups of a row, one per invocation
// At d = 16 one row an invocation while that keeps 256 invocations or fewer.
override R: u32 = select(select(select(1u, 2u, NB > 128u), 4u, NB > 512u && BR % 4u == 0u), 1u,
                         D == 16u && BR * CX <= 256u);
override THREADS: u32 = (BR / R) * CX;
override KC: u32 = min(min(BC, D), max(4u, 4u * CX / R));  // keys of P on the bench at a time
override KC4: u32 = (KC + 3u) / 4u;
override CHUNKS: u32 = (BC + KC - 1u) / KC;
override VROWS: u32 = CHUNKS * KC4 * 4u;  // rows of the V tile, zero past B_c
override PC: u32 = BR * KC4 * 4u;         // floats of a P chunk on the bench
override PPT: u32 = (PC + THREADS - 1u) / THREADS;          // of them each invocation loads
override VPT: u32 = (VROWS * D4 + THREADS - 1u) / THREADS;  // vec4s of V each invocation loads

// #include "parts/header.wgsl"
// #include "parts/walk.wgsl"

@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;        // (H, N, d)
@group(0) @binding(4) var<storage, read_write> o: array<vec4<f32>>;  // (H, N, d)
@group(0) @binding(6) var<storage, read> p: array<f32>;              // (H_batch, N, N)

fn load_v(i: u32) -> vec4<f32> { tally(4u, 4u); return v[i]; }
fn load_p(i: u32) -> f32 { tally(8u, 1u); return p[i]; }
fn store_o(i: u32, x: vec4<f32>) { tally(11u, 4u); o[i] = x; }

var<workgroup> v_tile: array<vec4<f32>, VROWS * D4>;  // [key][column group]
var<workgroup> p_tile: array<f32, PC>;                 // [row][key of the chunk]

// Four keys (kb .. kb + 3) of column group cg of V as the columns of a matrix: m * p is
// the sum of the four rows weighted by p.
fn vkeys(kb: u32, cg: u32) -> mat4x4<f32> {
  return mat4x4<f32>(v_tile[kb * D4 + cg], v_tile[(kb + 1u) * D4 + cg],
                     v_tile[(kb + 2u) * D4 + cg], v_tile[(kb + 3u) * D4 + cg]);
}

// P of local row lr at keys 4g .. 4g + 3 of the chunk on the bench.
fn p4(lr: u32, g: u32) -> vec4<f32> {
  let a = lr * KC4 * 4u + 4u * g;
  return vec4<f32>(p_tile[a], p_tile[a + 1u], p_tile[a + 2u], p_tile[a + 3u]);
}

// Element e of the P chunk of keys [kc0, kc0 + KC) of the tile at key0; zero where no
// key or row is (neighbouring invocations read neighbouring keys of a row).
fn fetch_p(e: u32, row0: u32, key0: u32, kc0: u32, kend: u32, n: u32, p_base: u32) -> f32 {
  var x = 0.0;
  let r = e / (KC4 * 4u);
  let kk = e % (KC4 * 4u);
  let key = key0 + kc0 + kk;
  if (e < PC && row0 + r < n && kk < KC && kc0 + kk < BC && key < kend) {
    x = load_p(p_base + (row0 + r) * n + key);
  }
  return x;
}
fn put_p(e: u32, x: f32) {
  if (e < PC) { p_tile[e] = x; }
}

// Vec4 e of the V tile at key0 (rows past B_c or kend are zero).
fn fetch_v(e: u32, key0: u32, kend: u32, base4: u32) -> vec4<f32> {
  var x = vec4<f32>(0.0);
  let kl = e / D4;
  if (e < VROWS * D4 && kl < BC && key0 + kl < kend) { x = load_v(base4 + (key0 + kl) * D4 + e % D4); }
  return x;
}
fn put_v(e: u32, x: vec4<f32>) {
  if (e < VROWS * D4) { v_tile[e] = x; }
}

fn store_row(row: u32, n: u32, base4: u32, cx: u32,
             a: vec4<f32>, b: vec4<f32>, c: vec4<f32>, e: vec4<f32>) {
  if (row >= n) { return; }
  store_o(base4 + row * D4 + cx, a);
  if (CV > 1u) { store_o(base4 + row * D4 + cx + CX, b); }
  if (CV > 2u) {
    store_o(base4 + row * D4 + cx + 2u * CX, c);
    store_o(base4 + row * D4 + cx + 3u * CX, e);
  }
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let me = work(wg, D4, BR);
  let my = lane_of(li, CX);
  let lr = my.group * R;  // local rows lr .. lr + R - 1

  let kend = key_end(me.first, me.n, me.causal);
  let tiles = (kend + BC - 1u) / BC;
  let steps = tiles * CHUNKS;  // step s: chunk s % CHUNKS of tile s / CHUNKS

  // Step 0: V tile 0 (reads V, keys_in_tile * d elements per tile) and its first P chunk
  // (reads P, r * keys_in_chunk elements per chunk).
  for (var i = 0u; i < VPT; i++) { put_v(li + i * THREADS, fetch_v(li + i * THREADS, 0u, kend, me.base4)); }
  for (var i = 0u; i < PPT; i++) { put_p(li + i * THREADS, fetch_p(li + i * THREADS, me.first, 0u, 0u, kend, me.n, me.table)); }
  workgroupBarrier();

  // O: o{i}{c} = local row lr + i, column group cx + c CX.
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

  for (var s = 0u; s < steps; s++) {
    let kc0 = (s % CHUNKS) * KC;  // first key of this chunk, in the tile
    // The next step's P chunk (and V tile, when it starts a tile) into registers now.
    let s1 = s + 1u;
    let key1 = (s1 / CHUNKS) * BC;
    let kc1 = (s1 % CHUNKS) * KC;
    let next = s1 < steps;
    let new_tile = next && kc1 == 0u;
    var np0 = vec4<f32>(0.0);
    var nv0 = vec4<f32>(0.0);
    var nv1 = vec4<f32>(0.0);
    var nv2 = vec4<f32>(0.0);
    var nv3 = vec4<f32>(0.0);
    if (next) {
      np0.x = fetch_p(li, me.first, key1, kc1, kend, me.n, me.table);
      if (PPT > 1u) { np0.y = fetch_p(li + THREADS, me.first, key1, kc1, kend, me.n, me.table); }
      if (PPT > 2u) { np0.z = fetch_p(li + 2u * THREADS, me.first, key1, kc1, kend, me.n, me.table); }
      if (PPT > 3u) { np0.w = fetch_p(li + 3u * THREADS, me.first, key1, kc1, kend, me.n, me.table); }
    }
    if (new_tile) {
      nv0 = fetch_v(li, key1, kend, me.base4);
      if (VPT > 1u) { nv1 = fetch_v(li + THREADS, key1, kend, me.base4); }
      if (VPT > 2u) { nv2 = fetch_v(li + 2u * THREADS, key1, kend, me.base4); }
      if (VPT > 3u) { nv3 = fetch_v(li + 3u * THREADS, key1, kend, me.base4); }
    }

    for (var g = 0u; g < KC4; g++) {
      let kb = kc0 + 4u * g;  // local key of the group's first key
      let p0 = p4(lr, g);
      var p1 = vec4<f32>(0.0);
      var p2 = vec4<f32>(0.0);
      var p3 = vec4<f32>(0.0);
      if (R > 1u) { p1 = p4(lr + 1u, g); }
      if (R > 2u) { p2 = p4(lr + 2u, g); p3 = p4(lr + 3u, g); }
      var vm = vkeys(kb, my.lane);
      o00 += vm * p0;
      if (R > 1u) { o10 += vm * p1; }
      if (R > 2u) { o20 += vm * p2; o30 += vm * p3; }
      if (CV > 1u) {
        vm = vkeys(kb, my.lane + CX);
        o01 += vm * p0;
        if (R > 1u) { o11 += vm * p1; }
        if (R > 2u) { o21 += vm * p2; o31 += vm * p3; }
      }
      if (CV > 2u) {
        vm = vkeys(kb, my.lane + 2u * CX);
        o02 += vm * p0;
        if (R > 1u) { o12 += vm * p1; }
        if (R > 2u) { o22 += vm * p2; o32 += vm * p3; }
        vm = vkeys(kb, my.lane + 3u * CX);
        o03 += vm * p0;
        if (R > 1u) { o13 += vm * p1; }
        if (R > 2u) { o23 += vm * p2; o33 += vm * p3; }
      }
    }

    workgroupBarrier();  // everyone is done with this P chunk and V tile
    if (next) {
      put_p(li, np0.x);
      if (PPT > 1u) { put_p(li + THREADS, np0.y); }
      if (PPT > 2u) { put_p(li + 2u * THREADS, np0.z); }
      if (PPT > 3u) { put_p(li + 3u * THREADS, np0.w); }
      for (var i = 4u; i < PPT; i++) {
        put_p(li + i * THREADS, fetch_p(li + i * THREADS, me.first, key1, kc1, kend, me.n, me.table));
      }
    }
    if (new_tile) {
      put_v(li, nv0);
      if (VPT > 1u) { put_v(li + THREADS, nv1); }
      if (VPT > 2u) { put_v(li + 2u * THREADS, nv2); }
      if (VPT > 3u) { put_v(li + 3u * THREADS, nv3); }
      for (var i = 4u; i < VPT; i++) { put_v(li + i * THREADS, fetch_v(li + i * THREADS, key1, kend, me.base4)); }
    }
    workgroupBarrier();
  }

  // Writes O: r * d elements.
  let row = me.first + lr;
  store_row(row, me.n, me.base4, my.lane, o00, o01, o02, o03);
  if (R > 1u) { store_row(row + 1u, me.n, me.base4, my.lane, o10, o11, o12, o13); }
  if (R > 2u) {
    store_row(row + 2u, me.n, me.base4, my.lane, o20, o21, o22, o23);
    store_row(row + 3u, me.n, me.base4, my.lane, o30, o31, o32, o33);
  }
}
