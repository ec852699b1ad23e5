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
