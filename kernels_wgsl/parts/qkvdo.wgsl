// parts/qkvdo.wgsl: the inputs Q, K, V (parts/qkv.wgsl) and dO (H, N, d) of the tuned
// backward's register-tile passes as vec4s, with their counted loaders (one vec4 each) and
// their slice loaders (a lane's 16 columns of a row: parts/slices.wgsl). Bindings as
// manifest.json "bindings"; slots as parts/header.wgsl's table.
//
// Needs from the kernel: parts/header.wgsl, and override TD declared before it.

// #include "parts/qkv.wgsl"

@group(0) @binding(8) var<storage, read> dO: array<vec4<f32>>;   // (H, N, d)

fn load_do(i: u32) -> vec4<f32> { tally(12u, 4u); return dO[i]; }

// The slice of a row whose first column group is vec4 a: reads 16 elements.
fn q_slice(a: u32) -> mat4x4<f32> { return mat4x4<f32>(load_q(a), load_q(a + TD), load_q(a + 2u * TD), load_q(a + 3u * TD)); }
fn k_slice(a: u32) -> mat4x4<f32> { return mat4x4<f32>(load_k(a), load_k(a + TD), load_k(a + 2u * TD), load_k(a + 3u * TD)); }
fn v_slice(a: u32) -> mat4x4<f32> { return mat4x4<f32>(load_v(a), load_v(a + TD), load_v(a + 2u * TD), load_v(a + 3u * TD)); }
fn do_slice(a: u32) -> mat4x4<f32> {
  return mat4x4<f32>(load_do(a), load_do(a + TD), load_do(a + 2u * TD), load_do(a + 3u * TD));
}
