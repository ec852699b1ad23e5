# One input per bug that exposes it (the reasons are in solution.toml).
inputs = {
    1: 'random_qkv(n=8, d=4, seed=1, scale=1.0)',
    2: '{"Q": [[30.0], [1.0]], "K": [[30.0], [1.0]], "V": [[1.0], [-1.0]]}',
    3: 'random_qkv(n=8, d=4, seed=1, scale=1.0)',
    4: 'random_qkv(n=6, d=4, seed=1)',
    5: 'random_qkv(n=8, d=4, seed=1, masked_keys=[0, 1, 2, 3])',
}
