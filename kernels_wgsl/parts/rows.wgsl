// parts/rows.wgsl: an elementwise pass of the tuned plain backward over the N x N tables
// (bwd_fast_softmax.wgsl: P from S; bwd_fast_ds.wgsl: dS from P and dP): one workgroup of
// WG invocations per query tile of B_r rows, the rows in turn, each row over the block its
// query tile visits, keys [0, kend) (parts/walk.wgsl key_end), with the row's statistic (L
// or D) from workgroup memory (one load a row). Where N and kend are multiples of 4 (a test
// uniform over the workgroup; kend is one wherever B_c is), every row's block is whole vec4s:
// invocation li takes the
// vec4s li + (4 t + c) WG of a row, c < 4, four loads with no branch between them, then four
// stores (neighbouring invocations touch neighbouring vec4s, so every access is coalesced);
// the row's last, partial group checks each vec4. Otherwise the same with single floats, the
// tables viewed as array<vec4<f32>> read and written through a component. Entries past the
// diagonal (key > row under causal) are written as the kernel's `out4` makes them for a key
// that is not visible: masked by position, never by the stored value.
//
// Needs from the kernel: overrides BR, BC, WG; parts/header.wgsl and parts/walk.wgsl; and
// * fn load_stat(i: u32) -> f32: the row statistic of row i of the (H, N) table (counted);
// * fn load4(i4: u32) -> mat2x4<f32>, fn load1(i: u32) -> vec2<f32>: the inputs at vec4 i4
//   (or entry i) of the head batch's tables, one tensor a column (component);
// * fn out4(x: mat2x4<f32>, ok: vec4<bool>, stat: f32) -> vec4<f32>: four outputs from
//   four entries' inputs (ok: the key is visible);
// * fn store4(i4: u32, y: vec4<f32>), fn store1(i: u32, y: f32): the output (counted).

var<workgroup> stat: array<f32, BR>;  // the statistic of the tile's rows

// The four keys of vec4 j4 of a row.
fn keys4(j4: u32) -> vec4<u32> { return vec4<u32>(4u * j4) + vec4<u32>(0u, 1u, 2u, 3u); }

// Vec4 j4 of the row whose first vec4 is off4, when it lies below kend4.
fn part4(off4: u32, j4: u32, kend4: u32, last: u32, st: f32) {
  if (j4 < kend4) { store4(off4 + j4, out4(load4(off4 + j4), keys4(j4) <= vec4<u32>(last), st)); }
}

// Entries js of the row that starts at off (zero at and past kend), as the columns of load4.
fn gather(off: u32, js: vec4<u32>, kend: u32) -> mat2x4<f32> {
  var a = vec2<f32>(0.0);
  var b = vec2<f32>(0.0);
  var c = vec2<f32>(0.0);
  var e = vec2<f32>(0.0);
  if (js.x < kend) { a = load1(off + js.x); }
  if (js.y < kend) { b = load1(off + js.y); }
  if (js.z < kend) { c = load1(off + js.z); }
  if (js.w < kend) { e = load1(off + js.w); }
  return mat2x4<f32>(vec4<f32>(a.x, b.x, c.x, e.x), vec4<f32>(a.y, b.y, c.y, e.y));
}
fn scatter(off: u32, js: vec4<u32>, kend: u32, y: vec4<f32>) {
  if (js.x < kend) { store1(off + js.x, y.x); }
  if (js.y < kend) { store1(off + js.y, y.y); }
  if (js.z < kend) { store1(off + js.z, y.z); }
  if (js.w < kend) { store1(off + js.w, y.w); }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let me = work(wg, 0u, BR);
  let rows = min(BR, me.n - me.first);  // me.first < N
  let kend = key_end(me.first, me.n, me.causal);

  for (var e = li; e < rows; e += WG) { stat[e] = load_stat(me.head * me.n + me.first + e); }
  workgroupBarrier();

  let vec4s = me.n % 4u == 0u && kend % 4u == 0u;  // uniform: rows start on vec4s and end on one
  let span = select(kend, kend / 4u, vec4s);  // vec4s (or entries) of a row's block
  let groups = (span + 4u * WG - 1u) / (4u * WG);
  for (var i = 0u; i < rows; i++) {
    let row = me.first + i;
    let off = me.table + row * me.n;
    let last = select(me.n - 1u, row, me.causal);  // the row's last visible key
    let st = stat[i];
    for (var t = 0u; t < groups; t++) {
      let j = 4u * t * WG + li;
      let whole = 4u * (t + 1u) * WG <= span;
      if (vec4s && whole) {
        let off4 = off / 4u;
        let x0 = load4(off4 + j);
        let x1 = load4(off4 + j + WG);
        let x2 = load4(off4 + j + 2u * WG);
        let x3 = load4(off4 + j + 3u * WG);
        store4(off4 + j, out4(x0, keys4(j) <= vec4<u32>(last), st));
        store4(off4 + j + WG, out4(x1, keys4(j + WG) <= vec4<u32>(last), st));
        store4(off4 + j + 2u * WG, out4(x2, keys4(j + 2u * WG) <= vec4<u32>(last), st));
        store4(off4 + j + 3u * WG, out4(x3, keys4(j + 3u * WG) <= vec4<u32>(last), st));
      } else if (vec4s) {  // the row's last, partial group
        part4(off / 4u, j, span, last, st);
        part4(off / 4u, j + WG, span, last, st);
        part4(off / 4u, j + 2u * WG, span, last, st);
        part4(off / 4u, j + 3u * WG, span, last, st);
      } else {  // single floats: N is not a multiple of 4
        let js = vec4<u32>(j) + vec4<u32>(0u, 1u, 2u, 3u) * WG;
        scatter(off, js, kend, out4(gather(off, js, kend), js <= vec4<u32>(last), st));
      }
    }
  }
}
