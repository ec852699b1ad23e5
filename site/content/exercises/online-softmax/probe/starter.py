def io_bytes(kernel, n, d, workgroup_bytes):
    """Bytes moved to and from global memory by `kernel` ("plain" or "fused"),
    one head, float32, full attention, lab tiling."""
    return 0


print(io_bytes("fused", 4096, 16, 16384))   # the lesson's figure: 17,301,504
