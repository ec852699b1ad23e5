// parts/slices.wgsl: a lane's share of a row (or key) of d numbers in the tuned backward
// kernels. The d columns of a row are split over TD = d / 16 neighbouring invocations
// ("lanes"), 16 columns each: lane l owns the column groups (vec4s) l, l + TD, l + 2 TD and
// l + 3 TD, held as the four columns of a mat4x4<f32>, a "slice". A slice is four named vec4
// registers, indexed only by constants (kernels_wgsl/README.md, "Fast means named
// registers"); `f * s` and `s += t` act on all four.
//
// Needs from the kernel: override TD, and var<workgroup> sm: array<vec4<f32>, ...> (rows of
// d / 4 vec4s), declared before it.

// The dot product of two slices: a lane's partial sum of a row's d products.
fn dot16(a: mat4x4<f32>, b: mat4x4<f32>) -> f32 {
  return dot(a[0], b[0]) + dot(a[1], b[1]) + dot(a[2], b[2]) + dot(a[3], b[3]);
}

// The slice whose first column group is vec4 a of sm.
fn sm_slice(a: u32) -> mat4x4<f32> {
  return mat4x4<f32>(sm[a], sm[a + TD], sm[a + 2u * TD], sm[a + 3u * TD]);
}
