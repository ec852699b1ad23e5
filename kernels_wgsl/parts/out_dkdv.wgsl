// parts/out_dkdv.wgsl: the outputs dK and dV (H, N, d) of the tuned backward's key-tile
// passes (bwd_fast_dkv, bwd_fast_pdkv) as vec4s, their counted stores, and the store of one
// key's slices (a lane's 16 columns: parts/slices.wgsl). Bindings as manifest.json
// "bindings"; slots as parts/header.wgsl's table.
//
// Needs from the kernel: parts/header.wgsl, and overrides TD and TAU (τ = 1/√d) declared
// before it.

@group(0) @binding(14) var<storage, read_write> dK: array<vec4<f32>>;   // (H, N, d)
@group(0) @binding(15) var<storage, read_write> dV: array<vec4<f32>>;   // (H, N, d)

fn store_dk(i: u32, x: vec4<f32>) { tally(25u, 4u); dK[i] = x; }
fn store_dv(i: u32, x: vec4<f32>) { tally(27u, 4u); dV[i] = x; }

// A key's gradients as they accumulate: this lane's slices of dK / τ and of dV.
struct KeyGrad {
  dk: mat4x4<f32>,
  dv: mat4x4<f32>,
}

// dK = τ g.dk and dV = g.dv of key `key` (not stored past N), whose first column group is
// vec4 a: writes 16 elements of each.
fn store_key(key: u32, n: u32, a: u32, g: KeyGrad) {
  if (key < n) {
    store_dk(a, TAU * g.dk[0]);
    store_dk(a + TD, TAU * g.dk[1]);
    store_dk(a + 2u * TD, TAU * g.dk[2]);
    store_dk(a + 3u * TD, TAU * g.dk[3]);
    store_dv(a, g.dv[0]);
    store_dv(a + TD, g.dv[1]);
    store_dv(a + 2u * TD, g.dv[2]);
    store_dv(a + 3u * TD, g.dv[3]);
  }
}
