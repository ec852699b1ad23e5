// parts/bwd_inputs.wgsl: what the fused backward's passes read, float32, with their
// counted loaders: Q, K, V, dO (H, N, d), and the forward's logsumexp L and
// D = rowsum(dO ∘ O) (H, N). Bindings as manifest.json "bindings"; slots as
// parts/header.wgsl's table (include it first).

@group(0) @binding(1) var<storage, read> q: array<f32>;          // (H, N, d)
@group(0) @binding(2) var<storage, read> k: array<f32>;          // (H, N, d)
@group(0) @binding(3) var<storage, read> v: array<f32>;          // (H, N, d)
@group(0) @binding(8) var<storage, read> dO: array<f32>;         // (H, N, d)
@group(0) @binding(9) var<storage, read> l: array<f32>;          // L, (H, N)
@group(0) @binding(10) var<storage, read> d: array<f32>;         // D, (H, N)

fn load_q(i: u32) -> f32 { tally(0u, 1u); return q[i]; }
fn load_k(i: u32) -> f32 { tally(2u, 1u); return k[i]; }
fn load_v(i: u32) -> f32 { tally(4u, 1u); return v[i]; }
fn load_do(i: u32) -> f32 { tally(12u, 1u); return dO[i]; }
fn load_lse(i: u32) -> f32 { tally(14u, 1u); return l[i]; }
fn load_rowdot(i: u32) -> f32 { tally(16u, 1u); return d[i]; }
