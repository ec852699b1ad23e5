# Wrong: each input reaches its bug's line but does not make it matter
# (one key tile, a score that still fits, N_k a multiple of 4, a masked second tile).
inputs = {
    1: 'random_qkv(n=4, d=4, seed=1, scale=3.0)',
    2: '{"Q": [[26.0], [1.0]], "K": [[26.0], [1.0]], "V": [[1.0], [-1.0]]}',
    3: 'random_qkv(n=4, d=8, seed=2, scale=5.0)',
    4: 'random_qkv(n=8, d=4, seed=1)',
    5: 'random_qkv(n=8, d=4, seed=1, masked_keys=[4, 5, 6, 7])',
}
