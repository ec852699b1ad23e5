// parts/header.wgsl: what every kernel here shares, joined in where a kernel says
// `// #include "parts/header.wgsl"` (the include step of emulator/shaders.py and
// gpu/files.js): the uniform parameters, the instrument's counters and tally, and the
// finite stand-in for -inf.
//
// The instrumented build (tests only) uncomments every line that starts with
// "// @instrument: ": the counters binding and the add inside tally. Each counted helper of
// a kernel (load_q, store_o, ...) touches global memory once and calls tally once with
// its tensor's slot, so the counters hold the elements each tensor read and wrote. In the
// production build tally is empty and compiles away.

struct Params {
  n: u32,          // N, rows of Q, K, V per head
  causal: u32,     // 1: key j is visible to query i only when j <= i
  head_base: u32,  // first head of this dispatch (wg.y is added); the N x N tables hold only its heads
  x_base: u32,     // first workgroup along x of this dispatch (wg.x is added)
}

@group(0) @binding(0) var<uniform> params: Params;

// Where a workgroup works. A pass dispatches (workgroups along x, heads) workgroups, in one
// submission or several, each with its own first head and first workgroup along x (Params),
// so every kernel reads its place here: wg is the workgroup's id; d4 the vec4s in a row of
// the kernel's (H, N, d) tensors, tile the rows (or keys) of the kernel's tile along x. Every
// field is uniform over the workgroup, so loops bounded by them may hold barriers: Tint's
// uniformity analysis (WGSL spec, "Uniformity Analysis") takes a struct as one value, so
// the invocation's own place is another struct, Lane.
struct Work {
  n: u32,         // N
  causal: bool,   // key j is visible to query i only when j <= i
  head: u32,      // the workgroup's head: head_base + wg.y
  base4: u32,     // the head's first vec4 in an (H, N, d) tensor
  table: u32,     // the first entry of its N x N table (the tables hold the dispatch's heads)
  first: u32,     // the first row (or key) of its tile along x: (x_base + wg.x) tile
}

fn work(wg: vec3<u32>, d4: u32, tile: u32) -> Work {
  let n = params.n;
  let head = params.head_base + wg.y;
  return Work(n, params.causal != 0u, head, head * n * d4, wg.y * n * n, (params.x_base + wg.x) * tile);
}

// Where an invocation works in its workgroup: li its index, td the invocations that share a
// row (its lanes).
struct Lane {
  lane: u32,      // the invocation's lane in its row, li % td
  group: u32,     // and its group of lanes, li / td
}

fn lane_of(li: u32, td: u32) -> Lane {
  return Lane(li % td, li / td);
}
// @instrument: @group(0) @binding(7) var<storage, read_write> counters: array<atomic<u32>, 28>;

// Counter slots (elements): 0 Q read, 1 Q write, 2 K read, 3 K write, 4 V read,
// 5 V write, 6 S read, 7 S write, 8 P read, 9 P write, 10 O read, 11 O write,
// 12 dO read, 13 dO write, 14 L read, 15 L write, 16 D read, 17 D write,
// 18 dP read, 19 dP write, 20 dS read, 21 dS write, 22 dQ read, 23 dQ write,
// 24 dK read, 25 dK write, 26 dV read, 27 dV write.
fn tally(slot: u32, elems: u32) {
  // @instrument: atomicAdd(&counters[slot], elems);
}

// No -inf in WGSL (an implementation may assume there is none): "no score yet".
const NEG_BIG: f32 = -3.0e38;
