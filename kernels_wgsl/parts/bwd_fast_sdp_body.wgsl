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
override TAU: f32 = 1.0 / sqrt(f32(D));  // τ = 1/√d, the scale of the scores
override KPR: u32 = BC / R;           // key groups
override THREADS: u32 = TD * KPR;
override NBUF: u32 = select(1u, 2u, TD == 1u || SUBGROUPS);  // chunk buffers: 2 unless the lanes sum through memory
override NPART: u32 = 1u;             // tensors streamed: Q (or dO)
override WGB: u32 = 16384u;           // workgroup memory the chunk sizes are fitted to (bytes)
// vec4s for the lanes' partial sums (1 an invocation), when they go through memory
override XN: u32 = select(0u, THREADS, TD > 1u && NBUF == 1u);
// Rows per chunk: as many as NBUF buffers of d floats a row fit beside the partial sums,
// at most 64 and 4 vec4s for each invocation to load.
override QC: u32 = min(min(64u, 4u * THREADS / D4), (WGB - 16u * XN) / (NBUF * 4u * D));
override CH4: u32 = QC * D4;          // vec4s of a chunk
override CPT: u32 = (CH4 + THREADS - 1u) / THREADS;  // vec4s of Q (or dO) each invocation loads, at most 4
override XB: u32 = NBUF * CH4;        // where the lanes sum their partial dot products
override SM4: u32 = XB + XN;

// Buffers b of the chunk: rows of Q (or dO), [row][column group]; then the lanes' partial sums.
var<workgroup> sm: array<vec4<f32>, SM4>;

// #include "parts/walk.wgsl"
// #include "parts/slices.wgsl"
// #include "parts/chunks.wgsl"
// #include "parts/qkvdo.wgsl"

@group(0) @binding(5) var<storage, read_write> s: array<f32>;     // (H_batch, N, N)
@group(0) @binding(11) var<storage, read_write> dP: array<f32>;   // (H_batch, N, N)

fn store_s(i: u32, x: f32) { tally(7u, 1u); s[i] = x; }
fn store_dp(i: u32, x: f32) { tally(19u, 1u); dP[i] = x; }

// The streamed rows: Q (MODE 0) or dO.
fn load_part(part: u32, i: u32) -> vec4<f32> {
  if (MODE == 0u) { return load_q(i); }
  return load_do(i);
}

// The slice of key `key` (zero past N): K scaled by τ (MODE 0) or V. Reads 16 elements.
fn key_slice(key: u32, n: u32, a: u32) -> mat4x4<f32> {
  if (key >= n) { return mat4x4<f32>(); }
  if (MODE == 0u) { return TAU * k_slice(a); }
  return v_slice(a);
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
  let me = work(wg, D4, BC);
  let my = lane_of(li, TD);
  let k0 = me.first + my.group;   // this invocation's keys: k0 + r KPR, r < R

  // K (scaled by τ) or V of this invocation's keys: slices w{r} of key k0 + r KPR in this
  // lane's 16 columns. Reads K (or V): c d elements over the workgroup.
  var w0 = key_slice(k0, me.n, me.base4 + k0 * D4 + my.lane);
  var w1 = mat4x4<f32>();
  var w2 = mat4x4<f32>();
  var w3 = mat4x4<f32>();
  if (R > 1u) { w1 = key_slice(k0 + KPR, me.n, me.base4 + (k0 + KPR) * D4 + my.lane); }
  if (R > 2u) {
    w2 = key_slice(k0 + 2u * KPR, me.n, me.base4 + (k0 + 2u * KPR) * D4 + my.lane);
    w3 = key_slice(k0 + 3u * KPR, me.n, me.base4 + (k0 + 3u * KPR) * D4 + my.lane);
  }

  // The query rows that reach this key tile: [first, N), in chunks of QC rows; chunk 0
  // into buffer 0.
  let first = first_row(me.first, me.causal);
  let chunks = chunk_count(first, me.n);
  put_chunk(0u, li, fetch_chunk(li, first, me.n, me.base4, true));
  workgroupBarrier();

  for (var ch = 0u; ch < chunks; ch++) {
    let st = step(first, ch, chunks);
    // The next chunk into registers now; stored after the arithmetic below.
    let next = fetch_chunk(li, st.c0 + QC, me.n, me.base4, st.more);

    for (var i = 0u; i < QC; i++) {
      // Row i in this lane's columns against the R keys, then whole entries: the sum over
      // the lanes (workgroup-uniform control flow).
      let x = sm_slice(at(st.b, 0u, i * D4 + my.lane));
      var y = vec4<f32>(dot16(x, w0), 0.0, 0.0, 0.0);
      if (R > 1u) { y.y = dot16(x, w1); }
      if (R > 2u) { y = vec4<f32>(y.xy, dot16(x, w2), dot16(x, w3)); }
      y = lanes_sum(li, y);
      // Writes S (or dP): this row's c entries of the tile, lane l those of keys r, r % TD = l.
      let row = st.c0 + i;
      if (row < me.n) {
        if (my.lane == 0u) { store1(me.table, row, k0, me.n, me.causal, y.x); }
        if (R > 1u && my.lane == 1u % TD) { store1(me.table, row, k0 + KPR, me.n, me.causal, y.y); }
        if (R > 2u && my.lane == 2u % TD) { store1(me.table, row, k0 + 2u * KPR, me.n, me.causal, y.z); }
        if (R > 3u && my.lane == 3u % TD) { store1(me.table, row, k0 + 3u * KPR, me.n, me.causal, y.w); }
      }
    }

    // Store the next chunk: into the other buffer (last read before the previous barrier),
    // or, single-buffered, into this one once every invocation is done with it.
    if (NBUF == 1u) { workgroupBarrier(); }
    if (st.more) { put_chunk(st.nb, li, next); }
    workgroupBarrier();
  }
}
