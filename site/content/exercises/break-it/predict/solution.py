# No weak test catches any of the five: small scores, N a multiple of 4, no masks.
catches = {
    1: [],  # the rescale left out: off by ~0.004 at scores of 0.01, under 0.0078
    2: [],  # the max not subtracted: exp(0.01) is nowhere near overflow
    3: [],  # the sum l rescaled by the wrong factor: off by ~0.004, like bug 1
    4: [],  # the last ragged tile skipped: there is no ragged tile
    5: [],  # NaN from an all-masked tile: nothing is ever masked
}
