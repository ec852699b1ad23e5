# Wrong: expects the single-tile test to catch the off-by-one tile count
# (four keys are one full tile: 4 // 4 = 1, nothing is skipped).
catches = {
    1: [],
    2: [],
    3: [],
    4: ["test_one_tile"],
    5: ["test_zero_queries_average_the_values"],
}
