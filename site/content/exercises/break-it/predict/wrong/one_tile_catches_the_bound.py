# Wrong: expects the single-tile test to catch the off-by-one tile count
# (four keys are one full tile: 4 // 4 = 1, nothing is skipped), and the mean
# test to catch the NaN (nothing in it is masked).
catches = {
    1: ["test_key_order_does_not_matter", "test_outputs_lie_within_the_values"],
    2: [],
    3: ["test_key_order_does_not_matter"],
    4: ["test_one_tile"],
    5: ["test_zero_queries_average_the_values"],
}
