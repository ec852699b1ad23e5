# Wrong: counts whole query tiles only (floor), dropping a short last tile.
def io_bytes(kernel, n, d, workgroup_bytes):
    """Bytes moved to and from global memory by `kernel` ("plain" or "fused"),
    one head, float32, full attention, lab tiling."""
    block_cols = (workgroup_bytes // 2) // (2 * 4 * d)   # B_c: key and value tiles share half of M
    block_rows = 2 * block_cols                          # B_r: the query tile
    query_tiles = n // block_rows
    numbers = 2 * n * d                                  # Q read once, O written once
    numbers += 2 * d * n * query_tiles                   # K and V read once per query tile
    if kernel == "plain":
        numbers += 4 * n * n                             # S written, read; P written, read
    return 4 * numbers                                   # float32: 4 bytes a number
