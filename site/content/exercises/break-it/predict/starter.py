# For each bug, the weak tests you think FAIL on it: a list of names, [] for none.
# The tests: "test_one_tile", "test_zero_queries_average_the_values",
# "test_random_small_scores", "test_key_order_does_not_matter",
# "test_outputs_lie_within_the_values".
catches = {
    1: None,  # the rescale left out
    2: None,  # the max not subtracted
    3: None,  # the sum l rescaled by the wrong factor
    4: None,  # the last ragged tile skipped
    5: None,  # NaN from an all-masked tile
}
