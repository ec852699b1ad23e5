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
override TAU: f32 = 1.0 / sqrt(f32(D));  // τ = 1/√d, the scale of the scores
override KPR: u32 = BC / R;           // key groups
override THREADS: u32 = TD * KPR;
override NBUF: u32 = select(1u, 2u, TD == 1u || SUBGROUPS);  // chunk buffers: 2 unless the lanes sum through memory
override NPART: u32 = 2u;             // tensors streamed: Q and dO
override WGB: u32 = 16384u;           // workgroup memory the chunk sizes are fitted to (bytes)
// vec4s for the lanes' partial sums (1 an invocation), when they go through memory
override XN: u32 = select(0u, THREADS, TD > 1u && NBUF == 1u);
// Rows per chunk: as many as NBUF buffers of Q and dO (d floats a row each), L and D (1
// float each) fit beside the partial sums; at most 64, THREADS (one L and D load each) and
// 4 vec4s of Q (and of dO) for each invocation to load.
override QC: u32 = min(min(min(64u, THREADS), 4u * THREADS / D4), (WGB - 16u * XN) / (NBUF * (8u * D + 8u)));
override CH4: u32 = QC * D4;          // vec4s of Q (or dO) in a chunk
override CPT: u32 = (CH4 + THREADS - 1u) / THREADS;  // vec4s of Q (and dO) each invocation loads, at most 4
override XB: u32 = 2u * NBUF * CH4;   // where the lanes sum their partial dot products
override SM4: u32 = XB + XN;

// Buffers b of the chunk: Q rows (part 0) and dO rows (part 1), [row][column group]; then
// the lanes' partial sums. L and D of buffer b in rs: L at 2 b QC + row, D at (2 b + 1) QC + row.
var<workgroup> sm: array<vec4<f32>, SM4>;
var<workgroup> rs: array<f32, 2u * NBUF * QC>;

// #include "parts/walk.wgsl"
// #include "parts/slices.wgsl"
// #include "parts/chunks.wgsl"
// #include "parts/qkvdo.wgsl"
// #include "parts/bwd_fast_pairs.wgsl"
// #include "parts/out_dkdv.wgsl"

fn load_part(part: u32, i: u32) -> vec4<f32> {
  if (part == 0u) { return load_q(i); }
  return load_do(i);
}

// Whether row `row` and key `key` form a visible pair: both below N, key <= row under causal.
fn visible(row: u32, key: u32, n: u32, causal: bool) -> bool {
  return row < n && key < n && (!causal || key <= row);
}

// L and D of chunk row e (e < QC); zero past N (D zero too without USE_D: dS = P dP).
fn fetch_stats(e: u32, row0: u32, n: u32, rbase: u32) -> vec2<f32> {
  var x = vec2<f32>(0.0);
  if (e < QC && row0 + e < n) {
    x.x = load_lse(rbase + row0 + e);
    if (USE_D) { x.y = load_rowdot(rbase + row0 + e); }
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
  let me = work(wg, D4, BC);
  let my = lane_of(li, TD);
  let ka = me.first + my.group;   // this invocation's keys: ka, and kb when R = 2
  let kb = ka + KPR;

  // K (scaled by τ) and V of this invocation's keys, and their accumulators dK, dV: slices
  // of this lane's 16 columns (k1, v1, gb for kb). Reads K and V: c d elements each.
  var k0 = mat4x4<f32>();
  var v0 = mat4x4<f32>();
  var k1 = mat4x4<f32>();
  var v1 = mat4x4<f32>();
  if (ka < me.n) {
    k0 = TAU * k_slice(me.base4 + ka * D4 + my.lane);
    v0 = v_slice(me.base4 + ka * D4 + my.lane);
  }
  if (R > 1u && kb < me.n) {
    k1 = TAU * k_slice(me.base4 + kb * D4 + my.lane);
    v1 = v_slice(me.base4 + kb * D4 + my.lane);
  }
  var ga = KeyGrad();
  var gb = KeyGrad();

  // The query rows that reach this key tile: [first, N), in chunks of QC rows; chunk 0
  // into buffer 0.
  let first = first_row(me.first, me.causal);
  let chunks = chunk_count(first, me.n);
  let key_last = min(me.n, me.first + BC) - 1u;
  put_chunk(0u, li, fetch_chunk(li, first, me.n, me.base4, true));
  put_stats(0u, li, fetch_stats(li, first, me.n, me.head * me.n));
  workgroupBarrier();

  for (var ch = 0u; ch < chunks; ch++) {
    let st = step(first, ch, chunks);
    // The next chunk into registers now; stored after the arithmetic below.
    let next = fetch_chunk(li, st.c0 + QC, me.n, me.base4, st.more);
    var next_stats = vec2<f32>(0.0);
    if (st.more) { next_stats = fetch_stats(li, st.c0 + QC, me.n, me.head * me.n); }
    // Uniform over the workgroup: does any pair of this chunk need a mask?
    let masked = st.c0 + QC > me.n || me.first + BC > me.n || (me.causal && st.c0 < key_last);

    for (var i = 0u; i < QC; i++) {
      // Row i's Q and dO slices; the partial S and dP of key ka, then of kb, summed over
      // the lanes (workgroup-uniform control flow); then P from the saved L, dS = P (dP - D).
      let qi = sm_slice(at(st.b, 0u, i * D4 + my.lane));
      let oi = sm_slice(at(st.b, 1u, i * D4 + my.lane));
      var x = vec4<f32>(dot16(qi, k0), dot16(oi, v0), 0.0, 0.0);
      if (R > 1u) { x = vec4<f32>(x.xy, dot16(qi, k1), dot16(oi, v1)); }
      let row = st.c0 + i;
      let ok = vec2<bool>(visible(row, ka, me.n, me.causal), visible(row, kb, me.n, me.causal));
      let stats = vec2<f32>(rs[2u * st.b * QC + i], rs[(2u * st.b + 1u) * QC + i]);
      let pd = p_ds(lanes_sum(li, x), stats.xx, stats.yy, ok, masked);
      // dV += P dO and dK += dS q over this lane's 16 columns.
      ga.dv += pd.x * oi;
      ga.dk += pd.y * qi;
      if (R > 1u) {
        gb.dv += pd.z * oi;
        gb.dk += pd.w * qi;
      }
    }

    // Store the next chunk: into the other buffer (last read before the previous barrier),
    // or, single-buffered, into this one once every invocation is done with it.
    if (NBUF == 1u) { workgroupBarrier(); }
    if (st.more) {
      put_chunk(st.nb, li, next);
      put_stats(st.nb, li, next_stats);
    }
    workgroupBarrier();
  }

  // dK = τ Σ dS q and dV: writes c d elements each.
  store_key(ka, me.n, me.base4 + ka * D4 + my.lane, ga);
  if (R > 1u) { store_key(kb, me.n, me.base4 + kb * D4 + my.lane, gb); }
}
