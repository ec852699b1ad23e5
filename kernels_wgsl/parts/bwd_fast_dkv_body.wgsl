// parts/bwd_fast_dkv_body.wgsl: the body of the tuned fused backward's key-tile pass, dK
// and dV, shared by bwd_fast_dkv.wgsl (any device) and bwd_fast_dkv_lanes.wgsl (devices
// with subgroups): override constants, bindings, counted loaders, workgroup memory and
// main. bwd_fast_dkv.wgsl's opening comment describes the kernel: tiling, lanes, chunks,
// traffic, masking.
//
// The including file includes parts/header.wgsl first and gives what the two differ in:
// * const SUBGROUPS: bool, declared before this part: whether the lanes sum without
//   workgroup memory (then the chunks are always double-buffered, NBUF = 2);
// * fn lanes_sum(li: u32, x: vec4<f32>) -> vec4<f32>, a key's partial dot products
//   summed over its TD lanes (parts/lanes_memory.wgsl or parts/lanes_shuffle.wgsl,
//   included after this part). Called in uniform control flow.

override D: u32 = 64u;       // head dimension d: 16, 32, 64 or 128
override BR: u32 = 64u;      // B_r of the dq pass (causal: which query tiles reach a key tile)
override BC: u32 = 64u;      // B_c: keys per workgroup, a multiple of R; TD B_c / R <= 256
override USE_D: bool = true;  // false: the broken control fused-backward-no-D
override TD: u32 = D / 16u;  // lanes per key, 16 columns each
override R: u32 = select(1u, 2u, BC % 2u == 0u);  // keys per invocation: 1 or 2
override D4: u32 = D / 4u;            // vec4s in a row
override KPR: u32 = BC / R;           // key groups
override THREADS: u32 = TD * KPR;
override NBUF: u32 = select(1u, 2u, TD == 1u || SUBGROUPS);  // chunk buffers: 2 unless the lanes sum through memory
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

// #include "parts/walk.wgsl"

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
  if (e < QC && row0 + e < n) {
    x.x = load_lse(rbase + row0 + e);
    if (USE_D) { x.y = load_rowdot(rbase + row0 + e); }  // else D = 0: dS = P dP
  }
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
  let first = first_row(key0, causal);
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
