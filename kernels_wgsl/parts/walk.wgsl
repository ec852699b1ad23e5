// parts/walk.wgsl: which keys a query tile visits, and which query rows reach a key tile
// (the walks of manifest.json, emulator/traffic.py; cannery_host.wgpu_runner causal_key_end).
// Needs the including kernel's overrides BR (B_r, rows of a query tile) and BC (B_c,
// keys of a key tile).

// One past the last key the query tile starting at row0 visits (keys [0, kend)): N for
// full attention; under causal, min(N, ceil(b / B_c) B_c) with b one past the tile's last
// row, so key tiles wholly past the diagonal are skipped and a visited tile is whole.
fn key_end(row0: u32, n: u32, causal: bool) -> u32 {
  let row_last = min(n, row0 + BR) - 1u;
  return select(n, min(n, (row_last / BC + 1u) * BC), causal);
}

// The first query row that reaches the key tile starting at key0 (rows [first, N)): 0 for
// full attention; under causal, the first row of the query tile that holds row key0, as
// the query-tile passes visit it (key_end of that tile passes key0).
fn first_row(key0: u32, causal: bool) -> u32 {
  return select(0u, (key0 / BR) * BR, causal);
}
