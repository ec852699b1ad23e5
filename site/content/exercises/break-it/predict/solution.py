# Which weak tests fail on each bug: queries equal to the keys expose bugs 1 and 3,
# a ragged tile of keys bug 4; small scores and no masks hide bugs 2 and 5.
catches = {
    1: ["test_key_order_does_not_matter", "test_outputs_lie_within_the_values"],  # weights sum past 1
    2: [],  # the max not subtracted: exp(0.01) is nowhere near overflow
    3: ["test_key_order_does_not_matter"],  # weights sum under 1: O shrinks, stays in range
    4: ["test_zero_queries_average_the_values"],  # N = 6: the ragged tile of 2 keys skipped
    5: [],  # NaN from an all-masked tile: nothing is ever masked
}
