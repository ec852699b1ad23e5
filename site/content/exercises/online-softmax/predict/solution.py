# Predict: one head, float32 (4 bytes), N = 1024, d = 32, M = 16,384 B, full attention.
N, d, M = 1024, 32, 16384
block_rows = (M // 2) // (4 * d)          # B_r: query rows on the bench
query_tiles = -(-N // block_rows)         # T_r = ceil(N / B_r)
fused_bytes = 4 * (2 * N * d + 2 * d * N * query_tiles)   # Q, O once; K, V once per query tile
plain_bytes = fused_bytes + 4 * (4 * N * N)               # + S written, read; P written, read
