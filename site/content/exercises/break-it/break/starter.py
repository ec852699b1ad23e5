# One input per bug, as text: a call of random_qkv(...) or a dict of Q, K, V.
# Each must make its bug differ from the float64 reference by more than the
# bound while the correct kernel stays within it.
inputs = {
    1: "",  # the rescale left out
    2: "",  # the max not subtracted
    3: "",  # the sum l rescaled by the wrong factor
    4: "",  # the last ragged tile skipped
    5: "",  # NaN from an all-masked tile
}
