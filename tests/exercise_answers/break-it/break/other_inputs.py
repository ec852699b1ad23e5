# Right, with other inputs than the solution's, each aimed at its own bug: sixteen keys in
# four tiles with scores of about 1.5 (bugs 1 and 3), one key scoring about 850 (bug 2), five
# keys with the only weight on the fifth (bug 4), eight keys with the first four masked (bug 5).
inputs = {
    1: "random_qkv(n=16, d=8, seed=3, scale=1.5)",
    2: ('{"Q": [[40.0, 0.0]], "K": [[30.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 0.0]], '
        '"V": [[1.0], [0.0], [0.0], [0.0]]}'),
    3: "random_qkv(n=16, d=8, seed=3, scale=1.5)",
    4: '{"Q": [[1.0]], "K": [[1.0], [2.0], [3.0], [4.0], [5.0]], "V": [[0.0], [0.0], [0.0], [0.0], [1.0]]}',
    5: "random_qkv(n=6, d=3, seed=2, n_keys=8, masked_keys=[0, 1, 2, 3])",
}
