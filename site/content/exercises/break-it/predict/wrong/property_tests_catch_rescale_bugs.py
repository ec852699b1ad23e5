# Wrong: expects the two rescale bugs to fail the same tests, small random scores
# included; bug 3's weights add up to less than one, so its O stays in range.
catches = {
    1: ["test_key_order_does_not_matter", "test_outputs_lie_within_the_values", "test_random_small_scores"],
    2: [],
    3: ["test_key_order_does_not_matter", "test_outputs_lie_within_the_values"],
    4: ["test_zero_queries_average_the_values"],
    5: [],
}
