# Right, another style: the count as one closed form in numbers of elements, with the number of
# query tiles from math.ceil, then four bytes each.
import math


def io_bytes(kernel, n, d, workgroup_bytes):
    b_c = workgroup_bytes // 16 // d          # half of M for K and V: 2 tiles x 4 bytes x d
    t_r = math.ceil(n / (2 * b_c))            # query tiles of B_r = 2 B_c rows
    elements = 2 * n * d + t_r * 2 * n * d    # Q in, O out; K and V once per query tile
    if kernel == "plain":
        elements += 4 * n * n                 # S and P, each written once and read once
    return 4 * elements
