# Wrong: the emulator's count again, reached with a module name joined at run time, so that no
# import line names it. Right numbers, no counting.
def io_bytes(kernel, n, d, workgroup_bytes):
    """Bytes moved to and from global memory by `kernel` ("plain" or "fused"),
    one head, float32, full attention, lab tiling."""
    traffic = __import__("".join(["emu", "lator", ".traffic"]), fromlist=["count"])
    return traffic.count(kernel, n, d, False, workgroup_bytes).total_bytes
