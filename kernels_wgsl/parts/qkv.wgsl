// parts/qkv.wgsl: the inputs Q, K and V (H, N, d) of the fused kernels, forward and tuned
// backward, as vec4s with their counted loaders (one vec4 each). Bindings as manifest.json
// "bindings"; slots as parts/header.wgsl's table (include it first).

@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;    // (H, N, d)
@group(0) @binding(2) var<storage, read> k: array<vec4<f32>>;    // (H, N, d)
@group(0) @binding(3) var<storage, read> v: array<vec4<f32>>;    // (H, N, d)

fn load_q(i: u32) -> vec4<f32> { tally(0u, 4u); return q[i]; }
fn load_k(i: u32) -> vec4<f32> { tally(2u, 4u); return k[i]; }
fn load_v(i: u32) -> vec4<f32> { tally(4u, 4u); return v[i]; }
