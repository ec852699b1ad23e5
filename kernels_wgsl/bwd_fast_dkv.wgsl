// bwd_fast_dkv.wgsl: the tuned fused backward's key-tile pass, dK and dV
// (fused-backward-fast in manifest.json), on any WebGPU device. bwd_fast_dkv_lanes.wgsl is
// the same kernel for devices with subgroups: the two files differ only where a key's
// partial dot products are summed over its lanes.
//
// Follows FlashAttention-2 (Dao 2023, arXiv:2307.08691), Algorithm 2, the outer loop over
// key tiles (lines 5 to 20), without line 21's in-place adds to dQ in global memory (WGSL
// has read-modify-write operations on integers only): dQ has a pass of its own
// (bwd_fast_dq.wgsl), so every workgroup writes only its own rows of dK and dV. One workgroup per key tile of B_c keys; K_j, V_j
// and the accumulators dK_j, dV_j stay in registers while the query rows that see the tile
// stream past in chunks. P is recomputed from the saved logsumexp L (no running max or
// sum). With τ = 1/√d and D_i = rowsum(dO_i ∘ O_i) from bwd_fast_pre.wgsl:
//   S_ij = τ q_i·k_j,  P_ij = exp(S_ij - L_i),  dP_ij = dO_i·v_j,  dS_ij = P_ij (dP_ij - D_i),
//   dV_j = Σ_i P_ij dO_i,  dK_j = τ Σ_i dS_ij q_i.
//
// Tiling (manifest "fused-backward-fast", explicit tiles per d, within WebGPU's default
// 16,384 B of workgroup memory and 256 invocations): B_c keys per workgroup, B_r the query
// tile of the dq pass (under causal, a key tile is streamed the rows of every query tile
// whose last row reaches it, rows [floor(k0 / B_r) B_r, N), as the walk counts them).
//   d = 16: B_r = B_c = 128     d = 32: B_r = 128, B_c = 64
//   d = 64: B_r = B_c = 64      d = 128: B_r = B_c = 64
//
// Inside a workgroup (free: only global memory is counted):
// * Lanes. A key's d columns are split over TD = d / 16 neighbouring invocations, 16
//   columns (4 vec4s) each: lane l owns the column groups (vec4s) l, l + TD, l + 2 TD,
//   l + 3 TD. An invocation owns R keys (1 or 2: kg and kg + B_c / R of the tile), and holds
//   for each its K and V slices and its dK and dV accumulators: 16 R named vec4 registers,
//   no private arrays. K is scaled by τ once, as it is loaded.
// * Rows stream past in chunks of QC rows (Q and dO rows, L and D) through workgroup
//   memory, one row at a time: an invocation reads the row's 4 vec4s of Q and 4 of dO in
//   its columns (8 reads of workgroup memory; every invocation of a lane reads the same
//   ones, so they are broadcasts) and makes 64 R multiply-adds with them: the partial S and
//   dP of each of its keys, then after the sum over lanes dV += P dO and dK += dS q.
// * The TD partial dot products of a row's S and dP (one vec4: S and dP of key 0, then of
//   key 1) are summed across the lanes (lanes_sum): here through workgroup memory, in
//   bwd_fast_dkv_lanes.wgsl with subgroupShuffleXor. Every lane then holds whole values and
//   computes P and dS itself.
// * Chunks are double-buffered where no lanes share a key (TD = 1) or with subgroups: the
//   next chunk is loaded into registers during the arithmetic and stored after it, one
//   barrier per chunk. Otherwise single-buffered, the rest of the memory holding the lanes'
//   partial sums.
// * Masks (causal, ragged N) only in chunks that need one, a test that is uniform over the
//   workgroup; inside a masked chunk, invisible pairs get P = dS = 0 by select.
// Invocation li: lane = li % TD, key group kg = li / TD. THREADS = TD B_c / R.
//
// Global memory traffic, float32 (4 bytes an element), for a key tile of c valid keys
// starting at key k0, streamed the qv query rows [first, N) (first = 0, or under causal
// floor(k0 / B_r) B_r):
//   load the tile        reads  K: c d, V: c d               (vec4 loads, once)
//   per chunk of rows    reads  Q: rows d, dO: rows d        (vec4 loads)
//                        reads  L: rows, D: rows
//   at the end           writes dK: c d, dV: c d             (vec4 stores, once)
// so per key tile Q and dO qv d, L and D qv: the manifest's "dkv" pass. Rows past N are
// neither loaded nor counted (zero on the bench).
//
// Masking: no -inf. A pair with a row past N, a key past N or, under causal, key > row
// gets P = 0 by select (the exponent is replaced by 0 first, so no exp overflows). Every
// invocation stays in every loop that holds a barrier; those loops' bounds depend on
// uniforms, override constants and the workgroup id only; keys past N skip their stores.
//
// The instrumented build (tests only) is this source with every line that starts with
// "// @instrument: " uncommented; it then counts each element loaded or stored.

override D: u32 = 64u;       // head dimension d: 16, 32, 64 or 128
override BR: u32 = 64u;      // B_r of the dq pass (causal: which query tiles reach a key tile)
override BC: u32 = 64u;      // B_c: keys per workgroup, a multiple of R; TD B_c / R <= 256
override TD: u32 = D / 16u;  // lanes per key, 16 columns each
override R: u32 = select(1u, 2u, BC % 2u == 0u);  // keys per invocation: 1 or 2
override D4: u32 = D / 4u;            // vec4s in a row
override KPR: u32 = BC / R;           // key groups
override THREADS: u32 = TD * KPR;
override NBUF: u32 = select(1u, 2u, TD == 1u);  // chunk buffers: 2 when no lanes share a key
override WGB: u32 = 16384u;           // workgroup memory the chunk sizes are fitted to (bytes)
// vec4s for the lanes' partial sums (1 an invocation), when they go through memory
override XN: u32 = select(0u, THREADS, TD > 1u && NBUF == 1u);
// Rows per chunk: as many as NBUF buffers of Q and dO (d floats a row each), L and D (1
// float each) fit beside the partial sums; at most 64, THREADS (one L and D load each) and
// 4 vec4s of Q (and of dO) for each invocation to load.
override QC: u32 = min(min(min(64u, THREADS), 4u * THREADS / D4), (WGB - 16u * XN) / (NBUF * (8u * D + 8u)));
override CH4: u32 = QC * D4;          // vec4s of Q (or dO) in a chunk
override QPT: u32 = (CH4 + THREADS - 1u) / THREADS;  // vec4s of Q (and dO) each invocation loads, at most 4
override XB: u32 = 2u * NBUF * CH4;   // where the lanes sum their partial dot products
override SM4: u32 = XB + XN;

// #include "parts/header.wgsl"

@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;           // (H, N, d)
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;           // (H, N, d)
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;           // (H, N, d)
@group(0) @binding(8) var<storage, read> dO: array<vec4<f32>>;          // (H, N, d)
@group(0) @binding(9) var<storage, read> l: array<f32>;                 // L, (H, N)
@group(0) @binding(10) var<storage, read> d: array<f32>;                // D, (H, N)
@group(0) @binding(14) var<storage, read_write> dK: array<vec4<f32>>;   // (H, N, d)
@group(0) @binding(15) var<storage, read_write> dV: array<vec4<f32>>;   // (H, N, d)

fn load_q(i: u32) -> vec4<f32> { tally(0u, 4u); return q[i]; }
fn load_k(i: u32) -> vec4<f32> { tally(2u, 4u); return k[i]; }
fn load_v(i: u32) -> vec4<f32> { tally(4u, 4u); return v[i]; }
fn load_do(i: u32) -> vec4<f32> { tally(12u, 4u); return dO[i]; }
fn load_lse(i: u32) -> f32 { tally(14u, 1u); return l[i]; }
fn load_rowdot(i: u32) -> f32 { tally(16u, 1u); return d[i]; }
fn store_dk(i: u32, x: vec4<f32>) { tally(25u, 4u); dK[i] = x; }
fn store_dv(i: u32, x: vec4<f32>) { tally(27u, 4u); dV[i] = x; }

// Buffers b of the chunk: Q rows (part 0) and dO rows (part 1), [row][column group]; then
// the lanes' partial sums. L and D of buffer b in rs: L at 2 b QC + row, D at (2 b + 1) QC + row.
var<workgroup> sm: array<vec4<f32>, SM4>;
var<workgroup> rs: array<f32, 2u * NBUF * QC>;

// Whether row `row` and key `key` form a visible pair: both below N, key <= row under causal.
fn visible(row: u32, key: u32, n: u32, causal: bool) -> bool {
  return row < n && key < n && (!causal || key <= row);
}

// P = exp(S - L) where visible, else 0 (the exponent of an invisible pair is set to 0 first,
// so no exp overflows).
fn p_of(s: f32, lse: f32, ok: bool) -> f32 {
  return select(0.0, exp(select(0.0, s - lse, ok)), ok);
}

// @lanes-begin: with the opening comment and the NBUF line, the only part that differs
// from bwd_fast_dkv_lanes.wgsl.
// Sum x (S and dP of key 0, S and dP of key 1, for one row) over the TD lanes of a key,
// through workgroup memory past the chunk buffers. Called in uniform control flow.
fn lanes_sum(li: u32, x: vec4<f32>) -> vec4<f32> {
  if (TD == 1u) { return x; }
  sm[XB + li] = x;
  workgroupBarrier();
  let first = XB + li - li % TD;
  var y = vec4<f32>(0.0);
  for (var j = 0u; j < TD; j++) { y += sm[first + j]; }
  workgroupBarrier();
  return y;
}
// @lanes-end

// One vec4 (e) of the chunk's Q (part 0) or dO (part 1) starting at row0; zero past N.
fn fetch(part: u32, e: u32, row0: u32, n: u32, base4: u32) -> vec4<f32> {
  var x = vec4<f32>(0.0);
  if (e < CH4 && row0 + e / D4 < n) {
    let i = base4 + row0 * D4 + e;
    if (part == 0u) { x = load_q(i); } else { x = load_do(i); }
  }
  return x;
}
fn put(b: u32, e: u32, xq: vec4<f32>, xd: vec4<f32>) {
  if (e < CH4) {
    sm[2u * b * CH4 + e] = xq;
    sm[(2u * b + 1u) * CH4 + e] = xd;
  }
}
// L and D of chunk row e (e < QC); zero past N.
fn fetch_stats(e: u32, row0: u32, n: u32, rbase: u32) -> vec2<f32> {
  var x = vec2<f32>(0.0);
  if (e < QC && row0 + e < n) { x = vec2<f32>(load_lse(rbase + row0 + e), load_rowdot(rbase + row0 + e)); }
  return x;
}
fn put_stats(b: u32, e: u32, x: vec2<f32>) {
  if (e < QC) {
    rs[2u * b * QC + e] = x.x;
    rs[(2u * b + 1u) * QC + e] = x.y;
  }
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let n = params.n;
  let causal = params.causal != 0u;
  let head = params.head_base + wg.y;
  let base4 = head * n * D4;
  let rbase = head * n;
  let key0 = (params.x_base + wg.x) * BC;
  let lane = li % TD;
  let kg = li / TD;
  let ka = key0 + kg;        // this invocation's keys: ka, and kb when R = 2
  let kb = ka + KPR;
  let tau = 1.0 / sqrt(f32(D));

  // K (scaled by τ) and V of this invocation's keys and columns: k{r}{c} = key r, column
  // group c TD + lane. Reads K and V: c d elements each over the workgroup.
  var k00 = vec4<f32>(0.0);
  var k01 = vec4<f32>(0.0);
  var k02 = vec4<f32>(0.0);
  var k03 = vec4<f32>(0.0);
  var v00 = vec4<f32>(0.0);
  var v01 = vec4<f32>(0.0);
  var v02 = vec4<f32>(0.0);
  var v03 = vec4<f32>(0.0);
  var k10 = vec4<f32>(0.0);
  var k11 = vec4<f32>(0.0);
  var k12 = vec4<f32>(0.0);
  var k13 = vec4<f32>(0.0);
  var v10 = vec4<f32>(0.0);
  var v11 = vec4<f32>(0.0);
  var v12 = vec4<f32>(0.0);
  var v13 = vec4<f32>(0.0);
  if (ka < n) {
    let a = base4 + ka * D4 + lane;
    k00 = load_k(a) * tau;
    k01 = load_k(a + TD) * tau;
    k02 = load_k(a + 2u * TD) * tau;
    k03 = load_k(a + 3u * TD) * tau;
    v00 = load_v(a);
    v01 = load_v(a + TD);
    v02 = load_v(a + 2u * TD);
    v03 = load_v(a + 3u * TD);
  }
  if (R > 1u && kb < n) {
    let a = base4 + kb * D4 + lane;
    k10 = load_k(a) * tau;
    k11 = load_k(a + TD) * tau;
    k12 = load_k(a + 2u * TD) * tau;
    k13 = load_k(a + 3u * TD) * tau;
    v10 = load_v(a);
    v11 = load_v(a + TD);
    v12 = load_v(a + 2u * TD);
    v13 = load_v(a + 3u * TD);
  }
  // Accumulators: dk{r}{c}, dv{r}{c}.
  var dk00 = vec4<f32>(0.0);
  var dk01 = vec4<f32>(0.0);
  var dk02 = vec4<f32>(0.0);
  var dk03 = vec4<f32>(0.0);
  var dv00 = vec4<f32>(0.0);
  var dv01 = vec4<f32>(0.0);
  var dv02 = vec4<f32>(0.0);
  var dv03 = vec4<f32>(0.0);
  var dk10 = vec4<f32>(0.0);
  var dk11 = vec4<f32>(0.0);
  var dk12 = vec4<f32>(0.0);
  var dk13 = vec4<f32>(0.0);
  var dv10 = vec4<f32>(0.0);
  var dv11 = vec4<f32>(0.0);
  var dv12 = vec4<f32>(0.0);
  var dv13 = vec4<f32>(0.0);

  // The query rows that reach this key tile: [first, N), in chunks of QC rows.
  var first = 0u;
  if (causal) { first = (key0 / BR) * BR; }
  let chunks = (n - first + QC - 1u) / QC;
  let key_last = min(n, key0 + BC) - 1u;

  // Chunk 0 into buffer 0.
  for (var i = 0u; i < QPT; i++) {
    let e = li + i * THREADS;
    put(0u, e, fetch(0u, e, first, n, base4), fetch(1u, e, first, n, base4));
  }
  put_stats(0u, li, fetch_stats(li, first, n, rbase));
  workgroupBarrier();

  for (var ch = 0u; ch < chunks; ch++) {
    let row0 = first + ch * QC;
    let b = ch % NBUF;
    // The next chunk into registers now; stored after the arithmetic below.
    let row1 = row0 + QC;
    var nq0 = vec4<f32>(0.0);
    var nd0 = vec4<f32>(0.0);
    var nq1 = vec4<f32>(0.0);
    var nd1 = vec4<f32>(0.0);
    var nq2 = vec4<f32>(0.0);
    var nd2 = vec4<f32>(0.0);
    var nq3 = vec4<f32>(0.0);
    var nd3 = vec4<f32>(0.0);
    var ns = vec2<f32>(0.0);
    if (ch + 1u < chunks) {
      nq0 = fetch(0u, li, row1, n, base4);
      nd0 = fetch(1u, li, row1, n, base4);
      if (QPT > 1u) {
        nq1 = fetch(0u, li + THREADS, row1, n, base4);
        nd1 = fetch(1u, li + THREADS, row1, n, base4);
      }
      if (QPT > 2u) {
        nq2 = fetch(0u, li + 2u * THREADS, row1, n, base4);
        nd2 = fetch(1u, li + 2u * THREADS, row1, n, base4);
      }
      if (QPT > 3u) {
        nq3 = fetch(0u, li + 3u * THREADS, row1, n, base4);
        nd3 = fetch(1u, li + 3u * THREADS, row1, n, base4);
      }
      ns = fetch_stats(li, row1, n, rbase);
    }
    // Uniform over the workgroup: does any pair of this chunk need a mask?
    let masked = row0 + QC > n || key0 + BC > n || (causal && row0 < key_last);

    for (var i = 0u; i < QC; i++) {
      // Row i's Q and dO in this lane's columns: q{c}, o{c} = column group c TD + lane.
      let a = 2u * b * CH4 + i * D4 + lane;
      let q0 = sm[a];
      let q1 = sm[a + TD];
      let q2 = sm[a + 2u * TD];
      let q3 = sm[a + 3u * TD];
      let o0 = sm[a + CH4];
      let o1 = sm[a + CH4 + TD];
      let o2 = sm[a + CH4 + 2u * TD];
      let o3 = sm[a + CH4 + 3u * TD];
      // Partial S and dP over this lane's 16 columns, then whole ones: the sum over the
      // lanes (workgroup-uniform control flow). x = (S, dP) of key ka, then of key kb.
      var x = vec4<f32>(dot(q0, k00) + dot(q1, k01) + dot(q2, k02) + dot(q3, k03),
                        dot(o0, v00) + dot(o1, v01) + dot(o2, v02) + dot(o3, v03), 0.0, 0.0);
      if (R > 1u) {
        x.z = dot(q0, k10) + dot(q1, k11) + dot(q2, k12) + dot(q3, k13);
        x.w = dot(o0, v10) + dot(o1, v11) + dot(o2, v12) + dot(o3, v13);
      }
      x = lanes_sum(li, x);

      // P from the saved L, dS = P (dP - D).
      let lse = rs[2u * b * QC + i];
      let dd = rs[(2u * b + 1u) * QC + i];
      var pa = 0.0;
      var pb = 0.0;
      if (masked) {
        pa = p_of(x.x, lse, visible(row0 + i, ka, n, causal));
        if (R > 1u) { pb = p_of(x.z, lse, visible(row0 + i, kb, n, causal)); }
      } else {
        pa = exp(x.x - lse);
        if (R > 1u) { pb = exp(x.z - lse); }
      }
      let dsa = pa * (x.y - dd);
      let dsb = pb * (x.w - dd);

      // dV += P dO and dK += dS q over this lane's 16 columns.
      dv00 += pa * o0;
      dv01 += pa * o1;
      dv02 += pa * o2;
      dv03 += pa * o3;
      dk00 += dsa * q0;
      dk01 += dsa * q1;
      dk02 += dsa * q2;
      dk03 += dsa * q3;
      if (R > 1u) {
        dv10 += pb * o0;
        dv11 += pb * o1;
        dv12 += pb * o2;
        dv13 += pb * o3;
        dk10 += dsb * q0;
        dk11 += dsb * q1;
        dk12 += dsb * q2;
        dk13 += dsb * q3;
      }
    }

    // Store the next chunk: into the other buffer (last read before the previous barrier),
    // or, single-buffered, into this one once every invocation is done with it.
    if (NBUF == 1u) { workgroupBarrier(); }
    if (ch + 1u < chunks) {
      let nb = (ch + 1u) % NBUF;
      put(nb, li, nq0, nd0);
      if (QPT > 1u) { put(nb, li + THREADS, nq1, nd1); }
      if (QPT > 2u) { put(nb, li + 2u * THREADS, nq2, nd2); }
      if (QPT > 3u) { put(nb, li + 3u * THREADS, nq3, nd3); }
      put_stats(nb, li, ns);
    }
    workgroupBarrier();
  }

  // dK = τ Σ dS q and dV: writes c d elements each.
  if (ka < n) {
    let a = base4 + ka * D4 + lane;
    store_dk(a, dk00 * tau);
    store_dk(a + TD, dk01 * tau);
    store_dk(a + 2u * TD, dk02 * tau);
    store_dk(a + 3u * TD, dk03 * tau);
    store_dv(a, dv00);
    store_dv(a + TD, dv01);
    store_dv(a + 2u * TD, dv02);
    store_dv(a + 3u * TD, dv03);
  }
  if (R > 1u && kb < n) {
    let a = base4 + kb * D4 + lane;
    store_dk(a, dk10 * tau);
    store_dk(a + TD, dk11 * tau);
    store_dk(a + 2u * TD, dk12 * tau);
    store_dk(a + 3u * TD, dk13 * tau);
    store_dv(a, dv10);
    store_dv(a + TD, dv11);
    store_dv(a + 2u * TD, dv12);
    store_dv(a + 3u * TD, dv13);
  }
}
