// bwd_fast_dq.wgsl: the tuned fused backward's query-tile pass, dQ (fused-backward-fast in
// manifest.json), on any WebGPU device. bwd_fast_dq_lanes.wgsl is the same kernel for
// devices with subgroups: both include its body (parts/bwd_fast_dq_body.wgsl) and differ
// only in how a row's partial dot products are summed over its lanes (SUBGROUPS and the
// lanes part, at the end).
//
// Follows FlashAttention-2 (Dao 2023, arXiv:2307.08691), Algorithm 2, with dQ given a pass
// of its own instead of line 21's in-place adds to global memory (WGSL has read-modify-write
// operations on integers only): one workgroup per query tile of B_r rows, Q_i, dO_i, L_i,
// D_i and the dQ_i accumulator in registers, the key tiles it sees streaming past (the loop
// order of the forward, section 3.1). S, P, dP and dS are recomputed a second time (the key-tile pass,
// bwd_fast_dkv.wgsl, formed them too):
//   P_ij = exp(τ q_i·k_j - L_i),  dS_ij = P_ij (dO_i·v_j - D_i),  dQ_i = τ Σ_j dS_ij k_j.
//
// Tiling (manifest "fused-backward-fast", explicit tiles per d, within WebGPU's default
// 16,384 B of workgroup memory and 256 invocations): B_r rows per workgroup; under causal a
// query tile visits the key tiles of B_c keys up to its last row, keys [0, kend) with
// kend = min(N, ceil(b / B_c) B_c), b one past the tile's last row, as the walk counts them.
//   d = 16: B_r = B_c = 128     d = 32: B_r = 128, B_c = 64
//   d = 64: B_r = B_c = 64      d = 128: B_r = B_c = 64
// Keys [0, kend) stream through workgroup memory in chunks of KC keys (K and V rows), which
// changes no count.
//
// Inside a workgroup (free: only global memory is counted):
// * Lanes. A row's d columns are split over TD = d / 16 neighbouring invocations, 16 columns
//   (4 vec4s) each: lane l owns the column groups l, l + TD, l + 2 TD, l + 3 TD. An
//   invocation owns R rows (1 or 2: rg and rg + B_r / R of the tile) and holds for each its
//   Q slice (scaled by τ once, as it is loaded), its dO slice and its dQ accumulator: 12 R
//   named vec4 registers, no private arrays, and L and D of its rows.
// * Keys stream past one at a time: an invocation reads the key's 4 vec4s of K and 4 of V
//   in its columns from workgroup memory (8 reads; every invocation of a lane reads the
//   same ones, so they are broadcasts) and makes 48 R multiply-adds with them: S and dP of
//   each of its rows, then after the sum over lanes dQ += dS k.
// * The TD partial dot products of a key's S and dP (one vec4: S and dP of row 0, then of
//   row 1) are summed across the lanes (lanes_sum): here through workgroup memory, in
//   bwd_fast_dq_lanes.wgsl with subgroupShuffleXor.
// * Chunks are double-buffered where no lanes share a row (TD = 1) or with subgroups: the
//   next chunk is loaded into registers during the arithmetic and stored after it, one
//   barrier per chunk. Otherwise single-buffered, the rest of the memory holding the lanes'
//   partial sums.
// * Masks (causal, ragged N) only in chunks that need one, a test that is uniform over the
//   workgroup.
// Invocation li: lane = li % TD, row group rg = li / TD. THREADS = TD B_r / R.
//
// Global memory traffic, float32 (4 bytes an element), for a query tile of r valid rows
// whose visited key tiles cover keys [0, kend):
//   once              reads  Q: r d, dO: r d             (vec4 loads, into registers)
//                     reads  L: r, D: r
//   per key chunk     reads  K: keys d, V: keys d        (vec4 loads, keys < kend only)
//   at the end        writes dQ: r d                     (vec4 stores)
// so per query tile K and V kv d: the manifest's "dq" pass.
//
// Masking: no -inf. A key past kend or, under causal, past the row gets P = 0 by select
// (the exponent is replaced by 0 first, so no exp overflows); rows past N compute on zeros
// and skip their stores. Every invocation stays in every loop that holds a barrier; those
// loops' bounds depend on uniforms, override constants and the workgroup id only.
//
// The instrumented build (tests only) is this source with every line that starts with
// "// @instrument: " uncommented; it then counts each element loaded or stored.

// The lanes of a row sum their partial dot products through workgroup memory
// (parts/lanes_memory.wgsl), so the chunks are double-buffered only where no lanes
// share a row (TD = 1). bwd_fast_dq_lanes.wgsl chooses otherwise.
const SUBGROUPS: bool = false;

// #include "parts/header.wgsl"
// #include "parts/bwd_fast_dq_body.wgsl"
// #include "parts/lanes_memory.wgsl"
