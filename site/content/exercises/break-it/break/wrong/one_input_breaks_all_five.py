# Wrong: one input for every bug, with everything at once: keys 0 to 3 masked, N_k = 10 (a
# ragged tile), scores in the hundreds. All five kernels fail on it, so it shows that they
# differ, not which line each gets wrong.
inputs = {
    1: "random_qkv(n=10, d=4, seed=1, scale=400.0, masked_keys=[0, 1, 2, 3])",
    2: "random_qkv(n=10, d=4, seed=1, scale=400.0, masked_keys=[0, 1, 2, 3])",
    3: "random_qkv(n=10, d=4, seed=1, scale=400.0, masked_keys=[0, 1, 2, 3])",
    4: "random_qkv(n=10, d=4, seed=1, scale=400.0, masked_keys=[0, 1, 2, 3])",
    5: "random_qkv(n=10, d=4, seed=1, scale=400.0, masked_keys=[0, 1, 2, 3])",
}
