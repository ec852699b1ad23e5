# Wrong: a causal mask for bug 5 (key 0 is visible to every row, so no tile
# a row meets first is ever all masked), and too few keys for bug 1.
inputs = {
    1: "random_qkv(n=4, d=4, seed=1, scale=10.0)",
    2: "random_qkv(n=8, d=4, seed=1, scale=400.0)",
    3: "random_qkv(n=8, d=4, seed=1, scale=1.0)",
    4: "random_qkv(n=7, d=4, seed=1)",
    5: "random_qkv(n=16, d=4, seed=1, causal=True)",
}
