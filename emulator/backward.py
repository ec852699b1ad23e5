"""The backward pass of attention, checked: a kernel's float32 dQ, dK, dV held to
the exact float64 gradients, entry by entry, within a first-order float32 bound.

Three modules do the work, one concern each, and this one ties them:

* emulator.backward_reference: the float64 forward and its exact gradients
  (FlashAttention, arXiv:2205.14135, Appendix B.2; FlashAttention-2,
  arXiv:2307.08691, Algorithm 2), and which keys each row sees;
* emulator.backward_mirrors: the float32 mirror of each WGSL backward kernel
  (its arithmetic in its order, and the loads and stores it makes), and the
  float32 forward whose O and L a backward reads;
* emulator.backward_bounds: the error bound per entry and the comparison.

Shapes: Q, K, V, O, dO are (N, d) lists of rows of float32 values held as
Python floats; L and D are N floats. One head. The names other modules use
(the reference, the bound, the float32 forward, dO's seeded inputs) are
importable from here too.
"""
from __future__ import annotations

from . import backward_mirrors as _mirrors
from .backward_bounds import bounds, compare
from .backward_mirrors import TENSORS, _blocks, forward32
from .backward_reference import allowed_keys, forward64, reference
from .i18n import _, group
from .inputs import random_do, random_qkv
from .tiling import M_DEFAULT, InputError

__all__ = ["CHECK_MAX_N", "KERNELS", "FORWARD_OF", "TENSORS", "allowed_keys", "bounds", "check",
           "check_arrays", "compare", "forward32", "forward64", "kernel_name", "random_do", "reference",
           "too_large_message"]

#: The lab's kernel names (with "direction": "backward") → manifest entries.
KERNELS = {
    "plain": "plain-backward",
    "fused": "fused-backward",
    "fused-no-D": "fused-backward-no-D",
}
#: The forward kernel whose output each backward kernel differentiates (for backward ÷ forward).
FORWARD_OF = {"plain-backward": "plain", "fused-backward": "fused", "fused-backward-no-D": "fused"}
#: The float32 mirror of each backward kernel.
MIRRORS = {"plain-backward": _mirrors.plain, "fused-backward": _mirrors.fused,
           "fused-backward-no-D": _mirrors.fused_no_d}
#: Check forms N×N tables in Python: it stops at this N (counts go to 65,536).
CHECK_MAX_N = 256


def too_large_message(n: int) -> str:
    """Why the backward check refuses N > CHECK_MAX_N, in the active language."""
    return _("The backward check forms N×N tables in Python, so it stops at N = {limit}; N = {n} would take "
             "too long. Count works at any N.").format(limit=group(CHECK_MAX_N), n=group(n))


def kernel_name(kernel: str) -> str:
    """Manifest name of a backward kernel given its lab name or manifest name.

    Raises InputError (field "kernel") for any other name.
    """
    if kernel in KERNELS:
        return KERNELS[kernel]
    if kernel in KERNELS.values():
        return kernel
    raise InputError("kernel", _("Unknown backward kernel {kernel}; choose one of {names}.").format(
        kernel=repr(kernel), names=", ".join(KERNELS)))



def check_arrays(kernel: str, q: list, k: list, v: list, do: list, causal: bool = False,
                 mask: list | None = None, workgroup_bytes: int = M_DEFAULT,
                 block_rows: int | None = None, block_cols: int | None = None) -> dict:
    """Run a backward mirror and hold dQ, dK, dV to float64 within :func:`bounds`.

    q, k, v, do: (N, d) float32 rows. The mirror gets O and L from the float32
    fused forward (:func:`forward32`), as a real backward gets them from its
    forward; the reference differentiates the exact float64 forward.
    Every entry must satisfy |mirror − float64| ≤ its bound (NaN or inf fails).

    Returns {"kernel", "direction": "backward", "n", "d", "causal",
    "workgroup_bytes", "block_rows", "block_cols", "passed",
    "tensors": {"dQ"|"dK"|"dV": {"passed", "max_abs_error", "max_bound",
    "worst_ratio", "worst_error", "worst_bound", "worst_row", "worst_col",
    "nan_entries"}}, "identity_residual" (float64, see :func:`reference`),
    "bound_rule"}. Raises InputError for an unknown kernel or a tile that
    does not fit.
    """
    name = kernel_name(kernel)
    n, d = len(q), len(q[0])
    br, bc = _blocks(d, workgroup_bytes, block_rows, block_cols)
    o32, l32 = forward32(q, k, v, causal, mask, bc)
    ref = reference(q, k, v, do, causal, mask)
    bnd = bounds(q, k, v, do, ref, causal, mask, bc)
    dq, dk, dv, _traffic = MIRRORS[name](q, k, v, o32, l32, do, causal, mask, workgroup_bytes, br, bc)
    tensors = {t: compare(got, ref[t], bnd[t]) for t, got in (("dQ", dq), ("dK", dk), ("dV", dv))}
    return {
        "kernel": name, "direction": "backward", "n": n, "d": d, "causal": bool(causal),
        "workgroup_bytes": workgroup_bytes, "block_rows": br, "block_cols": bc,
        "passed": all(t["passed"] for t in tensors.values()),
        "tensors": tensors,
        "identity_residual": ref["identity_residual"],
        "bound_rule": "first-order float32 bound per entry (emulator.backward.bounds)",
    }


def check(kernel: str, n: int, d: int, causal: bool = False, seed: int = 0,
          workgroup_bytes: int = M_DEFAULT) -> dict:
    """Check a backward kernel on seeded inputs: Q, K, V from emulator.inputs, dO from :func:`random_do`.

    Raises InputError (field "n") for N > CHECK_MAX_N: the check holds N×N tables in Python.
    """
    if n > CHECK_MAX_N:
        raise InputError("n", too_large_message(n))
    q, k, v = random_qkv(n, d, seed)
    report = check_arrays(kernel, q, k, v, random_do(n, d, seed), causal,
                          workgroup_bytes=workgroup_bytes)
    report["seed"] = seed
    return report
