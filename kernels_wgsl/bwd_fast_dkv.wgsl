// bwd_fast_dkv.wgsl: the tuned fused backward's key-tile pass, dK and dV
// (fused-backward-fast in manifest.json), on any WebGPU device. bwd_fast_dkv_lanes.wgsl is
// the same kernel for devices with subgroups: both include its body
// (parts/bwd_fast_dkv_body.wgsl) and differ only in how a key's partial dot products are
// summed over its lanes (SUBGROUPS and the lanes part, at the end).
//
// Follows FlashAttention-2 (Dao 2023, arXiv:2307.08691), Algorithm 2, the outer loop over
// key tiles (lines 5 to 20), without line 21's in-place adds to dQ in global memory (WGSL
// has read-modify-write operations on integers only): dQ has a pass of its own
// (bwd_fast_dq.wgsl), so every workgroup writes only its own rows of dK and dV. One workgroup per key tile of B_c keys; K_j, V_j
// and the accumulators dK_j, dV_j stay in registers while the query rows that see the tile
// stream past in chunks. P is recomputed from the saved logsumexp L (no running max or
// sum). With τ = 1/√d and D_i = rowsum(dO_i ∘ O_i) from bwd_fast_pre.wgsl:
//   S_ij = τ q_i·k_j,  P_ij = exp(S_ij - L_i),  dP_ij = dO_i·v_j,  dS_ij = P_ij (dP_ij - D_i),
//   dV_j = Σ_i P_ij dO_i,  dK_j = τ Σ_i dS_ij q_i.
//
// Tiling (manifest "fused-backward-fast", explicit tiles per d, within WebGPU's default
// 16,384 B of workgroup memory and 256 invocations): B_c keys per workgroup, B_r the query
// tile of the dq pass (under causal, a key tile is streamed the rows of every query tile
// whose last row reaches it, rows [floor(k0 / B_r) B_r, N), as the walk counts them).
//   d = 16: B_r = B_c = 128     d = 32: B_r = 128, B_c = 64
//   d = 64: B_r = B_c = 64      d = 128: B_r = B_c = 64
//
// Inside a workgroup (free: only global memory is counted):
// * Lanes. A key's d columns are split over TD = d / 16 neighbouring invocations, 16
//   columns (4 vec4s) each: lane l owns the column groups (vec4s) l, l + TD, l + 2 TD,
//   l + 3 TD. An invocation owns R keys (1 or 2: kg and kg + B_c / R of the tile), and holds
//   for each its K and V slices and its dK and dV accumulators: 16 R named vec4 registers,
//   no private arrays. K is scaled by τ once, as it is loaded.
// * Rows stream past in chunks of QC rows (Q and dO rows, L and D) through workgroup
//   memory, one row at a time: an invocation reads the row's 4 vec4s of Q and 4 of dO in
//   its columns (8 reads of workgroup memory; every invocation of a lane reads the same
//   ones, so they are broadcasts) and makes 64 R multiply-adds with them: the partial S and
//   dP of each of its keys, then after the sum over lanes dV += P dO and dK += dS q.
// * The TD partial dot products of a row's S and dP (one vec4: S and dP of key 0, then of
//   key 1) are summed across the lanes (lanes_sum): here through workgroup memory, in
//   bwd_fast_dkv_lanes.wgsl with subgroupShuffleXor. Every lane then holds whole values and
//   computes P and dS itself.
// * Chunks are double-buffered where no lanes share a key (TD = 1) or with subgroups: the
//   next chunk is loaded into registers during the arithmetic and stored after it, one
//   barrier per chunk. Otherwise single-buffered, the rest of the memory holding the lanes'
//   partial sums.
// * Masks (causal, ragged N) only in chunks that need one, a test that is uniform over the
//   workgroup; inside a masked chunk, invisible pairs get P = dS = 0 by select.
// Invocation li: lane = li % TD, key group kg = li / TD. THREADS = TD B_c / R.
//
// Global memory traffic, float32 (4 bytes an element), for a key tile of c valid keys
// starting at key k0, streamed the qv query rows [first, N) (first = 0, or under causal
// floor(k0 / B_r) B_r):
//   load the tile        reads  K: c d, V: c d               (vec4 loads, once)
//   per chunk of rows    reads  Q: rows d, dO: rows d        (vec4 loads)
//                        reads  L: rows, D: rows
//   at the end           writes dK: c d, dV: c d             (vec4 stores, once)
// so per key tile Q and dO qv d, L and D qv: the manifest's "dkv" pass. Rows past N are
// neither loaded nor counted (zero on the bench).
//
// Masking: no -inf. A pair with a row past N, a key past N or, under causal, key > row
// gets P = 0 by select (the exponent is replaced by 0 first, so no exp overflows). Every
// invocation stays in every loop that holds a barrier; those loops' bounds depend on
// uniforms, override constants and the workgroup id only; keys past N skip their stores.
//
// The instrumented build (tests only) is this source with every line that starts with
// "// @instrument: " uncommented; it then counts each element loaded or stored.

// The lanes of a key sum their partial dot products through workgroup memory
// (parts/lanes_memory.wgsl), so the chunks are double-buffered only where no lanes
// share a key (TD = 1). bwd_fast_dkv_lanes.wgsl chooses otherwise.
const SUBGROUPS: bool = false;

// #include "parts/header.wgsl"
// #include "parts/bwd_fast_dkv_body.wgsl"
// #include "parts/lanes_memory.wgsl"
