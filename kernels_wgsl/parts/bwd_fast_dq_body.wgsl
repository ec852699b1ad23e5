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
override TAU: f32 = 1.0 / sqrt(f32(D));  // τ = 1/√d, the scale of the scores
override RPR: u32 = BR / R;           // row groups
override THREADS: u32 = TD * RPR;
override NBUF: u32 = select(1u, 2u, TD == 1u || SUBGROUPS);  // chunk buffers: 2 unless the lanes sum through memory
override NPART: u32 = 2u;             // tensors streamed: K and V
override WGB: u32 = 16384u;           // workgroup memory the chunk sizes are fitted to (bytes)
// vec4s for the lanes' partial sums (1 an invocation), when they go through memory
override XN: u32 = select(0u, THREADS, TD > 1u && NBUF == 1u);
// Keys per chunk: as many as NBUF buffers of K and V (d floats a key each) fit beside the
// partial sums, at most 64, and at most 4 vec4s of K (and of V) for each invocation to load.
override KC: u32 = min(min(64u, 4u * THREADS / D4), (WGB - 16u * XN) / (NBUF * 8u * D));
override CH4: u32 = KC * D4;          // vec4s of K (or V) in a chunk
override CPT: u32 = (CH4 + THREADS - 1u) / THREADS;  // vec4s of K (and V) each invocation loads, at most 4
override XB: u32 = 2u * NBUF * CH4;   // where the lanes sum their partial dot products
override SM4: u32 = XB + XN;

// Buffers b of the chunk: K rows (part 0) and V rows (part 1), [key][column group]; then
// the lanes' partial sums.
var<workgroup> sm: array<vec4<f32>, SM4>;

// #include "parts/walk.wgsl"
// #include "parts/slices.wgsl"
// #include "parts/chunks.wgsl"
// #include "parts/qkvdo.wgsl"
// #include "parts/bwd_fast_pairs.wgsl"
// #include "parts/out_dq.wgsl"

fn load_part(part: u32, i: u32) -> vec4<f32> {
  if (part == 0u) { return load_k(i); }
  return load_v(i);
}

// L and D of row `row` (zero past N; D zero too without USE_D: dS = P dP).
fn row_stats(row: u32, n: u32, rbase: u32) -> vec2<f32> {
  var x = vec2<f32>(0.0);
  if (row < n) {
    x.x = load_lse(rbase + row);
    if (USE_D) { x.y = load_rowdot(rbase + row); }
  }
  return x;
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let me = work(wg, D4, BR);
  let my = lane_of(li, TD);
  let ra = me.first + my.group;   // this invocation's rows: ra, and rb when R = 2
  let rb = ra + RPR;

  // Q (scaled by τ) and dO of this invocation's rows, and the accumulator dQ: slices of
  // this lane's 16 columns (q1, o1, dq1 for rb). Reads Q and dO: r d elements each.
  var q0 = mat4x4<f32>();
  var o0 = mat4x4<f32>();
  var q1 = mat4x4<f32>();
  var o1 = mat4x4<f32>();
  if (ra < me.n) {
    q0 = TAU * q_slice(me.base4 + ra * D4 + my.lane);
    o0 = do_slice(me.base4 + ra * D4 + my.lane);
  }
  if (R > 1u && rb < me.n) {
    q1 = TAU * q_slice(me.base4 + rb * D4 + my.lane);
    o1 = do_slice(me.base4 + rb * D4 + my.lane);
  }
  var dq0 = mat4x4<f32>();
  var dq1 = mat4x4<f32>();
  // L and D of the rows: lane 0 reads them (r each), the other lanes of the row take them
  // from it through the lanes' sum, so every lane ends with the same four values.
  var stats = vec4<f32>(0.0);
  if (my.lane == 0u) { stats = vec4<f32>(row_stats(ra, me.n, me.head * me.n), 0.0, 0.0); }
  if (my.lane == 0u && R > 1u) { stats = vec4<f32>(stats.xy, row_stats(rb, me.n, me.head * me.n)); }
  stats = lanes_sum(li, stats);

  // The keys this query tile visits: [0, kend), in chunks of KC keys; chunk 0 into buffer 0.
  let kend = key_end(me.first, me.n, me.causal);
  let chunks = chunk_count(0u, kend);
  put_chunk(0u, li, fetch_chunk(li, 0u, kend, me.base4, true));
  workgroupBarrier();

  for (var ch = 0u; ch < chunks; ch++) {
    let st = step(0u, ch, chunks);
    // The next chunk into registers now; stored after the arithmetic below.
    let next = fetch_chunk(li, st.c0 + KC, kend, me.base4, st.more);
    // Uniform over the workgroup: does any pair of this chunk need a mask?
    let masked = st.c0 + KC > kend || (me.causal && st.c0 + KC - 1u > me.first);

    for (var j = 0u; j < KC; j++) {
      // Key st.c0 + j's K and V slices; the partial S and dP of row ra, then of rb, summed
      // over the lanes (workgroup-uniform control flow); then P from the saved L, dS.
      let kj = sm_slice(at(st.b, 0u, j * D4 + my.lane));
      let vj = sm_slice(at(st.b, 1u, j * D4 + my.lane));
      var x = vec4<f32>(dot16(q0, kj), dot16(o0, vj), 0.0, 0.0);
      if (R > 1u) { x = vec4<f32>(x.xy, dot16(q1, kj), dot16(o1, vj)); }
      let key = st.c0 + j;
      let ok = vec2<bool>(key < kend && (!me.causal || key <= ra), key < kend && (!me.causal || key <= rb));
      let pd = p_ds(lanes_sum(li, x), stats.xz, stats.yw, ok, masked);
      // dQ += dS k over this lane's 16 columns.
      dq0 += pd.y * kj;
      if (R > 1u) { dq1 += pd.w * kj; }
    }

    // Store the next chunk: into the other buffer (last read before the previous barrier),
    // or, single-buffered, into this one once every invocation is done with it.
    if (NBUF == 1u) { workgroupBarrier(); }
    if (st.more) { put_chunk(st.nb, li, next); }
    workgroupBarrier();
  }

  // dQ = τ Σ dS k: writes r d elements.
  store_row(ra, me.n, me.base4 + ra * D4 + my.lane, dq0);
  if (R > 1u) { store_row(rb, me.n, me.base4 + rb * D4 + my.lane, dq1); }
}
