// parts/out_dq.wgsl: the output dQ (H, N, d) of the tuned backward's query-tile passes
// (bwd_fast_dq, bwd_fast_pdq) as vec4s, its counted store, and the store of one row's slice
// (a lane's 16 columns: parts/slices.wgsl). Binding as manifest.json "bindings"; slot as
// parts/header.wgsl's table.
//
// Needs from the kernel: parts/header.wgsl, and overrides TD and TAU (τ = 1/√d) declared
// before it.

@group(0) @binding(13) var<storage, read_write> dQ: array<vec4<f32>>;   // (H, N, d)

fn store_dq(i: u32, x: vec4<f32>) { tally(23u, 4u); dQ[i] = x; }

// dQ = τ dq of row `row` (not stored past N), whose first column group is vec4 a: writes 16
// elements.
fn store_row(row: u32, n: u32, a: u32, dq: mat4x4<f32>) {
  if (row < n) {
    store_dq(a, TAU * dq[0]);
    store_dq(a + TD, TAU * dq[1]);
    store_dq(a + 2u * TD, TAU * dq[2]);
    store_dq(a + 3u * TD, TAU * dq[3]);
  }
}
