# Wrong: trusts the property tests to notice a missing or inverted rescale.
catches = {
    1: ["test_key_order_does_not_matter", "test_random_small_scores"],
    2: [],
    3: ["test_key_order_does_not_matter"],
    4: [],
    5: [],
}
