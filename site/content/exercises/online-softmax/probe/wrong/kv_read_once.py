# Wrong: K and V read once in all, not once per query tile.
def io_bytes(kernel, n, d, workgroup_bytes):
    """Bytes moved to and from global memory by `kernel` ("plain" or "fused"),
    one head, float32, full attention, lab tiling."""
    numbers = 2 * n * d                                  # Q read once, O written once
    numbers += 2 * d * n
    if kernel == "plain":
        numbers += 4 * n * n                             # S written, read; P written, read
    return 4 * numbers                                   # float32: 4 bytes a number
