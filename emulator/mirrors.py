"""Each kernel's float32 mirror, found through its manifest entry's "mirror" key.

A kernel's entry in kernels_wgsl/manifest.json names the function in emulator/
that does its arithmetic in float32, in its order (``"mirror": "module.function"``,
e.g. ``"attention.fused"`` or ``"backward_mirrors.fused"``), or ``null`` when the
emulator has none yet: Check then refuses the kernel with a message, and Count
and Time, which need no mirror, still take it. Nothing else lists the mirrors.

Every mirror is called the same way, forward or backward::

    mirror(x, block_rows, block_cols) -> dict

``x`` holds the inputs by name, ``block_rows`` and ``block_cols`` are B_r and
B_c (B_c divides B_r), and the outputs come back by name:

* forward ("direction": "forward"), one query row at a time, as the checker
  walks rows (emulator.attention): x = {"dots": the row's float64 q·k_j for
  the keys it sees, "vt": V's d columns (float32), "d": d, "s32": the float32
  scores already formed or None, "plain_e": the plain kernel's exp(s_j − max s)
  or None}; returns {"O": d float32 values, "L": the row's logsumexp};
* backward ("direction": "backward"), one head (emulator.backward_mirrors):
  x = {"Q", "K", "V", "dO": (N, d) float32 rows, "O": (N, d) and "L": N float32
  values from the forward, "causal": bool, "mask": N lists of N bools or None};
  returns {"dQ", "dK", "dV": (N, d) float32 rows, "traffic": the bytes it loaded
  and stored, per pass and tensor};
* a float16 kernel ("dtype": "float16", emulator.float16_mirrors), one head: x = {"Q", "K",
  "V": (N, d) rows, rounded to float16 first, "causal": bool}; returns {"O": (N, d)
  float16 values, inf and NaN kept, "lost": the rows with an inf or NaN}.
"""
from __future__ import annotations

from functools import cache
from importlib import import_module

from .i18n import _
from .tiling import MANIFEST, InputError


def mirror_name(kernel: str) -> str | None:
    """The manifest's "mirror" of ``kernel`` ("module.function"), or None when it has none.

    Raises KeyError for a kernel the manifest does not declare.
    """
    return MANIFEST["kernels"][kernel].get("mirror")


@cache
def _function(name: str):
    """The function ``name`` ("module.function", module in emulator/) names.

    Raises ValueError when no such module or function exists: a manifest entry
    that names a mirror must name a real one (tests/test_manifest_walk.py).
    """
    module, dot, func = name.partition(".")
    try:
        found = getattr(import_module(f"{__package__}.{module}"), func) if dot and func else None
    except (ImportError, AttributeError):
        found = None
    if not callable(found):
        raise ValueError(f"kernels_wgsl/manifest.json names the mirror {name!r}, "
                         f"but emulator/ has no function of that name")
    return found


def mirror_of(kernel: str):
    """The float32 mirror of ``kernel``: f(x, block_rows, block_cols) -> dict (module docstring).

    Raises KeyError for a kernel the manifest does not declare, InputError
    (field "kernel") for one whose "mirror" is null, with a sentence the page
    shows, and ValueError for a "mirror" that names no function.
    """
    name = mirror_name(kernel)
    if name is None:
        raise InputError("kernel", _("The {kernel} kernel has no float32 mirror in the emulator yet, so Check "
                                     "cannot run it; Count still can.").format(kernel=kernel))
    return _function(name)


def run(kernel: str, x: dict, block_rows: int, block_cols: int) -> dict:
    """Run ``kernel``'s mirror on the inputs ``x`` at tiles B_r × B_c; its outputs by name.

    Inputs and outputs as the module docstring gives them for the kernel's
    direction. Raises as :func:`mirror_of`.
    """
    return mirror_of(kernel)(x, block_rows, block_cols)
