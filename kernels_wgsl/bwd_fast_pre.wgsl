// bwd_fast_pre.wgsl: D = rowsum(dO ∘ O), the first pass of the tuned backward kernels
// (fused-backward-fast and plain-backward-fast in manifest.json).
//
// FlashAttention-2 (Dao 2023, arXiv:2307.08691), Algorithm 2, line 4, computed once before
// the main loop, as its Triton and CUDA code do: D_i = Σ_c dO_ic O_ic. It equals
// Σ_j P_ij dP_ij (FlashAttention, arXiv:2205.14135, Appendix B.2) because O_i = Σ_j P_ij V_j,
// so no pass needs a row of the N x N table to form it.
//
// Tiling: one workgroup per query tile of the kernel's B_r rows (the manifest's explicit
// tiles), WG = 256 invocations. A row's d columns are split over TD = d / 16 neighbouring
// invocations (lanes) of 16 columns (4 vec4s) each, so neighbouring invocations load
// neighbouring vec4s; the lanes' partial sums meet in workgroup memory (WG floats), and
// lane 0 of the row stores D. 256 / TD rows a step, ceil(B_r TD / 256) steps.
//
// Global memory traffic, float32 (4 bytes an element), for a tile of r valid rows:
//   reads  O: r d, dO: r d (vec4 loads);  writes D: r
// so per head N d reads of each and N writes of D: the manifest's "once" walk.
//
// Rows past N stay in every loop (no return before a barrier) and neither load nor store.
//
// The instrumented build (tests only) is this source with every line that starts with
// "// @instrument: " uncommented; it then counts each element loaded or stored.

override D: u32 = 64u;        // head dimension d
override BR: u32 = 64u;       // B_r: rows per workgroup
override WG: u32 = 256u;      // invocations per workgroup, a multiple of TD
override TD: u32 = D / 16u;   // lanes per row
override D4: u32 = D / 4u;
override RPS: u32 = WG / TD;  // rows per step
override STEPS: u32 = (BR + RPS - 1u) / RPS;

// #include "parts/header.wgsl"

@group(0) @binding(4) var<storage, read> o: array<vec4<f32>>;    // (H, N, d)
@group(0) @binding(8) var<storage, read> dO: array<vec4<f32>>;   // (H, N, d)
@group(0) @binding(10) var<storage, read_write> d: array<f32>;   // D, (H, N)

fn load_o(i: u32) -> vec4<f32> { tally(10u, 4u); return o[i]; }
fn load_do(i: u32) -> vec4<f32> { tally(12u, 4u); return dO[i]; }
fn store_rowdot(i: u32, x: f32) { tally(17u, 1u); d[i] = x; }

var<workgroup> part: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let me = work(wg, D4, BR);
  let my = lane_of(li, TD);

  for (var s = 0u; s < STEPS; s++) {
    let lr = s * RPS + my.group;  // local row
    let row = me.first + lr;
    var acc = 0.0;
    if (lr < BR && row < me.n) {
      let a = me.base4 + row * D4 + my.lane;
      acc = dot(load_do(a), load_o(a)) + dot(load_do(a + TD), load_o(a + TD));
      acc += dot(load_do(a + 2u * TD), load_o(a + 2u * TD)) + dot(load_do(a + 3u * TD), load_o(a + 3u * TD));
    }
    part[li] = acc;
    workgroupBarrier();
    if (my.lane == 0u && lr < BR && row < me.n) {
      var total = 0.0;
      for (var j = 0u; j < TD; j++) { total += part[li + j]; }
      store_rowdot(me.head * me.n + row, total);
    }
    workgroupBarrier();
  }
}
