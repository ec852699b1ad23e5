// fused_f16.wgsl: the fused kernel in float16, with the max subtraction (fused-f16) and
// without it (fused-f16-no-max, the override SUBTRACT_MAX = false). The lab's float16 card
// runs both on the model's held-out sentences to show what the max subtraction of the
// softmax is for: float16 holds at most 65,504, so exp(s) is infinite from s = ln 65,520
// (about 11.09) up, and a row with such a score comes out as inf or NaN.
//
// Needs the WebGPU feature "shader-f16" (WGSL `enable f16;`, WGSL spec "Enable
// Extensions"); a host asks for it where the adapter has it and runs this kernel only then
// (manifest "dtype": "float16", whose top-level "dtypes" entry names the feature).
//
// Follows FlashAttention (Dao et al. 2022, arXiv:2205.14135), Algorithm 1, with the loop
// order of FlashAttention-2 (arXiv:2307.08691) section 3.1, plainly: one workgroup per query
// tile, one invocation per query row, an inner loop over key tiles, online softmax with a
// running max m and an unnormalised running sum l per row, O divided by l at the end.
//
// Everything is float16: Q, K, V and O in global memory (2 bytes an element) and every
// number the kernel holds. Scores are kept in base 2, as fused.wgsl keeps them: t_j is
// s_j log2(e) for the score s_j = q k_j / sqrt(d), so that e^(s_j - m) = 2^(t_j - m), and
// exp2 is the only exponential (GPUs compute exp as exp2 anyway; spelled out, the mirror can
// follow it). Each operation rounds to float16, in this order, per row:
//   score   t_j = (sum over c, in order, of q_c k_jc) * f16(log2(e) / sqrt(d))
//   per key tile with at least one visible key (SUBTRACT_MAX):
//           m_new = max(m, largest visible t_j of the tile); on every tile but the row's
//           first, a = exp2(m - m_new), l = l a and acc_c = acc_c a; m = m_new
//   per visible key j of the tile, in order:
//           p = exp2(t_j - m)    (SUBTRACT_MAX = false: p = exp2(t_j), and no m, no a)
//           l = l + p, acc_c = acc_c + p v_jc for each c
//   at the end  o_c = acc_c / l
// emulator/float16_mirrors.py mirrors exactly this order, rounding through struct's "e" format.
// Without the subtraction, p = 2^t_j is inf for t_j >= 16 (2^16 = 65,536 is past 65,504:
// a score s_j of about ln 65,520 = 11.09 or more), so l is inf and O is NaN or inf. WGSL lets an implementation assume there is no overflow, inf or NaN, so what such a
// row holds on a given GPU is up to that GPU: the host reads O back and classifies each row
// on the CPU (emulator/float16_mirrors.py), never in the shader.
//
// Tiling (manifest "tiling"): the lesson's tiles at M = 16,384 B, in half the memory.
//   d = 16: B_r = 128, B_c = 64      d = 32: B_r = 64, B_c = 32
//   d = 64: B_r = 32,  B_c = 16      d = 128: B_r = 16, B_c = 8
// Workgroup memory: the Q tile (B_r d float16) and a K and a V tile (B_c d float16 each),
// 2 d (B_r + 2 B_c) = 8,192 B at every d. B_r invocations.
//
// Global memory traffic, float16 (2 bytes an element), for a query tile of r valid rows
// whose visited key tiles cover keys [0, kend):
//   load Q tile          reads  Q: r * d * 2 bytes             (once)
//   per key tile         reads  K: keys_in_tile * d * 2 bytes  (once each)
//                        reads  V: keys_in_tile * d * 2 bytes  (once each)
//   at the end           writes O: r * d * 2 bytes             (once)
// the schedule of fused.wgsl at half the bytes. Nothing N x N reaches global memory.
//
// Masking: keys past kend, past N, or past the row under causal are skipped by an explicit
// test and never enter m or l; a row that saw no key gets O = 0. Rows past N stay in every
// loop (no early return before a barrier) and do not store. Each row keeps its d
// accumulators in a private array sized by D_MAX (the lesson's forward shaders keep none;
// this one is written for clarity, not speed, and is never timed).
//
// The instrumented build (tests only) uncomments the lines that start with "// @instrument: ".
enable f16;

override D: u32 = 32u;   // head dimension d
override BR: u32 = 64u;  // B_r, query rows per tile (one invocation each)
override BC: u32 = 32u;  // B_c, keys per tile
override SUBTRACT_MAX: bool = true;

// #include "parts/header.wgsl"
// #include "parts/walk.wgsl"

const D_MAX: u32 = 128u;
const LOG2E: f32 = 1.4426950408889634;

@group(0) @binding(1) var<storage, read> q: array<f16>;        // (H, N, d)
@group(0) @binding(2) var<storage, read> k: array<f16>;        // (H, N, d)
@group(0) @binding(3) var<storage, read> v: array<f16>;        // (H, N, d)
@group(0) @binding(4) var<storage, read_write> o: array<f16>;  // (H, N, d)

fn load_q(i: u32) -> f16 { tally(0u, 1u); return q[i]; }
fn load_k(i: u32) -> f16 { tally(2u, 1u); return k[i]; }
fn load_v(i: u32) -> f16 { tally(4u, 1u); return v[i]; }
fn store_o(i: u32, x: f16) { tally(11u, 1u); o[i] = x; }

var<workgroup> q_tile: array<f16, BR * D>;
var<workgroup> k_tile: array<f16, BC * D>;
var<workgroup> v_tile: array<f16, BC * D>;

// t_j of this invocation's row (local row lr) against local key kl of the tile.
fn score(lr: u32, kl: u32, scale: f16) -> f16 {
  var dot: f16 = 0.0h;
  for (var c = 0u; c < D; c++) {
    let prod = q_tile[lr * D + c] * k_tile[kl * D + c];
    dot = dot + prod;
  }
  return dot * scale;
}

@compute @workgroup_size(BR)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lr: u32) {
  let n = params.n;
  let causal = params.causal == 1u;
  let row0 = (params.x_base + wg.x) * BR;
  let base = (params.head_base + wg.y) * n * D;  // element offset of this head
  let row = row0 + lr;
  let scale = f16(LOG2E / sqrt(f32(D)));  // log2(e) / sqrt(d), rounded once to float16

  // The Q tile onto the bench: r valid rows of d.
  let rows = min(BR, n - min(n, row0));
  for (var e = lr; e < rows * D; e += BR) {
    q_tile[e] = load_q(base + row0 * D + e);
  }

  var m: f16 = 0.0h;
  var seen = false;
  var l: f16 = 0.0h;
  var acc: array<f16, D_MAX>;
  for (var c = 0u; c < D; c++) { acc[c] = 0.0h; }

  let kend = key_end(row0, n, causal);
  for (var key0 = 0u; key0 < kend; key0 += BC) {
    workgroupBarrier();  // everyone is done with the previous K and V tiles
    let keys = min(BC, kend - key0);
    for (var e = lr; e < keys * D; e += BR) {
      k_tile[e] = load_k(base + key0 * D + e);
      v_tile[e] = load_v(base + key0 * D + e);
    }
    workgroupBarrier();
    // Keys this row sees in the tile: [key0, key0 + visible).
    var visible = keys;
    if (causal) { visible = min(keys, (row + 1u) - min(row + 1u, key0)); }
    if (row >= n) { visible = 0u; }
    if (visible > 0u) {
      if (SUBTRACT_MAX) {
        var top = score(lr, 0u, scale);
        for (var kl = 1u; kl < visible; kl++) { top = max(top, score(lr, kl, scale)); }
        if (seen) {
          let m_new = max(m, top);
          let a = exp2(m - m_new);
          l = l * a;
          for (var c = 0u; c < D; c++) { acc[c] = acc[c] * a; }
          m = m_new;
        } else {
          m = top;
          seen = true;
        }
      }
      for (var kl = 0u; kl < visible; kl++) {
        var x = score(lr, kl, scale);
        if (SUBTRACT_MAX) { x = x - m; }
        let p = exp2(x);
        l = l + p;
        for (var c = 0u; c < D; c++) {
          let pv = p * v_tile[kl * D + c];
          acc[c] = acc[c] + pv;
        }
      }
    }
  }

  if (row < n) {
    for (var c = 0u; c < D; c++) {
      var out = 0.0h;
      if (l != 0.0h) { out = acc[c] / l; }
      store_o(base + row * D + c, out);
    }
  }
}
