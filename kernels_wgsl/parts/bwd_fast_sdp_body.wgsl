// parts/bwd_fast_sdp_body.wgsl: the body of the tuned plain backward's S and dP passes,
// shared by bwd_fast_sdp.wgsl (any device) and bwd_fast_sdp_lanes.wgsl (devices with
// subgroups): override constants, bindings, counted loaders, workgroup memory and main.
// bwd_fast_sdp.wgsl's opening comment describes the kernel: tiling, lanes, chunks, traffic,
// masking.
//
// The including file includes parts/header.wgsl first and gives what the two differ in:
// * const SUBGROUPS: bool, declared before this part: whether the lanes sum without
//   workgroup memory (then the chunks are always double-buffered, NBUF = 2);
// * fn lanes_sum(li: u32, x: vec4<f32>) -> vec4<f32>, a key's partial dot products
//   summed over its TD lanes (parts/lanes_memory.wgsl or parts/lanes_shuffle.wgsl,
//   included after this part). Called in uniform control flow.

override D: u32 = 64u;       // head dimension d: 16, 32, 64 or 128
override BR: u32 = 64u;      // B_r (causal: which query tiles reach a key tile)
override BC: u32 = 64u;      // B_c: keys per workgroup, a multiple of R; TD B_c / R <= 256
override MODE: u32 = 0u;     // 0: S = τ Q K^T;  1: dP = dO V^T
override TD: u32 = D / 16u;  // lanes per key, 16 columns each
override R: u32 = select(select(1u, 2u, BC % 2u == 0u), 4u, BC % 4u == 0u && TD * BC >= 512u);  // keys per invocation
override D4: u32 = D / 4u;            // vec4s in a row
override KPR: u32 = BC / R;           // key groups
override THREADS: u32 = TD * KPR;
override NBUF: u32 = select(1u, 2u, TD == 1u || SUBGROUPS);  // chunk buffers: 2 unless the lanes sum through memory
override WGB: u32 = 16384u;           // workgroup memory the chunk sizes are fitted to (bytes)
// vec4s for the lanes' partial sums (1 an invocation), when they go through memory
override XN: u32 = select(0u, THREADS, TD > 1u && NBUF == 1u);
// Rows per chunk: as many as NBUF buffers of d floats a row fit beside the partial sums,
// at most 64 and 4 vec4s for each invocation to load.
override QC: u32 = min(min(64u, 4u * THREADS / D4), (WGB - 16u * XN) / (NBUF * 4u * D));
override CH4: u32 = QC * D4;          // vec4s of a chunk
override QPT: u32 = (CH4 + THREADS - 1u) / THREADS;  // vec4s each invocation loads, at most 4
override XB: u32 = NBUF * CH4;        // where the lanes sum their partial dot products
override SM4: u32 = XB + XN;

// #include "parts/walk.wgsl"

@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;         // (H, N, d)
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;         // (H, N, d)
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;         // (H, N, d)
@group(0) @binding(8) var<storage, read> dO: array<vec4<f32>>;        // (H, N, d)
@group(0) @binding(5) var<storage, read_write> s: array<f32>;         // (H_batch, N, N)
@group(0) @binding(11) var<storage, read_write> dP: array<f32>;       // (H_batch, N, N)

fn load_q(i: u32) -> vec4<f32> { tally(0u, 4u); return q[i]; }
fn load_k(i: u32) -> vec4<f32> { tally(2u, 4u); return k[i]; }
fn load_v(i: u32) -> vec4<f32> { tally(4u, 4u); return v[i]; }
fn load_do(i: u32) -> vec4<f32> { tally(12u, 4u); return dO[i]; }
fn store_s(i: u32, x: f32) { tally(7u, 1u); s[i] = x; }
fn store_dp(i: u32, x: f32) { tally(19u, 1u); dP[i] = x; }

// Buffers b of the chunk: rows of Q (or dO), [row][column group]; then the lanes' partial sums.
var<workgroup> sm: array<vec4<f32>, SM4>;

// One vec4 of a key's K (scaled by τ) or V row.
fn key4(i: u32, tau: f32) -> vec4<f32> {
  if (MODE == 0u) { return load_k(i) * tau; }
  return load_v(i);
}

// One vec4 (e) of the chunk's rows of Q (or dO) starting at row0; zero past N.
fn fetch(e: u32, row0: u32, n: u32, base4: u32) -> vec4<f32> {
  var x = vec4<f32>(0.0);
  if (e < CH4 && row0 + e / D4 < n) {
    let i = base4 + row0 * D4 + e;
    if (MODE == 0u) { x = load_q(i); } else { x = load_do(i); }
  }
  return x;
}
fn put(b: u32, e: u32, x: vec4<f32>) {
  if (e < CH4) { sm[b * CH4 + e] = x; }
}

// Store entry (row, key) of the table: past the diagonal under causal NEG_BIG (S) or 0 (dP).
fn store1(t_base: u32, row: u32, key: u32, n: u32, causal: bool, x: f32) {
  if (key < n) {
    let past = causal && key > row;
    if (MODE == 0u) { store_s(t_base + row * n + key, select(x, NEG_BIG, past)); }
    else { store_dp(t_base + row * n + key, select(x, 0.0, past)); }
  }
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let n = params.n;
  let causal = params.causal != 0u;
  let base4 = (params.head_base + wg.y) * n * D4;
  let t_base = wg.y * n * n;
  let key0 = (params.x_base + wg.x) * BC;
  let lane = li % TD;
  let kg = li / TD;
  let k0 = key0 + kg;        // this invocation's keys: k0 + r KPR, r < R
  let tau = 1.0 / sqrt(f32(D));

  // K (scaled by τ) or V of this invocation's keys and columns: w{r}{c} = key r, column
  // group c TD + lane. Reads K (or V): c d elements over the workgroup.
  var w00 = vec4<f32>(0.0);
  var w01 = vec4<f32>(0.0);
  var w02 = vec4<f32>(0.0);
  var w03 = vec4<f32>(0.0);
  var w10 = vec4<f32>(0.0);
  var w11 = vec4<f32>(0.0);
  var w12 = vec4<f32>(0.0);
  var w13 = vec4<f32>(0.0);
  var w20 = vec4<f32>(0.0);
  var w21 = vec4<f32>(0.0);
  var w22 = vec4<f32>(0.0);
  var w23 = vec4<f32>(0.0);
  var w30 = vec4<f32>(0.0);
  var w31 = vec4<f32>(0.0);
  var w32 = vec4<f32>(0.0);
  var w33 = vec4<f32>(0.0);
  if (k0 < n) {
    let a = base4 + k0 * D4 + lane;
    w00 = key4(a, tau);
    w01 = key4(a + TD, tau);
    w02 = key4(a + 2u * TD, tau);
    w03 = key4(a + 3u * TD, tau);
  }
  if (R > 1u && k0 + KPR < n) {
    let a = base4 + (k0 + KPR) * D4 + lane;
    w10 = key4(a, tau);
    w11 = key4(a + TD, tau);
    w12 = key4(a + 2u * TD, tau);
    w13 = key4(a + 3u * TD, tau);
  }
  if (R > 2u && k0 + 2u * KPR < n) {
    let a = base4 + (k0 + 2u * KPR) * D4 + lane;
    w20 = key4(a, tau);
    w21 = key4(a + TD, tau);
    w22 = key4(a + 2u * TD, tau);
    w23 = key4(a + 3u * TD, tau);
  }
  if (R > 3u && k0 + 3u * KPR < n) {
    let a = base4 + (k0 + 3u * KPR) * D4 + lane;
    w30 = key4(a, tau);
    w31 = key4(a + TD, tau);
    w32 = key4(a + 2u * TD, tau);
    w33 = key4(a + 3u * TD, tau);
  }

  // The query rows that reach this key tile: [first, N), in chunks of QC rows.
  let first = first_row(key0, causal);
  let chunks = (n - first + QC - 1u) / QC;

  // Chunk 0 into buffer 0.
  for (var i = 0u; i < QPT; i++) { put(0u, li + i * THREADS, fetch(li + i * THREADS, first, n, base4)); }
  workgroupBarrier();

  for (var ch = 0u; ch < chunks; ch++) {
    let row0 = first + ch * QC;
    let b = ch % NBUF;
    // The next chunk into registers now; stored after the arithmetic below.
    let row1 = row0 + QC;
    var nx0 = vec4<f32>(0.0);
    var nx1 = vec4<f32>(0.0);
    var nx2 = vec4<f32>(0.0);
    var nx3 = vec4<f32>(0.0);
    if (ch + 1u < chunks) {
      nx0 = fetch(li, row1, n, base4);
      if (QPT > 1u) { nx1 = fetch(li + THREADS, row1, n, base4); }
      if (QPT > 2u) { nx2 = fetch(li + 2u * THREADS, row1, n, base4); }
      if (QPT > 3u) { nx3 = fetch(li + 3u * THREADS, row1, n, base4); }
    }

    for (var i = 0u; i < QC; i++) {
      // Row i in this lane's columns: x{c} = column group c TD + lane.
      let a = b * CH4 + i * D4 + lane;
      let x0 = sm[a];
      let x1 = sm[a + TD];
      let x2 = sm[a + 2u * TD];
      let x3 = sm[a + 3u * TD];
      var y = vec4<f32>(dot(x0, w00) + dot(x1, w01) + dot(x2, w02) + dot(x3, w03), 0.0, 0.0, 0.0);
      if (R > 1u) { y.y = dot(x0, w10) + dot(x1, w11) + dot(x2, w12) + dot(x3, w13); }
      if (R > 2u) { y.z = dot(x0, w20) + dot(x1, w21) + dot(x2, w22) + dot(x3, w23); }
      if (R > 3u) { y.w = dot(x0, w30) + dot(x1, w31) + dot(x2, w32) + dot(x3, w33); }
      // Whole entries: the sum over the lanes (workgroup-uniform control flow).
      y = lanes_sum(li, y);
      // Writes S (or dP): this row's c entries of the tile, lane l those of keys r, r % TD = l.
      let row = row0 + i;
      if (row < n) {
        if (lane == 0u) { store1(t_base, row, k0, n, causal, y.x); }
        if (R > 1u && lane == 1u % TD) { store1(t_base, row, k0 + KPR, n, causal, y.y); }
        if (R > 2u && lane == 2u % TD) { store1(t_base, row, k0 + 2u * KPR, n, causal, y.z); }
        if (R > 3u && lane == 3u % TD) { store1(t_base, row, k0 + 3u * KPR, n, causal, y.w); }
      }
    }

    // Store the next chunk: into the other buffer (last read before the previous barrier),
    // or, single-buffered, into this one once every invocation is done with it.
    if (NBUF == 1u) { workgroupBarrier(); }
    if (ch + 1u < chunks) {
      let nb = (ch + 1u) % NBUF;
      put(nb, li, nx0);
      if (QPT > 1u) { put(nb, li + THREADS, nx1); }
      if (QPT > 2u) { put(nb, li + 2u * THREADS, nx2); }
      if (QPT > 3u) { put(nb, li + 3u * THREADS, nx3); }
    }
    workgroupBarrier();
  }
}
