// parts/bwd_fast_dq_body.wgsl: the body of the tuned fused backward's query-tile pass, dQ,
// shared by bwd_fast_dq.wgsl (any device) and bwd_fast_dq_lanes.wgsl (devices with
// subgroups): override constants, bindings, counted loaders, workgroup memory and main.
// bwd_fast_dq.wgsl's opening comment describes the kernel: tiling, lanes, chunks, traffic,
// masking.
//
// The including file includes parts/header.wgsl first and gives what the two differ in:
// * const SUBGROUPS: bool, declared before this part: whether the lanes sum without
//   workgroup memory (then the chunks are always double-buffered, NBUF = 2);
// * fn lanes_sum(li: u32, x: vec4<f32>) -> vec4<f32>, a row's partial dot products
//   summed over its TD lanes (parts/lanes_memory.wgsl or parts/lanes_shuffle.wgsl,
//   included after this part). Called in uniform control flow.

override D: u32 = 64u;       // head dimension d: 16, 32, 64 or 128
override BR: u32 = 64u;      // B_r: query rows per workgroup, a multiple of R; TD B_r / R <= 256
override BC: u32 = 64u;      // B_c: the key tiles of the walk (causal: where a tile's keys end)
override USE_D: bool = true;  // false: the broken control fused-backward-no-D
override TD: u32 = D / 16u;  // lanes per row, 16 columns each
override R: u32 = select(1u, 2u, BR % 2u == 0u);  // rows per invocation: 1 or 2
override D4: u32 = D / 4u;            // vec4s in a row
override RPR: u32 = BR / R;           // row groups
override THREADS: u32 = TD * RPR;
override NBUF: u32 = select(1u, 2u, TD == 1u || SUBGROUPS);  // chunk buffers: 2 unless the lanes sum through memory
override WGB: u32 = 16384u;           // workgroup memory the chunk sizes are fitted to (bytes)
// vec4s for the lanes' partial sums (1 an invocation), when they go through memory
override XN: u32 = select(0u, THREADS, TD > 1u && NBUF == 1u);
// Keys per chunk: as many as NBUF buffers of K and V (d floats a key each) fit beside the
// partial sums, at most 64, and at most 4 vec4s of K (and of V) for each invocation to load.
override KC: u32 = min(min(64u, 4u * THREADS / D4), (WGB - 16u * XN) / (NBUF * 8u * D));
override CH4: u32 = KC * D4;          // vec4s of K (or V) in a chunk
override KPT: u32 = (CH4 + THREADS - 1u) / THREADS;  // vec4s of K (and V) each invocation loads, at most 4
override XB: u32 = 2u * NBUF * CH4;   // where the lanes sum their partial dot products
override SM4: u32 = XB + XN;

// #include "parts/walk.wgsl"

@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;           // (H, N, d)
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;           // (H, N, d)
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;           // (H, N, d)
@group(0) @binding(8) var<storage, read> dO: array<vec4<f32>>;          // (H, N, d)
@group(0) @binding(9) var<storage, read> l: array<f32>;                 // L, (H, N)
@group(0) @binding(10) var<storage, read> d: array<f32>;                // D, (H, N)
@group(0) @binding(13) var<storage, read_write> dQ: array<vec4<f32>>;   // (H, N, d)

fn load_q(i: u32) -> vec4<f32> { tally(0u, 4u); return q[i]; }
fn load_k(i: u32) -> vec4<f32> { tally(2u, 4u); return k[i]; }
fn load_v(i: u32) -> vec4<f32> { tally(4u, 4u); return v[i]; }
fn load_do(i: u32) -> vec4<f32> { tally(12u, 4u); return dO[i]; }
fn load_lse(i: u32) -> f32 { tally(14u, 1u); return l[i]; }
fn load_rowdot(i: u32) -> f32 { tally(16u, 1u); return d[i]; }
fn store_dq(i: u32, x: vec4<f32>) { tally(23u, 4u); dQ[i] = x; }

// Buffers b of the chunk: K rows (part 0) and V rows (part 1), [key][column group]; then
// the lanes' partial sums.
var<workgroup> sm: array<vec4<f32>, SM4>;

// P = exp(S - L) where visible, else 0 (the exponent of an invisible pair is set to 0 first,
// so no exp overflows).
fn p_of(s: f32, lse: f32, ok: bool) -> f32 {
  return select(0.0, exp(select(0.0, s - lse, ok)), ok);
}

// One vec4 (e) of the chunk's K (part 0) or V (part 1) starting at key kc0; zero past kend.
fn fetch(part: u32, e: u32, kc0: u32, kend: u32, base4: u32) -> vec4<f32> {
  var x = vec4<f32>(0.0);
  if (e < CH4 && kc0 + e / D4 < kend) {
    let i = base4 + kc0 * D4 + e;
    if (part == 0u) { x = load_k(i); } else { x = load_v(i); }
  }
  return x;
}
fn put(b: u32, e: u32, xk: vec4<f32>, xv: vec4<f32>) {
  if (e < CH4) {
    sm[2u * b * CH4 + e] = xk;
    sm[(2u * b + 1u) * CH4 + e] = xv;
  }
}

fn store_row(row: u32, n: u32, a: u32, tau: f32, x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>,
             x3: vec4<f32>) {
  if (row < n) {
    store_dq(a, x0 * tau);
    store_dq(a + TD, x1 * tau);
    store_dq(a + 2u * TD, x2 * tau);
    store_dq(a + 3u * TD, x3 * tau);
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
  let row0 = (params.x_base + wg.x) * BR;
  let lane = li % TD;
  let rg = li / TD;
  let ra = row0 + rg;        // this invocation's rows: ra, and rb when R = 2
  let rb = ra + RPR;
  let tau = 1.0 / sqrt(f32(D));

  // Q (scaled by τ), dO, L and D of this invocation's rows and columns: q{r}{c} = row r,
  // column group c TD + lane. Reads Q and dO r d elements each, L and D r each.
  var q00 = vec4<f32>(0.0);
  var q01 = vec4<f32>(0.0);
  var q02 = vec4<f32>(0.0);
  var q03 = vec4<f32>(0.0);
  var o00 = vec4<f32>(0.0);
  var o01 = vec4<f32>(0.0);
  var o02 = vec4<f32>(0.0);
  var o03 = vec4<f32>(0.0);
  var q10 = vec4<f32>(0.0);
  var q11 = vec4<f32>(0.0);
  var q12 = vec4<f32>(0.0);
  var q13 = vec4<f32>(0.0);
  var o10 = vec4<f32>(0.0);
  var o11 = vec4<f32>(0.0);
  var o12 = vec4<f32>(0.0);
  var o13 = vec4<f32>(0.0);
  var lse0 = 0.0;
  var dd0 = 0.0;
  var lse1 = 0.0;
  var dd1 = 0.0;
  if (ra < n) {
    let a = base4 + ra * D4 + lane;
    q00 = load_q(a) * tau;
    q01 = load_q(a + TD) * tau;
    q02 = load_q(a + 2u * TD) * tau;
    q03 = load_q(a + 3u * TD) * tau;
    o00 = load_do(a);
    o01 = load_do(a + TD);
    o02 = load_do(a + 2u * TD);
    o03 = load_do(a + 3u * TD);
    if (lane == 0u) {
      lse0 = load_lse(rbase + ra);
      if (USE_D) { dd0 = load_rowdot(rbase + ra); }  // else D = 0: dS = P dP
    }
  }
  if (R > 1u && rb < n) {
    let a = base4 + rb * D4 + lane;
    q10 = load_q(a) * tau;
    q11 = load_q(a + TD) * tau;
    q12 = load_q(a + 2u * TD) * tau;
    q13 = load_q(a + 3u * TD) * tau;
    o10 = load_do(a);
    o11 = load_do(a + TD);
    o12 = load_do(a + 2u * TD);
    o13 = load_do(a + 3u * TD);
    if (lane == 0u) {
      lse1 = load_lse(rbase + rb);
      if (USE_D) { dd1 = load_rowdot(rbase + rb); }
    }
  }
  // Lane 0 read L and D (one load a row); the other lanes of the row take them from it.
  // Through the lanes' sum, so every lane ends with the same four values.
  let stats = lanes_sum(li, vec4<f32>(lse0, dd0, lse1, dd1));
  lse0 = stats.x;
  dd0 = stats.y;
  lse1 = stats.z;
  dd1 = stats.w;
  // Accumulators: dq{r}{c}.
  var dq00 = vec4<f32>(0.0);
  var dq01 = vec4<f32>(0.0);
  var dq02 = vec4<f32>(0.0);
  var dq03 = vec4<f32>(0.0);
  var dq10 = vec4<f32>(0.0);
  var dq11 = vec4<f32>(0.0);
  var dq12 = vec4<f32>(0.0);
  var dq13 = vec4<f32>(0.0);

  let kend = key_end(row0, n, causal);
  let chunks = (kend + KC - 1u) / KC;

  // Chunk 0 into buffer 0.
  for (var i = 0u; i < KPT; i++) {
    let e = li + i * THREADS;
    put(0u, e, fetch(0u, e, 0u, kend, base4), fetch(1u, e, 0u, kend, base4));
  }
  workgroupBarrier();

  for (var ch = 0u; ch < chunks; ch++) {
    let kc0 = ch * KC;
    let b = ch % NBUF;
    // The next chunk into registers now; stored after the arithmetic below.
    let kc1 = kc0 + KC;
    var nk0 = vec4<f32>(0.0);
    var nv0 = vec4<f32>(0.0);
    var nk1 = vec4<f32>(0.0);
    var nv1 = vec4<f32>(0.0);
    var nk2 = vec4<f32>(0.0);
    var nv2 = vec4<f32>(0.0);
    var nk3 = vec4<f32>(0.0);
    var nv3 = vec4<f32>(0.0);
    if (ch + 1u < chunks) {
      nk0 = fetch(0u, li, kc1, kend, base4);
      nv0 = fetch(1u, li, kc1, kend, base4);
      if (KPT > 1u) {
        nk1 = fetch(0u, li + THREADS, kc1, kend, base4);
        nv1 = fetch(1u, li + THREADS, kc1, kend, base4);
      }
      if (KPT > 2u) {
        nk2 = fetch(0u, li + 2u * THREADS, kc1, kend, base4);
        nv2 = fetch(1u, li + 2u * THREADS, kc1, kend, base4);
      }
      if (KPT > 3u) {
        nk3 = fetch(0u, li + 3u * THREADS, kc1, kend, base4);
        nv3 = fetch(1u, li + 3u * THREADS, kc1, kend, base4);
      }
    }
    // Uniform over the workgroup: does any pair of this chunk need a mask?
    let masked = kc1 > kend || (causal && kc1 - 1u > row0);

    for (var j = 0u; j < KC; j++) {
      // Key kc0 + j's K and V in this lane's columns: k{c}, v{c} = column group c TD + lane.
      let a = 2u * b * CH4 + j * D4 + lane;
      let k0 = sm[a];
      let k1 = sm[a + TD];
      let k2 = sm[a + 2u * TD];
      let k3 = sm[a + 3u * TD];
      let v0 = sm[a + CH4];
      let v1 = sm[a + CH4 + TD];
      let v2 = sm[a + CH4 + 2u * TD];
      let v3 = sm[a + CH4 + 3u * TD];
      // Partial S and dP over this lane's 16 columns, then whole ones: the sum over the
      // lanes (workgroup-uniform control flow). x = (S, dP) of row ra, then of row rb.
      var x = vec4<f32>(dot(q00, k0) + dot(q01, k1) + dot(q02, k2) + dot(q03, k3),
                        dot(o00, v0) + dot(o01, v1) + dot(o02, v2) + dot(o03, v3), 0.0, 0.0);
      if (R > 1u) {
        x.z = dot(q10, k0) + dot(q11, k1) + dot(q12, k2) + dot(q13, k3);
        x.w = dot(o10, v0) + dot(o11, v1) + dot(o12, v2) + dot(o13, v3);
      }
      x = lanes_sum(li, x);

      // P from the saved L, dS = P (dP - D).
      var pa = 0.0;
      var pb = 0.0;
      if (masked) {
        let key = kc0 + j;
        pa = p_of(x.x, lse0, key < kend && (!causal || key <= ra));
        if (R > 1u) { pb = p_of(x.z, lse1, key < kend && (!causal || key <= rb)); }
      } else {
        pa = exp(x.x - lse0);
        if (R > 1u) { pb = exp(x.z - lse1); }
      }
      let dsa = pa * (x.y - dd0);
      let dsb = pb * (x.w - dd1);

      // dQ += dS k over this lane's 16 columns.
      dq00 += dsa * k0;
      dq01 += dsa * k1;
      dq02 += dsa * k2;
      dq03 += dsa * k3;
      if (R > 1u) {
        dq10 += dsb * k0;
        dq11 += dsb * k1;
        dq12 += dsb * k2;
        dq13 += dsb * k3;
      }
    }

    // Store the next chunk: into the other buffer (last read before the previous barrier),
    // or, single-buffered, into this one once every invocation is done with it.
    if (NBUF == 1u) { workgroupBarrier(); }
    if (ch + 1u < chunks) {
      let nb = (ch + 1u) % NBUF;
      put(nb, li, nk0, nv0);
      if (KPT > 1u) { put(nb, li + THREADS, nk1, nv1); }
      if (KPT > 2u) { put(nb, li + 2u * THREADS, nk2, nv2); }
      if (KPT > 3u) { put(nb, li + 3u * THREADS, nk3, nv3); }
    }
    workgroupBarrier();
  }

  // dQ = τ Σ dS k: writes r d elements.
  store_row(ra, n, base4 + ra * D4 + lane, tau, dq00, dq01, dq02, dq03);
  if (R > 1u) { store_row(rb, n, base4 + rb * D4 + lane, tau, dq10, dq11, dq12, dq13); }
}
