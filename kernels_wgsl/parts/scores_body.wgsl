// parts/scores_body.wgsl: a table-writing matrix pass with the lesson's query-tile walk,
// shared by plain_scores.wgsl (S = Q K^T / sqrt(d), the plain forward's pass 1 and the plain
// backward's pass 2) and bwd_plain_dp.wgsl (dP = dO V^T, the plain backward's pass 4): the
// override constants, workgroup memory and main. plain_scores.wgsl's opening comment
// describes the kernel: tiling, blocks, column slices, traffic.
//
// The including file includes parts/header.wgsl first and gives, before this part:
// * its bindings and counted helpers fn load_row(i: u32) -> vec4<f32> (the query tile's
//   rows: Q or dO), fn load_key(i: u32) -> vec4<f32> (the key tiles' rows: K or V) and
//   fn store_entry(i: u32, x: f32) (S or dP), all indexed as (H, N, d) vec4s or (H_batch, N,
//   N) entries;
// * const SCALED: bool (whether the products are divided by sqrt(d)) and const PAST: f32
//   (what an entry past the diagonal holds under causal).

override D: u32 = 64u;    // head dimension d
override BR: u32 = 32u;   // B_r: query rows per workgroup
override BC: u32 = 16u;   // B_c: key rows per tile
override D4: u32 = D / 4u;
override KGN: u32 = (BC + 3u) / 4u;               // key groups of the tile
// Column slices: 8, 4 or 2 when d / B_r allows it and B_c is a multiple of 4, else 1.
override TZ: u32 = select(1u, select(select(2u, 4u, D >= 4u * BR), 8u, D >= 8u * BR),
                          D >= 2u * BR && BC % 4u == 0u);
// Query rows per block: 4 without column slices, 2 with them (more invocations), unless
// that would pass 256 blocks.
override R: u32 = select(2u, 4u, BR % 4u == 0u && (TZ == 1u || BR * BC * TZ > 2048u));
override DZ4: u32 = D4 / TZ;                      // column groups (vec4s) in a slice
override NG: u32 = (BR / R) * KGN;                // blocks per slice
override NBLK: u32 = NG * TZ;
override TILE4: u32 = BC * D4;                    // vec4s of a K tile
override THREADS: u32 = min(256u, max(NBLK, (TILE4 + 3u) / 4u));
override KPT: u32 = (TILE4 + THREADS - 1u) / THREADS;  // vec4s of K each invocation loads: 1 to 4
override ITERS: u32 = (NBLK + THREADS - 1u) / THREADS;
override XN: u32 = select(1u, THREADS * R, TZ > 1u);  // partial scores (vec4s)

// #include "parts/walk.wgsl"

var<workgroup> q_tile: array<vec4<f32>, BR * D4>;  // [row][column group]
var<workgroup> k_tile: array<vec4<f32>, BC * D4>;  // [column group][key]
var<workgroup> part: array<vec4<f32>, XN>;         // partial scores when TZ > 1

// One row of a block: the scores of query row lr against the four keys kl, over columns
// cg0 .. cg0 + DZ4 - 1.
fn row_dots(lr: u32, kl: vec4<u32>, cg0: u32) -> vec4<f32> {
  var acc = vec4<f32>(0.0);
  for (var c = 0u; c < DZ4; c++) {
    let cg = cg0 + c;
    let km = mat4x4<f32>(k_tile[cg * BC + kl.x], k_tile[cg * BC + kl.y],
                         k_tile[cg * BC + kl.z], k_tile[cg * BC + kl.w]);
    acc += q_tile[lr * D4 + cg] * km;
  }
  return acc;
}

// Store one entry: keys past the tile or past kend are not stored; under causal, keys
// past the row are stored as PAST.
fn store1(x: f32, row: u32, kl: u32, key0: u32, kend: u32, n: u32, causal: bool, s_base: u32) {
  let key = key0 + kl;
  if (kl < BC && key < kend) {
    var y = x;
    if (causal && key > row) { y = PAST; }
    store_entry(s_base + row * n + key, y);
  }
}

// Store one row of a block (rows past N are not stored).
fn store_row(acc: vec4<f32>, row: u32, kl: vec4<u32>, key0: u32, kend: u32, n: u32,
             causal: bool, s_base: u32, scale: f32) {
  if (row >= n) { return; }
  let x = acc * scale;
  store1(x.x, row, kl.x, key0, kend, n, causal, s_base);
  store1(x.y, row, kl.y, key0, kend, n, causal, s_base);
  store1(x.z, row, kl.z, key0, kend, n, causal, s_base);
  store1(x.w, row, kl.w, key0, kend, n, causal, s_base);
}

// One vec4 (e) of the key tile (K or V) at key0, zero past kend; and where it goes on the bench.
fn fetch(e: u32, key0: u32, kend: u32, base4: u32) -> vec4<f32> {
  var x = vec4<f32>(0.0);
  if (e < TILE4 && key0 + e / D4 < kend) { x = load_key(base4 + key0 * D4 + e); }
  return x;
}
fn put(e: u32, x: vec4<f32>) {
  if (e < TILE4) { k_tile[(e % D4) * BC + e / D4] = x; }
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let me = work(wg, D4, BR);
  let scale = select(1.0, 1.0 / sqrt(f32(D)), SCALED);

  // Query tile (Q or dO): reads r * d elements; rows past N are zero on the bench.
  for (var e = li; e < BR * D4; e += THREADS) {
    var x = vec4<f32>(0.0);
    if (me.first + e / D4 < me.n) { x = load_row(me.base4 + me.first * D4 + e); }
    q_tile[e] = x;
  }

  let kend = key_end(me.first, me.n, me.causal);
  let tiles = (kend + BC - 1u) / BC;

  // Key tile 0 (K or V). Reads keys_in_tile * d elements per tile, stored column by column.
  for (var i = 0u; i < KPT; i++) { put(li + i * THREADS, fetch(li + i * THREADS, 0u, kend, me.base4)); }
  workgroupBarrier();

  for (var t = 0u; t < tiles; t++) {
    let key0 = t * BC;
    // The next key tile into registers now; stored after the arithmetic below.
    let key1 = key0 + BC;
    var nk0 = vec4<f32>(0.0);
    var nk1 = vec4<f32>(0.0);
    var nk2 = vec4<f32>(0.0);
    var nk3 = vec4<f32>(0.0);
    if (t + 1u < tiles) {
      nk0 = fetch(li, key1, kend, me.base4);
      if (KPT > 1u) { nk1 = fetch(li + THREADS, key1, kend, me.base4); }
      if (KPT > 2u) { nk2 = fetch(li + 2u * THREADS, key1, kend, me.base4); }
      if (KPT > 3u) { nk3 = fetch(li + 3u * THREADS, key1, kend, me.base4); }
    }

    for (var it = 0u; it < ITERS; it++) {
      let blk = it * THREADS + li;
      let z = blk / NG;        // column slice
      let gi = blk % NG;
      let ty = gi / KGN;
      let kg = gi % KGN;
      let kl = vec4<u32>(kg) + vec4<u32>(0u, 1u, 2u, 3u) * KGN;
      let kr = min(kl, vec4<u32>(BC - 1u));  // where a ragged last group reads
      let lr = ty * R;
      var a0 = vec4<f32>(0.0);
      var a1 = vec4<f32>(0.0);
      var a2 = vec4<f32>(0.0);
      var a3 = vec4<f32>(0.0);
      if (blk < NBLK) {
        let cg0 = z * DZ4;
        a0 = row_dots(lr, kr, cg0);
        if (R > 1u) { a1 = row_dots(lr + 1u, kr, cg0); }
        if (R > 2u) { a2 = row_dots(lr + 2u, kr, cg0); a3 = row_dots(lr + 3u, kr, cg0); }
      }
      if (TZ > 1u) {
        // Sum the slices (one iteration only: THREADS >= NBLK here). Slice 0 stores.
        part[li * R] = a0;
        if (R > 1u) { part[li * R + 1u] = a1; }
        if (R > 2u) { part[li * R + 2u] = a2; part[li * R + 3u] = a3; }
        workgroupBarrier();
        if (z == 0u) {
          for (var zz = 1u; zz < TZ; zz++) {
            let y = (zz * NG + gi) * R;
            a0 += part[y];
            if (R > 1u) { a1 += part[y + 1u]; }
            if (R > 2u) { a2 += part[y + 2u]; a3 += part[y + 3u]; }
          }
        }
      }
      if (blk < NBLK && z == 0u) {
        let row = me.first + lr;
        store_row(a0, row, kl, key0, kend, me.n, me.causal, me.table, scale);
        if (R > 1u) { store_row(a1, row + 1u, kl, key0, kend, me.n, me.causal, me.table, scale); }
        if (R > 2u) {
          store_row(a2, row + 2u, kl, key0, kend, me.n, me.causal, me.table, scale);
          store_row(a3, row + 3u, kl, key0, kend, me.n, me.causal, me.table, scale);
        }
      }
    }

    workgroupBarrier();  // everyone is done with this K tile (and the partial scores)
    if (t + 1u < tiles) {
      put(li, nk0);
      if (KPT > 1u) { put(li + THREADS, nk1); }
      if (KPT > 2u) { put(li + 2u * THREADS, nk2); }
      if (KPT > 3u) { put(li + 3u * THREADS, nk3); }
    }
    workgroupBarrier();
  }
}
