// parts/fused_tiles.wgsl: the override constants of the lesson's fused kernel, shared by
// fused.wgsl and fused_lanes.wgsl: the tiles B_r x B_c at head dimension d, and how the
// workgroup's invocations split them into lanes, row groups and streams (fused.wgsl's
// opening comment says how). The including file then declares NBUF (K and V buffers),
// and includes parts/fused_body.wgsl.

override D: u32 = 64u;       // head dimension d: 16, 32, 64 or 128
override BR: u32 = 32u;      // B_r: query rows per workgroup, a multiple of R
override BC: u32 = 16u;      // B_c: keys per tile, B_r <= 4 B_c
override RESCALE: bool = true;
override TD: u32 = D / 16u;  // lanes per row, 16 columns each
override R: u32 = select(2u, 4u, TD * BR > 256u && BR % 4u == 0u);   // query rows per invocation: 1, 2 or 4
override TX: u32 = select(2u, 1u, TD * BR > 256u && BR % 4u != 0u);  // key streams
override D4: u32 = D / 4u;            // vec4s in a row
override TY: u32 = BR / R;            // row groups
override THREADS: u32 = TD * TX * TY;
override KG: u32 = (BC + 4u * TX - 1u) / (4u * TX);  // key groups of 4 per stream per tile
override TILE4: u32 = BC * D4;        // vec4s in one K (or V) tile
override LPT: u32 = (TILE4 + THREADS - 1u) / THREADS;  // vec4s of K (and V) each invocation loads, at most 4
override SWZ: u32 = select(0u, 4u, D4 >= 8u);          // bank swizzle of odd keys
