// parts/bwd_fast_pairs.wgsl: what the tuned fused backward's two passes (bwd_fast_dkv,
// bwd_fast_dq) share besides Q, K, V and dO: the forward's logsumexp L and D = rowsum(dO ∘ O)
// (H, N), with their counted loaders, and P and dS of a (row, key) pair recomputed from them.
// Bindings as manifest.json "bindings"; slots as parts/header.wgsl's table.

@group(0) @binding(9) var<storage, read> l: array<f32>;    // L, (H, N)
@group(0) @binding(10) var<storage, read> d: array<f32>;   // D, (H, N)

fn load_lse(i: u32) -> f32 { tally(14u, 1u); return l[i]; }
fn load_rowdot(i: u32) -> f32 { tally(16u, 1u); return d[i]; }

// P and dS of an invocation's two pairs, a and b, from their whole S and dP,
// x = (S_a, dP_a, S_b, dP_b): P = exp(S - L) from the saved L, dS = P (dP - D); returns
// (P_a, dS_a, P_b, dS_b). In a chunk that needs a mask (`masked`, uniform over the
// workgroup) a pair that is not `ok` gets P = dS = 0, its exponent set to 0 first so that
// no exp overflows.
fn p_ds(x: vec4<f32>, lse: vec2<f32>, dd: vec2<f32>, ok: vec2<bool>, masked: bool) -> vec4<f32> {
  let s = vec2<f32>(x.x, x.z) - lse;
  var p = vec2<f32>(0.0);
  if (masked) {
    p = select(vec2<f32>(0.0), exp(select(vec2<f32>(0.0), s, ok)), ok);
  } else {
    p = exp(s);
  }
  let ds = p * (vec2<f32>(x.y, x.w) - dd);
  return vec4<f32>(p.x, ds.x, p.y, ds.y);
}
