// bwd_fast_softmax.wgsl: the tuned plain backward's softmax pass, P = exp(S - L), read from
// and written to global memory (plain-backward-fast in manifest.json).
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Appendix B, Algorithm 3, with P formed
// from the forward's saved logsumexp L (as the fused backward forms it) instead of a stored
// P, so that the plain and fused kernels differ only in memory trips.
//
// Tiling: one workgroup of WG = 64 invocations per query tile of B_r rows (the kernel's
// tiles), the rows in turn, each over the block its query tile visits: kend = N for full
// attention, causal kend = min(N, ceil(b / B_c) B_c), b one past the tile's last row. How the
// invocations share a row (vec4s where N is a multiple of 4) is parts/rows.wgsl's, which
// bwd_fast_ds.wgsl shares; this file gives its tensors and P = exp(S - L). The tile's L goes
// to workgroup memory first (one load a row). The host sizes each table to a whole number
// of vec4s.
// This pass does almost no arithmetic per byte: its time is what the card's bandwidth allows.
//
// Global memory traffic, float32 (4 bytes an element), per row of a query tile:
//   reads  L: 1;  S: kend;  writes P: kend (entries past the diagonal written as 0)
// so per query tile L r, S r kv, P r kv: the manifest's "softmax" pass.
//
// Masking by position (key j > row i under causal), never by the stored value. The
// exponent of a masked entry is replaced by 0 before exp, so no exp overflows.
//
// The instrumented build (tests only) is this source with every line that starts with
// "// @instrument: " uncommented; it then counts each element loaded or stored.

override BR: u32 = 64u;   // B_r of the kernel's tiles
override BC: u32 = 64u;   // B_c of the kernel's tiles
override WG: u32 = 64u;   // invocations per workgroup

// #include "parts/header.wgsl"
// #include "parts/walk.wgsl"

@group(0) @binding(5) var<storage, read> s: array<vec4<f32>>;        // (H_batch, N, N)
@group(0) @binding(6) var<storage, read_write> p: array<vec4<f32>>;  // (H_batch, N, N)
@group(0) @binding(9) var<storage, read> l: array<f32>;              // L, (H, N)

fn load_stat(i: u32) -> f32 { tally(14u, 1u); return l[i]; }
fn load4(i4: u32) -> mat2x4<f32> { tally(6u, 4u); return mat2x4<f32>(s[i4], vec4<f32>(0.0)); }
fn load1(i: u32) -> vec2<f32> { tally(6u, 1u); return vec2<f32>(s[i / 4u][i % 4u], 0.0); }
fn store4(i4: u32, y: vec4<f32>) { tally(9u, 4u); p[i4] = y; }
fn store1(i: u32, y: f32) { tally(9u, 1u); p[i / 4u][i % 4u] = y; }

// P = exp(S - L) where the key is visible, else 0 (its exponent replaced by 0 first).
fn out4(x: mat2x4<f32>, ok: vec4<bool>, lse: f32) -> vec4<f32> {
  return select(vec4<f32>(0.0), exp(select(vec4<f32>(0.0), x[0] - vec4<f32>(lse), ok)), ok);
}

// #include "parts/rows.wgsl"
