# Right, by walking the query tiles one by one instead of a closed form (the last one short).
def io_bytes(kernel, n, d, workgroup_bytes):
    block_cols = workgroup_bytes // 2 // (2 * 4 * d)
    block_rows = 2 * block_cols
    numbers = 0
    for r0 in range(0, n, block_rows):
        rows = min(block_rows, n - r0)
        numbers += rows * d + 2 * n * d + rows * d      # Q tile in, K and V streamed past, O tile out
        if kernel == "plain":
            numbers += 4 * rows * n                     # its strip of S and P, out and back
    return 4 * numbers
