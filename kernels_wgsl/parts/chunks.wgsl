// parts/chunks.wgsl: the streamed operand of the tuned backward's register-tile passes
// (bwd_fast_dkv, bwd_fast_dq, bwd_fast_sdp): rows (or keys) [c0, c0 + chunk) of NPART
// tensors, d floats each, through workgroup memory, NBUF buffers. The next chunk is loaded
// into registers (at most 4 vec4s of each tensor an invocation) during the arithmetic on
// this one and stored after it.
//
// Needs from the kernel, declared before it: overrides D4 (vec4s a row), THREADS, NBUF,
// NPART (1 or 2), CH4 (vec4s of one tensor in a chunk) and CPT = ceil(CH4 / THREADS) (the
// vec4s of a tensor each invocation loads, 1 to 4); var<workgroup> sm: array<vec4<f32>,
// ...> with NPART NBUF CH4 vec4s from 0; and fn load_part(part: u32, i: u32) -> vec4<f32>,
// the counted loader of tensor `part` (any order: a function).

// The chunks of CH4 / D4 rows (or keys) each that cover rows [first, end).
fn chunk_count(first: u32, end: u32) -> u32 {
  return (end - first + CH4 / D4 - 1u) / (CH4 / D4);
}

// Chunk ch of `count` from row `first`: its first row, its buffer and the next chunk's, and
// whether a next chunk follows (uniform over the workgroup).
struct Step {
  c0: u32,
  b: u32,
  nb: u32,
  more: bool,
}
fn step(first: u32, ch: u32, count: u32) -> Step {
  return Step(first + ch * (CH4 / D4), ch % NBUF, (ch + 1u) % NBUF, ch + 1u < count);
}

// Where vec4 e (row e / D4, column group e % D4) of tensor part of buffer b lives in sm.
fn at(b: u32, part: u32, e: u32) -> u32 {
  return (NPART * b + part) * CH4 + e;
}

// Vec4 e of every tensor of the chunk starting at row c0 (column `part` of the result);
// zero at and past row `end`.
fn fetch(e: u32, c0: u32, end: u32, base4: u32) -> mat2x4<f32> {
  var x = mat2x4<f32>();
  if (e < CH4 && c0 + e / D4 < end) {
    x[0] = load_part(0u, base4 + c0 * D4 + e);
    if (NPART > 1u) { x[1] = load_part(1u, base4 + c0 * D4 + e); }
  }
  return x;
}
fn put(b: u32, e: u32, x: mat2x4<f32>) {
  if (e < CH4) {
    sm[at(b, 0u, e)] = x[0];
    if (NPART > 1u) { sm[at(b, 1u, e)] = x[1]; }
  }
}

// This invocation's vec4s of a chunk: x{i} = vec4 li + i THREADS of each tensor.
struct Chunk {
  x0: mat2x4<f32>,
  x1: mat2x4<f32>,
  x2: mat2x4<f32>,
  x3: mat2x4<f32>,
}

// This invocation's share of the chunk at c0 (rows below `end`), when `wanted` (uniform:
// there is a next chunk); zeros otherwise.
fn fetch_chunk(li: u32, c0: u32, end: u32, base4: u32, wanted: bool) -> Chunk {
  var c = Chunk(mat2x4<f32>(), mat2x4<f32>(), mat2x4<f32>(), mat2x4<f32>());
  if (wanted) {
    c.x0 = fetch(li, c0, end, base4);
    if (CPT > 1u) { c.x1 = fetch(li + THREADS, c0, end, base4); }
    if (CPT > 2u) { c.x2 = fetch(li + 2u * THREADS, c0, end, base4); }
    if (CPT > 3u) { c.x3 = fetch(li + 3u * THREADS, c0, end, base4); }
  }
  return c;
}
fn put_chunk(b: u32, li: u32, c: Chunk) {
  put(b, li, c.x0);
  if (CPT > 1u) { put(b, li + THREADS, c.x1); }
  if (CPT > 2u) { put(b, li + 2u * THREADS, c.x2); }
  if (CPT > 3u) { put(b, li + 3u * THREADS, c.x3); }
}
