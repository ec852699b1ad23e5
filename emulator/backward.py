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

from . import mirrors
from .backward_bounds import bounds, compare
from .backward_mirrors import TENSORS, forward32
from .backward_reference import allowed_keys, forward64, reference
from .i18n import _, group
from .inputs import random_do, random_qkv
from .tiling import M_DEFAULT, MANIFEST, InputError, lesson_blocks, make_tiling

__all__ = ["CHECK_MAX_N", "TENSORS", "allowed_keys", "bounds", "check", "check_arrays", "compare", "forward32",
           "forward64", "forward_of", "kernel_name", "lab_names", "random_do", "reference", "too_large_message"]

#: Check forms N×N tables in Python: it stops at this N (counts go to 65,536).
CHECK_MAX_N = 256


def too_large_message(n: int) -> str:
    """Why the backward check refuses N > CHECK_MAX_N, in the active language."""
    return _("The backward check forms N×N tables in Python, so it stops at N = {limit}; N = {n} would take "
             "too long. Count works at any N.").format(limit=group(CHECK_MAX_N), n=group(n))


def _backward_kernels() -> dict:
    """The manifest's backward kernels, in its order: {name: entry}."""
    return {name: e for name, e in MANIFEST["kernels"].items() if e.get("direction") == "backward"}


def lab_names() -> tuple:
    """The names the lab's backward kernels answer to (manifest "lab_name"), in manifest order."""
    return tuple(e["lab_name"] for e in _backward_kernels().values() if e.get("lab_name"))


def kernel_name(kernel: str) -> str:
    """Manifest name of a backward kernel given its lab name ("lab_name") or manifest name.

    Raises InputError (field "kernel") for any other name.
    """
    for name, entry in _backward_kernels().items():
        if kernel in (name, entry.get("lab_name")):
            return name
    raise InputError("kernel", _("Unknown backward kernel {kernel}; choose one of {names}.").format(
        kernel=repr(kernel), names=", ".join(lab_names())))


def forward_of(kernel: str) -> str:
    """The forward kernel whose output a backward kernel differentiates (its manifest
    "forward"), for backward ÷ forward traffic. Raises InputError as :func:`kernel_name`,
    and ValueError for a backward entry that names no forward kernel."""
    name = kernel_name(kernel)
    forward = MANIFEST["kernels"][name].get("forward")
    if forward not in MANIFEST["kernels"]:
        raise ValueError(f"kernels_wgsl/manifest.json: the backward kernel {name!r} names no forward kernel "
                         f"(\"forward\": {forward!r})")
    return forward


def _blocks(d: int, workgroup_bytes: int, block_rows, block_cols):
    """(B_r, B_c): the given tiles, or the lesson's from M when either is None.

    Raises ValueError when B_c does not divide B_r, and InputError for a tile that does not fit.
    """
    if block_rows is None or block_cols is None:
        return lesson_blocks(d, workgroup_bytes)
    if block_rows % block_cols:
        raise ValueError(f"B_r = {block_rows} must be a multiple of B_c = {block_cols}")
    return block_rows, block_cols


def check_arrays(kernel: str, q: list, k: list, v: list, do: list, causal: bool = False,
                 mask: list | None = None, workgroup_bytes: int = M_DEFAULT,
                 block_rows: int | None = None, block_cols: int | None = None) -> dict:
    """Run a backward kernel's mirror (emulator.mirrors) and hold dQ, dK, dV to float64 within :func:`bounds`.

    q, k, v, do: (N, d) float32 rows. The mirror gets O and L from the float32
    fused forward (:func:`forward32`), as a real backward gets them from its
    forward; the reference differentiates the exact float64 forward.
    Every entry must satisfy |mirror − float64| ≤ its bound (NaN or inf fails).

    Returns {"kernel", "direction": "backward", "n", "d", "causal",
    "workgroup_bytes", "block_rows", "block_cols", "passed",
    "tensors": {"dQ"|"dK"|"dV": {"passed", "max_abs_error", "max_bound",
    "worst_ratio", "worst_error", "worst_bound", "worst_row", "worst_col",
    "nan_entries"}}, "identity_residual" (float64, see :func:`reference`),
    "bound_rule"}. Raises InputError for an unknown kernel, one without a
    mirror, or a tile that does not fit.
    """
    name = kernel_name(kernel)
    n, d = len(q), len(q[0])
    if block_rows is None and MANIFEST["kernels"][name]["tiling"] != "lesson":
        t = make_tiling(name, n, d, causal, workgroup_bytes)  # the kernel's own tiles
        block_rows, block_cols = t.block_rows, t.block_cols
    br, bc = _blocks(d, workgroup_bytes, block_rows, block_cols)
    o32, l32 = forward32(q, k, v, causal, mask, bc)
    ref = reference(q, k, v, do, causal, mask)
    bnd = bounds(q, k, v, do, ref, causal, mask, bc)
    got = mirrors.run(name, {"Q": q, "K": k, "V": v, "O": o32, "L": l32, "dO": do, "causal": causal, "mask": mask},
                      br, bc)
    tensors = {t: compare(got[t], ref[t], bnd[t]) for t in ("dQ", "dK", "dV")}
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
