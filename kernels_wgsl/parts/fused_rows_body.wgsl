// parts/fused_rows_body.wgsl: the body of the row-tiled fused kernel, shared by
// fused_rows.wgsl (any device) and fused_rows_lanes.wgsl (devices with subgroups): override
// constants, bindings, counted loaders, workgroup memory and main. fused_rows.wgsl's opening
// comment describes the kernel: tiling, slices, rows, traffic, masking.
//
// The including file includes parts/header.wgsl first, declares const LANES_IN_MEMORY: bool
// (whether lanes_sum needs room in workgroup memory past the tiles, one vec4 an invocation),
// and gives after this part fn lanes_sum(li: u32, x: vec4<f32>) -> vec4<f32>: x summed over
// the TD lanes of a row, LS invocations apart (through kvm, or with subgroupShuffleXor; not
// parts/lanes_shuffle.wgsl, whose lanes are neighbours), called in uniform control flow.
//
// The K and V tiles hold slices, one mat4x4<f32> each, so that reading a slice from
// workgroup memory takes one index (one bounds check where the implementation adds them)
// for four vec4s: slice s of lane l of local key kl is element kl DS + s TD + l (the TD
// lanes' slices side by side, in other banks), its column i column group l + TD (4 s + i).

override D: u32 = 64u;       // head dimension d: 16, 32, 64 or 128
override BR: u32 = 64u;      // B_r: query rows per workgroup, R rows per TD invocations
override BC: u32 = 32u;      // B_c: keys per tile, a multiple of 4
override TD: u32 = 1u;       // lanes a row: 1, 2 or 4, at least d / 64 (64 columns a lane at most)
// Invocations between two lanes of a row: 1 (neighbours), or 8 so that the 8 invocations a
// vec4 read of workgroup memory serves at once all hold the same lane and read one address
// (with TD = 4 and neighbouring lanes, two of them would read the same banks).
override LS: u32 = 1u;
override D4: u32 = D / 4u;   // vec4s in a row
override NS: u32 = D4 / (4u * TD);  // slices (16 columns, 4 vec4s) a lane keeps: 1 to 4
override R: u32 = 1u;        // query rows an invocation keeps: 1 or 2
override GR: u32 = BR / R;   // row groups: rows g and g + GR of the tile
override THREADS: u32 = GR * TD;
override TILE4: u32 = BC * D4;  // vec4s in the K tile (and in the V tile)
override LPT: u32 = (TILE4 + THREADS - 1u) / THREADS;  // vec4s of K (and of V) an invocation loads
// Hold the next tile's share (LPT vec4s of K and of V, at most 4 each) in registers during this
// tile's arithmetic, stored after it, so that the wait for global memory overlaps the
// multiply-adds.
override PREFETCH: bool = LPT <= 4u;
override DS: u32 = D4 / 4u;  // slices in a row
override XB: u32 = 2u * BC * DS;  // where the lanes' sums go in kvm (LANES_IN_MEMORY, TD > 1)
override XM: u32 = select(0u, (THREADS + 3u) / 4u, LANES_IN_MEMORY && TD > 1u);

// #include "parts/walk.wgsl"

const LOG2E: f32 = 1.4426950408889634;

// #include "parts/qkv.wgsl"

@group(0) @binding(4) var<storage, read_write> o: array<vec4<f32>>;  // (H, N, d)

fn store_o(i: u32, x: vec4<f32>) { tally(11u, 4u); o[i] = x; }

// The K tile, then the V tile (at BC DS), as slices; then, with LANES_IN_MEMORY and TD > 1,
// a vec4 an invocation for lanes_sum (column li % 4 of element XB + li / 4).
var<workgroup> kvm: array<mat4x4<f32>, XB + XM>;

// Where vec4 e of a tile (key e / D4, column group e % D4) goes: element and column.
fn put(part: u32, e: u32, x: vec4<f32>) {
  if (e >= TILE4) { return; }
  let cg = e % D4;
  let c2 = cg / TD;
  kvm[part * BC * DS + (e / D4) * DS + (c2 / 4u) * TD + cg % TD][c2 % 4u] = x;
}

// One vec4 (e) of the K (part 0) or V (part 1) tile at key0, zero past kend.
fn fetch(part: u32, e: u32, key0: u32, kend: u32, base4: u32) -> vec4<f32> {
  var x = vec4<f32>(0.0);
  if (e < TILE4 && key0 + e / D4 < kend) {
    let g = base4 + key0 * D4 + e;
    if (part == 0u) { x = load_k(g); } else { x = load_v(g); }
  }
  return x;
}

fn max4(x: vec4<f32>) -> f32 { return max(max(x.x, x.y), max(x.z, x.w)); }

// The four products x[i] * y[i] summed, as a vec4 (its components summed later).
fn part(x: mat4x4<f32>, y: mat4x4<f32>) -> vec4<f32> {
  return x[0] * y[0] + x[1] * y[1] + x[2] * y[2] + x[3] * y[3];
}

fn load_slice(at: u32, ok: bool, scale: f32) -> mat4x4<f32> {
  var m = mat4x4<f32>();
  if (ok) {
    m = mat4x4<f32>(load_q(at), load_q(at + TD), load_q(at + 2u * TD), load_q(at + 3u * TD));
  }
  return m * scale;
}

fn store_slice(at: u32, x: mat4x4<f32>) {
  store_o(at, x[0]);
  store_o(at + TD, x[1]);
  store_o(at + 2u * TD, x[2]);
  store_o(at + 3u * TD, x[3]);
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let me = work(wg, D4, BR);
  // Its lane and group of lanes (header.wgsl's Lane, here with lanes LS invocations apart).
  let my = Lane((li / LS) % TD, li % LS + LS * (li / (LS * TD)));
  let row = me.first + my.group;  // this invocation's rows: row and, with R = 2, row + GR
  let row2 = row + GR;
  let kend = key_end(me.first, me.n, me.causal);
  let tiles = (kend + BC - 1u) / BC;
  let rows_in = me.first + BR <= me.n;  // every row of the tile is below N
  let live = row < me.n;
  let live2 = R > 1u && row2 < me.n;

  // This lane's share of its rows of Q, scaled for exp2, in slices q0 .. q3 (row) and
  // u0 .. u3 (row2): column groups my.lane + TD (4 s + i). Reads Q: r * d elements.
  let qs = LOG2E / sqrt(f32(D));
  let qa = me.base4 + row * D4 + my.lane;
  let ua = qa + GR * D4;
  var q0 = mat4x4<f32>();
  var u0 = mat4x4<f32>();
  var q1 = mat4x4<f32>();
  var u1 = mat4x4<f32>();
  var q2 = mat4x4<f32>();
  var u2 = mat4x4<f32>();
  var q3 = mat4x4<f32>();
  var u3 = mat4x4<f32>();
  if (true) {
    q0 = load_slice(qa, live, qs);
    if (R > 1u) { u0 = load_slice(ua, live2, qs); }
  }
  if (NS > 1u) {
    q1 = load_slice(qa + 4u * TD, live, qs);
    if (R > 1u) { u1 = load_slice(ua + 4u * TD, live2, qs); }
  }
  if (NS > 2u) {
    q2 = load_slice(qa + 8u * TD, live, qs);
    if (R > 1u) { u2 = load_slice(ua + 8u * TD, live2, qs); }
  }
  if (NS > 3u) {
    q3 = load_slice(qa + 12u * TD, live, qs);
    if (R > 1u) { u3 = load_slice(ua + 12u * TD, live2, qs); }
  }
  var o0 = mat4x4<f32>();
  var w0 = mat4x4<f32>();
  var o1 = mat4x4<f32>();
  var w1 = mat4x4<f32>();
  var o2 = mat4x4<f32>();
  var w2 = mat4x4<f32>();
  var o3 = mat4x4<f32>();
  var w3 = mat4x4<f32>();
  var m = NEG_BIG;  // row's running max (base 2), the same in its TD lanes
  var l = 0.0;      // and its running sum, relative to m
  var m2 = NEG_BIG;  // likewise row2's
  var l2 = 0.0;
  let one = vec4<f32>(1.0);

  // The first K and V tiles. Reads K and V: keys_in_tile * d elements each (every tile).
  for (var i = 0u; i < LPT; i++) {
    let e = li + i * THREADS;
    put(0u, e, fetch(0u, e, 0u, kend, me.base4));
    put(1u, e, fetch(1u, e, 0u, kend, me.base4));
  }
  workgroupBarrier();

  for (var t = 0u; t < tiles; t++) {
    let key0 = t * BC;
    let more = t + 1u < tiles;
    // The next tile's share into registers (PREFETCH), stored after this tile's arithmetic.
    var x0 = vec4<f32>(0.0);
    var x1 = vec4<f32>(0.0);
    var x2 = vec4<f32>(0.0);
    var x3 = vec4<f32>(0.0);
    var y0 = vec4<f32>(0.0);
    var y1 = vec4<f32>(0.0);
    var y2 = vec4<f32>(0.0);
    var y3 = vec4<f32>(0.0);
    if (PREFETCH && more) {
      x0 = fetch(0u, li, key0 + BC, kend, me.base4);
      y0 = fetch(1u, li, key0 + BC, kend, me.base4);
      if (LPT > 1u) {
        x1 = fetch(0u, li + 1u * THREADS, key0 + BC, kend, me.base4);
        y1 = fetch(1u, li + 1u * THREADS, key0 + BC, kend, me.base4);
      }
      if (LPT > 2u) {
        x2 = fetch(0u, li + 2u * THREADS, key0 + BC, kend, me.base4);
        y2 = fetch(1u, li + 2u * THREADS, key0 + BC, kend, me.base4);
      }
      if (LPT > 3u) {
        x3 = fetch(0u, li + 3u * THREADS, key0 + BC, kend, me.base4);
        y3 = fetch(1u, li + 3u * THREADS, key0 + BC, kend, me.base4);
      }
    }
    let inside = !me.causal && rows_in && key0 + BC <= kend;
    for (var j = 0u; j < BC; j += 4u) {
      // Scores of the rows against keys key0 + j .. + 3 (s: row, t: row2): the invocations of
      // a warp that hold the same lane read the same slices of K (a broadcast), each for R rows.
      let a = j * DS + my.lane;
      var s0 = vec4<f32>(0.0);
      var s1 = vec4<f32>(0.0);
      var s2 = vec4<f32>(0.0);
      var s3 = vec4<f32>(0.0);
      var t0 = vec4<f32>(0.0);
      var t1 = vec4<f32>(0.0);
      var t2 = vec4<f32>(0.0);
      var t3 = vec4<f32>(0.0);
      if (true) {
        let b = a;
        let k0 = kvm[b];
        let k1 = kvm[b + DS];
        let k2 = kvm[b + 2u * DS];
        let k3 = kvm[b + 3u * DS];
        s0 += part(q0, k0);
        s1 += part(q0, k1);
        s2 += part(q0, k2);
        s3 += part(q0, k3);
        if (R > 1u) {
          t0 += part(u0, k0);
          t1 += part(u0, k1);
          t2 += part(u0, k2);
          t3 += part(u0, k3);
        }
      }
      if (NS > 1u) {
        let b = a + TD;
        let k0 = kvm[b];
        let k1 = kvm[b + DS];
        let k2 = kvm[b + 2u * DS];
        let k3 = kvm[b + 3u * DS];
        s0 += part(q1, k0);
        s1 += part(q1, k1);
        s2 += part(q1, k2);
        s3 += part(q1, k3);
        if (R > 1u) {
          t0 += part(u1, k0);
          t1 += part(u1, k1);
          t2 += part(u1, k2);
          t3 += part(u1, k3);
        }
      }
      if (NS > 2u) {
        let b = a + 2u * TD;
        let k0 = kvm[b];
        let k1 = kvm[b + DS];
        let k2 = kvm[b + 2u * DS];
        let k3 = kvm[b + 3u * DS];
        s0 += part(q2, k0);
        s1 += part(q2, k1);
        s2 += part(q2, k2);
        s3 += part(q2, k3);
        if (R > 1u) {
          t0 += part(u2, k0);
          t1 += part(u2, k1);
          t2 += part(u2, k2);
          t3 += part(u2, k3);
        }
      }
      if (NS > 3u) {
        let b = a + 3u * TD;
        let k0 = kvm[b];
        let k1 = kvm[b + DS];
        let k2 = kvm[b + 2u * DS];
        let k3 = kvm[b + 3u * DS];
        s0 += part(q3, k0);
        s1 += part(q3, k1);
        s2 += part(q3, k2);
        s3 += part(q3, k3);
        if (R > 1u) {
          t0 += part(u3, k0);
          t1 += part(u3, k1);
          t2 += part(u3, k2);
          t3 += part(u3, k3);
        }
      }
      var s = lanes_sum(li, vec4<f32>(dot(s0, one), dot(s1, one), dot(s2, one), dot(s3, one)));
      var sb = vec4<f32>(NEG_BIG);
      if (R > 1u) {
        sb = lanes_sum(li, vec4<f32>(dot(t0, one), dot(t1, one), dot(t2, one), dot(t3, one)));
      }
      if (!inside) {
        let keys = vec4<u32>(key0 + j) + vec4<u32>(0u, 1u, 2u, 3u);
        var ok = keys < vec4<u32>(kend);
        var ok2 = ok;
        if (me.causal) {
          ok = ok & (keys <= vec4<u32>(row));
          ok2 = ok2 & (keys <= vec4<u32>(row2));
        }
        s = select(vec4<f32>(NEG_BIG), s, ok & vec4<bool>(live));
        sb = select(vec4<f32>(NEG_BIG), sb, ok2 & vec4<bool>(live2));
      }
      // Online softmax: a row's max moves only when one of the four scores passes it; O and
      // l are then rescaled by 2^(m_old - m_new) (0 while m is NEG_BIG).
      let mx = max4(s);
      if (mx > m) {
        let alpha = exp2(m - mx);
        l *= alpha;
        o0 *= alpha;
        if (NS > 1u) { o1 *= alpha; }
        if (NS > 2u) { o2 *= alpha; }
        if (NS > 3u) { o3 *= alpha; }
        m = mx;
      }
      let mx2 = max4(sb);
      if (R > 1u && mx2 > m2) {
        let alpha = exp2(m2 - mx2);
        l2 *= alpha;
        w0 *= alpha;
        if (NS > 1u) { w1 *= alpha; }
        if (NS > 2u) { w2 *= alpha; }
        if (NS > 3u) { w3 *= alpha; }
        m2 = mx2;
      }
      let p = select(vec4<f32>(0.0), exp2(s - vec4<f32>(m)), s > vec4<f32>(NEG_BIG));
      let pb = select(vec4<f32>(0.0), exp2(sb - vec4<f32>(m2)), sb > vec4<f32>(NEG_BIG));
      l += dot(p, one);
      l2 += dot(pb, one);
      // O += P V for the four keys: the same slices of V for R rows.
      let va = BC * DS + a;
      if (true) {
        let b = va;
        let v0 = kvm[b];
        let v1 = kvm[b + DS];
        let v2 = kvm[b + 2u * DS];
        let v3 = kvm[b + 3u * DS];
        o0 += v0 * p.x + v1 * p.y + v2 * p.z + v3 * p.w;
        if (R > 1u) { w0 += v0 * pb.x + v1 * pb.y + v2 * pb.z + v3 * pb.w; }
      }
      if (NS > 1u) {
        let b = va + TD;
        let v0 = kvm[b];
        let v1 = kvm[b + DS];
        let v2 = kvm[b + 2u * DS];
        let v3 = kvm[b + 3u * DS];
        o1 += v0 * p.x + v1 * p.y + v2 * p.z + v3 * p.w;
        if (R > 1u) { w1 += v0 * pb.x + v1 * pb.y + v2 * pb.z + v3 * pb.w; }
      }
      if (NS > 2u) {
        let b = va + 2u * TD;
        let v0 = kvm[b];
        let v1 = kvm[b + DS];
        let v2 = kvm[b + 2u * DS];
        let v3 = kvm[b + 3u * DS];
        o2 += v0 * p.x + v1 * p.y + v2 * p.z + v3 * p.w;
        if (R > 1u) { w2 += v0 * pb.x + v1 * pb.y + v2 * pb.z + v3 * pb.w; }
      }
      if (NS > 3u) {
        let b = va + 3u * TD;
        let v0 = kvm[b];
        let v1 = kvm[b + DS];
        let v2 = kvm[b + 2u * DS];
        let v3 = kvm[b + 3u * DS];
        o3 += v0 * p.x + v1 * p.y + v2 * p.z + v3 * p.w;
        if (R > 1u) { w3 += v0 * pb.x + v1 * pb.y + v2 * pb.z + v3 * pb.w; }
      }
    }
    workgroupBarrier();
    if (more) {
      if (PREFETCH) {
        put(0u, li, x0);
        put(1u, li, y0);
        if (LPT > 1u) {
          put(0u, li + 1u * THREADS, x1);
          put(1u, li + 1u * THREADS, y1);
        }
        if (LPT > 2u) {
          put(0u, li + 2u * THREADS, x2);
          put(1u, li + 2u * THREADS, y2);
        }
        if (LPT > 3u) {
          put(0u, li + 3u * THREADS, x3);
          put(1u, li + 3u * THREADS, y3);
        }
      } else {
        for (var i = 0u; i < LPT; i++) {
          let e = li + i * THREADS;
          put(0u, e, fetch(0u, e, key0 + BC, kend, me.base4));
          put(1u, e, fetch(1u, e, key0 + BC, kend, me.base4));
        }
      }
    }
    workgroupBarrier();
  }

  // O / l for rows below N. Writes O: r * d elements.
  if (live) {
    let f = select(0.0, 1.0 / l, l > 0.0);
    store_slice(qa, o0 * f);
    if (NS > 1u) { store_slice(qa + 4u * TD, o1 * f); }
    if (NS > 2u) { store_slice(qa + 8u * TD, o2 * f); }
    if (NS > 3u) { store_slice(qa + 12u * TD, o3 * f); }
  }
  if (live2) {
    let f = select(0.0, 1.0 / l2, l2 > 0.0);
    store_slice(ua, w0 * f);
    if (NS > 1u) { store_slice(ua + 4u * TD, w1 * f); }
    if (NS > 2u) { store_slice(ua + 8u * TD, w2 * f); }
    if (NS > 3u) { store_slice(ua + 12u * TD, w3 * f); }
  }
}
