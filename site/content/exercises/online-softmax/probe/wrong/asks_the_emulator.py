# Wrong: asks the emulator for the count the tests compare with. Right numbers, no counting.
from emulator import traffic


def io_bytes(kernel, n, d, workgroup_bytes):
    """Bytes moved to and from global memory by `kernel` ("plain" or "fused"),
    one head, float32, full attention, lab tiling."""
    return traffic.count(kernel, n, d, False, workgroup_bytes).total_bytes
