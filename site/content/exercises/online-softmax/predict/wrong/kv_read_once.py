# Wrong: assumes K and V are read once in all, not once per query tile.
N, d = 1024, 32
fused_bytes = 4 * 4 * N * d
plain_bytes = fused_bytes + 4 * 4 * N * N
