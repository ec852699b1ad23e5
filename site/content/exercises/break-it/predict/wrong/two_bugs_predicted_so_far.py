# Not yet judged: two bugs predicted, three still None. Every test fails and none
# names the weak tests that fail: the answers come once all five are predicted.
catches = {
    1: ["test_key_order_does_not_matter"],
    2: [],
    3: None,
    4: None,
    5: None,
}
