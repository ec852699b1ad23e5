// bwd_fast_ds.wgsl: the tuned plain backward's dS pass, dS = P ∘ (dP - D), read from and
// written to global memory (plain-backward-fast in manifest.json).
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Appendix B.2: dS_ij = P_ij (dP_ij - D_i),
// with D_i = rowsum(dO_i ∘ O_i) from bwd_fast_pre.wgsl.
//
// Tiling: one workgroup of WG = 64 invocations per query tile of B_r rows (the kernel's
// tiles), the rows in turn, each over the block its query tile visits: kend = N for full
// attention, causal kend = min(N, ceil(b / B_c) B_c), b one past the tile's last row. How the
// invocations share a row (vec4s where N is a multiple of 4: eight vec4 loads, of P and dP,
// with no branch between them, then four stores) is parts/rows.wgsl's, which
// bwd_fast_softmax.wgsl shares; this file gives its tensors and dS = P (dP - D). The tile's D
// goes to workgroup memory first (one load a row). The host sizes each table to a whole
// number of vec4s.
// This pass does almost no arithmetic per byte: its time is what the card's bandwidth allows.
//
// Global memory traffic, float32 (4 bytes an element), per row of a query tile:
//   reads  D: 1;  P: kend;  dP: kend;  writes dS: kend (entries past the diagonal written as 0)
// so per query tile D r, P r kv, dP r kv, dS r kv: the manifest's "ds" pass.
//
// Masking by position (key j > row i under causal), never by the stored value.
//
// The instrumented build (tests only) is this source with every line that starts with
// "// @instrument: " uncommented; it then counts each element loaded or stored.

override BR: u32 = 64u;   // B_r of the kernel's tiles
override BC: u32 = 64u;   // B_c of the kernel's tiles
override WG: u32 = 64u;   // invocations per workgroup

// #include "parts/header.wgsl"
// #include "parts/walk.wgsl"

@group(0) @binding(6) var<storage, read> p: array<vec4<f32>>;          // (H_batch, N, N)
@group(0) @binding(10) var<storage, read> d: array<f32>;               // D, (H, N)
@group(0) @binding(11) var<storage, read> dP: array<vec4<f32>>;        // (H_batch, N, N)
@group(0) @binding(12) var<storage, read_write> dS: array<vec4<f32>>;  // (H_batch, N, N)

fn load_stat(i: u32) -> f32 { tally(16u, 1u); return d[i]; }
fn load_p4(i4: u32) -> vec4<f32> { tally(8u, 4u); return p[i4]; }
fn load_dp4(i4: u32) -> vec4<f32> { tally(18u, 4u); return dP[i4]; }
fn load_p(i: u32) -> f32 { tally(8u, 1u); return p[i / 4u][i % 4u]; }
fn load_dp(i: u32) -> f32 { tally(18u, 1u); return dP[i / 4u][i % 4u]; }
fn store4(i4: u32, y: vec4<f32>) { tally(21u, 4u); dS[i4] = y; }
fn store1(i: u32, y: f32) { tally(21u, 1u); dS[i / 4u][i % 4u] = y; }
fn load4(i4: u32) -> mat2x4<f32> { return mat2x4<f32>(load_p4(i4), load_dp4(i4)); }
fn load1(i: u32) -> vec2<f32> { return vec2<f32>(load_p(i), load_dp(i)); }

// dS = P (dP - D) where the key is visible, else 0.
fn out4(x: mat2x4<f32>, ok: vec4<bool>, dd: f32) -> vec4<f32> {
  return select(vec4<f32>(0.0), x[0] * (x[1] - vec4<f32>(dd)), ok);
}

// #include "parts/rows.wgsl"
