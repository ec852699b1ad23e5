# Wrong: counts the score table once, not its four trips (S and P, each written and read).
N, d, M = 1024, 32, 16384
query_tiles = -(-N // ((M // 2) // (4 * d)))
fused_bytes = 4 * (2 * N * d + 2 * d * N * query_tiles)
plain_bytes = fused_bytes + 4 * N * N
