# Wrong: inputs the judge cannot read (a name it does not know, sizes past the
# limits, a key_mask of the wrong length).
inputs = {
    1: "random_qkv(n=8, d=4, seed=1, scale=x)",
    2: "random_qkv(n=100, d=4, seed=1, scale=400.0)",
    3: "random_qkv(n=8, d=32, seed=1)",
    4: "{'Q': [[1.0]], 'K': [[1.0]], 'V': [[1.0]], 'key_mask': [True, False]}",
    5: "__import__('os').getcwd()",
}
