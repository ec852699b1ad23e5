// bwd_fast_sdp.wgsl: the tuned plain backward's two table-writing matrix passes
// (plain-backward-fast in manifest.json), on any WebGPU device: with MODE = 0 the scores
// S = τ Q K^T, with MODE = 1 dP = dO V^T, each written to global memory as an N x N table.
// bwd_fast_sdp_lanes.wgsl is the same kernel for devices with subgroups: both include its
// body (parts/bwd_fast_sdp_body.wgsl) and differ only in how a key's partial dot products
// are summed over its lanes (SUBGROUPS and the lanes part, at the end).
//
// FlashAttention (Dao et al. 2022, arXiv:2205.14135), Appendix B, Algorithm 3 (the standard
// backward): lines 1 (S = Q K^T, written to HBM) and 3 (dP = dO V^T, written to HBM). The
// loop order is by key tiles: one workgroup per key tile of B_c keys holds their K (or V)
// rows in registers and streams past it the query rows that see the tile, as the fused
// backward's bwd_fast_dkv.wgsl does, so that neighbouring invocations own neighbouring
// keys and every row of the table is written in contiguous runs. Per key tile, the table's
// c x qv block is written once; with B_r = B_c (the manifest's tiles for this kernel) these
// blocks are exactly the r x kv blocks the query-tile passes (softmax, ds, dq) read back.
//
// Tiling (manifest "plain-backward-fast", explicit tiles per d, within WebGPU's default
// 16,384 B of workgroup memory and 256 invocations): B_c keys per workgroup; under causal a
// key tile is streamed the rows [floor(k0 / B_r) B_r, N).
//   d = 16 and 32: B_r = B_c = 128     d = 64 and 128: B_r = B_c = 64
//
// Inside a workgroup (free: only global memory is counted):
// * Lanes. A key's d columns are split over TD = d / 16 neighbouring invocations, 16
//   columns (4 vec4s) each: lane l owns the column groups l, l + TD, l + 2 TD, l + 3 TD. An
//   invocation owns R keys (1, 2 or 4: kg, kg + B_c / R, ...) and holds their slices of K
//   (scaled by τ) or V: 4 R named vec4 registers.
// * Rows stream past in chunks of QC rows of Q (or dO) through workgroup memory, one row at
//   a time: 4 reads of workgroup memory (broadcasts: every invocation of a lane reads the
//   same ones) for 16 R multiply-adds. The partial dot products of the R keys (one vec4) are
//   summed across the lanes (lanes_sum: here through workgroup memory, in the _lanes file
//   with subgroupShuffleXor); then lane l stores the keys r with r % TD = l, so a warp's
//   stores fill contiguous runs of the row.
// * Chunks are double-buffered where no lanes share a key (TD = 1) or with subgroups: the
//   next chunk is loaded into registers during the arithmetic and stored after it.
// Invocation li: lane = li % TD, key group kg = li / TD. THREADS = TD B_c / R.
//
// Global memory traffic, float32 (4 bytes an element), for a key tile of c valid keys
// starting at key k0, streamed the qv query rows [first, N) (first = 0, or under causal
// floor(k0 / B_r) B_r):
//   load the tile        reads  K (or V): c d             (vec4 loads, once)
//   per chunk of rows    reads  Q (or dO): rows d          (vec4 loads)
//                        writes S (or dP): rows c          (the rows' entries of this tile)
// so per key tile K c d, Q qv d, S c qv: the manifest's "scores" (and "dp") pass. Under
// causal the entries of a written block past the diagonal (key > row) hold NEG_BIG in S (a
// finite stand-in for -inf: WGSL has no infinities) and 0 in dP; the next passes mask by
// position, never by value.
//
// Every invocation stays in every loop that holds a barrier; those loops' bounds depend on
// uniforms, override constants and the workgroup id only; rows and keys past N skip their
// loads and stores. The shader binds Q, K, V, dO, S and dP in both modes and touches only
// the three of its MODE (override-constant branches).
//
// The instrumented build (tests only) is this source with every line that starts with
// "// @instrument: " uncommented; it then counts each element loaded or stored.

// The lanes of a key sum their partial dot products through workgroup memory
// (parts/lanes_memory.wgsl), so the chunks are double-buffered only where no lanes
// share a key (TD = 1). bwd_fast_sdp_lanes.wgsl chooses otherwise.
const SUBGROUPS: bool = false;

// #include "parts/header.wgsl"
// #include "parts/bwd_fast_sdp_body.wgsl"
// #include "parts/lanes_memory.wgsl"
