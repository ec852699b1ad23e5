# Wrong: one input for bugs 1 to 4, with everything at once: scores of about 1,000 and
# N_k = 10 (a ragged tile). Each of the four kernels fails on it, and so do the three
# others, which other inputs spare: it shows that the kernels differ, not what each bug needs.
inputs = {
    1: "random_qkv(n=10, d=4, seed=1, scale=1000.0)",
    2: "random_qkv(n=10, d=4, seed=1, scale=1000.0)",
    3: "random_qkv(n=10, d=4, seed=1, scale=1000.0)",
    4: "random_qkv(n=10, d=4, seed=1, scale=1000.0)",
    5: "random_qkv(n=8, d=4, seed=1, masked_keys=[0, 1, 2, 3])",
}
