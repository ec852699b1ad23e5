"""What each WGSL pass asks of a GPU, read from the shader source itself.

Standard library only (it runs in the page's Pyodide worker, which gets the
``.wgsl`` files in py/bundle.json). For one pass of a manifest kernel at
head dimension d and a tiling, :func:`pass_shader` gives the shader it runs,
and its :class:`Shader` the figures WebGPU limits bound (WebGPU §3.6.2
"Limits"; the defaults are the manifest's ``webgpu_default_limits``), which
planner turns into a plan:

* the workgroup size (x, y, z) and invocations per workgroup, from the entry
  point's ``@workgroup_size`` evaluated with the pipeline's override constants
  (maxComputeWorkgroupSizeX/Y/Z, maxComputeInvocationsPerWorkgroup);
* bytes of ``var<workgroup>`` arrays (maxComputeWorkgroupStorageSize);
* ``var<storage>`` bindings, the instrument's counters included
  (maxStorageBuffersPerShaderStage);
* the largest storage binding, bytes (maxStorageBufferBindingSize, maxBufferSize);
* workgroups dispatched per dimension (maxComputeWorkgroupsPerDimension).

The override constants of a pass (:func:`pass_variant`): the names in
"overrides" take D, BR, BC from the tiling; "constants", "constants_by_n" and
"constants_by_d" add fixed values; a "with_subgroups" variant replaces file and
constants on devices whose subgroups are large enough. The plan carries them to the native
host and the page, which compile exactly what it names.
"""
from __future__ import annotations

import ast
import functools
import os
import re

from emulator.tiling import BYTES, MANIFEST, Tiling

KERNEL_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kernels_wgsl")
INSTRUMENT_MARKER = MANIFEST["instrument"]["marker"]
# WebGPU §3.6.2: what a device has when nothing more is asked for (manifest, one copy).
DEFAULT_LIMITS = {k: int(v) for k, v in MANIFEST["webgpu_default_limits"].items() if k != "comment"}

# Tensors shaped (N, N) per head; (N,) per head; every other tensor is (N, d).
SQUARE_TENSORS = frozenset({"S", "P", "dS", "dP"})
ROW_TENSORS = frozenset({"L", "D", "m", "l", "logsumexp"})


def instrument(source: str) -> str:
    """The instrumented build of a WGSL source: every line that starts with the
    manifest's marker ("// @instrument: ") uncommented (gpu/files.js does the same)."""
    return re.sub(r"^(\s*)" + re.escape(INSTRUMENT_MARKER), r"\1", source, flags=re.M)


# ---------------------------------------------------------------------------
# WGSL from parts: the include step (gpu/files.js joinSource does the same)

#: A line that is only ``// #include "parts/header.wgsl"``: the part's path, relative to kernels_wgsl/.
INCLUDE = re.compile(r'[ \t]*// #include "([^"]*)"[ \t]*')
#: What a part's path may be: relative segments of letters, digits, "_", "-", "." (none
#: starting with "."), ending in .wgsl, so no include leaves kernels_wgsl/.
PART_PATH = re.compile(r"[A-Za-z0-9_][\w.-]*(?:/[A-Za-z0-9_][\w.-]*)*\.wgsl", re.A)


class IncludeError(ValueError):
    """An include directive that cannot be joined: a bad path or a cycle (the message
    names the file, the line and the chain)."""


def _read_file(file: str) -> str:
    with open(os.path.join(KERNEL_DIR, file), encoding="utf-8") as f:
        return f.read()


def join_source(file: str, read=_read_file) -> str:
    """kernels_wgsl/<file> with its parts joined in: every line that is only
    ``// #include "parts/x.wgsl"`` (path relative to kernels_wgsl/) is replaced by that
    part's text, less one trailing newline, itself joined first (depth first, in order).

    A part already joined into this shader is not joined twice: its later directive
    becomes the comment ``// (#include "parts/x.wgsl": already included above)``, so two
    parts may both include the header. ``read(path) -> str`` reads one file (default:
    from KERNEL_DIR). gpu/files.js ``joinSource`` gives the same text byte for byte
    (tests/test_js_parity.py).

    Raises FileNotFoundError for a missing file (naming the directive's file and line),
    IncludeError for a path outside kernels_wgsl/ or a cycle (naming the chain).
    """
    seen = {file}

    def join(name: str, text: str, chain: list[str]) -> str:
        lines = text.split("\n")
        for i, line in enumerate(lines):
            m = INCLUDE.fullmatch(line)
            if m is None:
                continue
            part = m.group(1)
            where = f'{name}, line {i + 1}: #include "{part}"'
            if not PART_PATH.fullmatch(part):
                raise IncludeError(f"{where}: a part's path is relative to kernels_wgsl/ and ends in .wgsl")
            if part in chain:
                raise IncludeError(f"{where} makes a cycle: {' -> '.join([*chain, part])}")
            if part in seen:
                lines[i] = f'// (#include "{part}": already included above)'
                continue
            seen.add(part)
            try:
                part_text = read(part)
            except FileNotFoundError:
                raise FileNotFoundError(f"{where}: no such file in kernels_wgsl/") from None
            body = join(part, part_text, [*chain, part])
            lines[i] = body[:-1] if body.endswith("\n") else body
        return "\n".join(lines)

    return join(file, read(file), [file])


def read_source(file: str) -> str:
    """The text of kernels_wgsl/<file> as a host compiles it, parts joined
    (:func:`join_source`); raises FileNotFoundError or IncludeError."""
    return join_source(file)


# ---------------------------------------------------------------------------
# Pipeline constants (the plan hands them to the host and the page)

def shader_file(spec: dict, d: int) -> str:
    """The .wgsl file of one pass at head dimension d ("file_by_d" overrides "file")."""
    return spec.get("file_by_d", {}).get(str(d), spec["file"])


def override_constants(spec: dict, d: int, tiling: Tiling) -> dict:
    """Override constants for one pass: those it lists in "overrides" (D, BR, BC from
    the tiling), then its "constants" (booleans as 0/1), then "constants_by_n" (the entry
    with the smallest key N' >= N: constants for problems of at most N' keys, such as fewer
    invocations a row where a short row would leave registers empty), then "constants_by_d"."""
    values = {"D": d, "BR": tiling.block_rows, "BC": tiling.block_cols}
    out = {name: values[name] for name in spec.get("overrides", [])}
    for name, val in spec.get("constants", {}).items():
        out[name] = int(val) if isinstance(val, bool) else val
    fits = [int(most) for most in spec.get("constants_by_n", {}) if tiling.n <= int(most)]
    if fits:
        out.update(spec["constants_by_n"][str(min(fits))])
    out.update(spec.get("constants_by_d", {}).get(str(d), {}))
    return out


def pass_variant(spec: dict, d: int, tiling: Tiling, subgroup_min: int = 0) -> tuple[str, dict]:
    """The shader file and override constants of one pass at d on a device.

    A pass may give ``with_subgroups`` (file_by_d, constants_by_d, min_subgroup_size_by_d):
    at those d, a device with the subgroup feature whose smallest subgroup holds at least
    that many invocations runs that shader instead, with the same tiles (so the same
    bytes). ``subgroup_min`` is 0 on a device without subgroups.
    """
    alt = spec.get("with_subgroups") or {}
    key = str(d)
    if key in alt.get("file_by_d", {}) and subgroup_min >= alt["min_subgroup_size_by_d"][key]:
        values = {"D": d, "BR": tiling.block_rows, "BC": tiling.block_cols}
        constants = {name: values[name] for name in spec.get("overrides", [])}
        constants.update(alt.get("constants_by_d", {}).get(key, {}))
        return alt["file_by_d"][key], constants
    return shader_file(spec, d), override_constants(spec, d, tiling)


# ---------------------------------------------------------------------------
# A small evaluator for WGSL's constant integer expressions

_COMMENT = re.compile(r"//[^\n]*")
_DECL = re.compile(r"^\s*(override|const)\s+(\w+)\s*(?::\s*[\w<>]+)?\s*(?:=\s*([^;]+))?;", re.M)
_WG_SIZE = re.compile(r"@workgroup_size\s*\(([^)]*)\)")
_WG_VAR = re.compile(r"var\s*<\s*workgroup\s*>\s*(\w+)\s*:\s*([^;]+);")
_STORAGE = re.compile(r"var\s*<\s*storage\b")
_LITERAL = re.compile(r"\b(0[xX][0-9a-fA-F]+|[0-9]+)[ui]?\b")


def _to_python(expr: str) -> str:
    """WGSL integer expression text -> Python expression text (checked by _eval)."""
    text = _LITERAL.sub(lambda m: str(int(m.group(1), 0)), expr)
    text = re.sub(r"\btrue\b", "1", re.sub(r"\bfalse\b", "0", text))
    text = text.replace("&&", " and ").replace("||", " or ")
    text = re.sub(r"!(?!=)", " not ", text)
    return text.replace("/", "//")


def _eval(node, env) -> int:
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, bool)):
        return int(node.value)
    if isinstance(node, ast.Name):
        return env(node.id)
    if isinstance(node, ast.BinOp):
        a, b = _eval(node.left, env), _eval(node.right, env)
        ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
               ast.FloorDiv: lambda: a // b, ast.Mod: lambda: a % b}
        if type(node.op) in ops:
            return ops[type(node.op)]()
    if isinstance(node, ast.UnaryOp):
        x = _eval(node.operand, env)
        if isinstance(node.op, ast.Not):
            return int(not x)
        if isinstance(node.op, ast.USub):
            return -x
    if isinstance(node, ast.BoolOp):
        vals = [_eval(v, env) for v in node.values]
        return int(all(vals) if isinstance(node.op, ast.And) else any(vals))
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        a, b = _eval(node.left, env), _eval(node.comparators[0], env)
        cmp = {ast.Lt: a < b, ast.LtE: a <= b, ast.Gt: a > b, ast.GtE: a >= b,
               ast.Eq: a == b, ast.NotEq: a != b}
        return int(cmp[type(node.ops[0])])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        args = [_eval(a, env) for a in node.args]
        if node.func.id == "select" and len(args) == 3:  # select(f, t, cond)
            return args[1] if args[2] else args[0]
        if node.func.id in ("min", "max") and len(args) == 2:
            return min(args) if node.func.id == "min" else max(args)
    raise ValueError(f"not a constant integer expression WGSL planning understands: {ast.dump(node)}")


class Shader:
    """One WGSL source with its override and const declarations, evaluated with the
    pipeline's override constants (``constants``; the rest keep their defaults)."""

    def __init__(self, source: str, constants: dict | None = None):
        self.source = source
        code = _COMMENT.sub("", source)
        self.code = code
        self.decls = {m.group(2): m.group(3) for m in _DECL.finditer(code)}
        self.constants = {k: int(v) for k, v in (constants or {}).items()}
        self._cache: dict = {}

    def value(self, name: str) -> int:
        """An override or const's value (raises ValueError for an unknown name)."""
        if name in self.constants:
            return self.constants[name]
        if name in self._cache:
            return self._cache[name]
        expr = self.decls.get(name)
        if expr is None:
            raise ValueError(f"{name} is neither given nor declared with a value")
        self._cache[name] = self.eval(expr)
        return self._cache[name]

    def eval(self, expr: str) -> int:
        return _eval(ast.parse(_to_python(expr.strip()), mode="eval"), self.value)

    def workgroup_size(self) -> tuple[int, int, int]:
        """(x, y, z) of the entry point's @workgroup_size (y and z default to 1)."""
        m = _WG_SIZE.search(self.code)
        if m is None:
            raise ValueError("no @workgroup_size")
        dims = [self.eval(x) for x in _split_args(m.group(1))]
        return tuple(dims + [1] * (3 - len(dims)))  # type: ignore[return-value]

    def workgroup_bytes(self) -> int:
        """Bytes of every var<workgroup> (WGSL §14.4 memory layout: f32 4, vec4<f32> 16)."""
        total = 0  # integers (the emulator keeps built-in sum() off floats and so off everything)
        for m in _WG_VAR.finditer(self.code):
            total += self.type_size(m.group(2).strip())
        return total

    def type_size(self, t: str) -> int:
        t = t.replace(" ", "")
        scalar = {"f32": 4, "u32": 4, "i32": 4, "f16": 2, "bool": 4}
        if t in scalar:
            return scalar[t]
        m = re.fullmatch(r"atomic<(\w+)>", t)
        if m:
            return scalar[m.group(1)]
        m = re.fullmatch(r"vec([234])<(\w+)>", t)
        if m:
            n, size = int(m.group(1)), scalar[m.group(2)]
            return size * (4 if n == 3 else n)
        m = re.fullmatch(r"mat([234])x([234])<(\w+)>", t)
        if m:
            cols, rows, size = int(m.group(1)), int(m.group(2)), scalar[m.group(3)]
            return cols * size * (4 if rows == 3 else rows)
        m = re.fullmatch(r"array<(.+),([^,<>]+)>", t)
        if m:
            return self.type_size(m.group(1)) * self.eval(m.group(2))
        raise ValueError(f"workgroup variable of type {t} is not sized by this planner")

    def storage_buffers(self) -> int:
        """var<storage> declarations in the source as written (with the instrumented
        build's counters if ``source`` is instrumented)."""
        return len(_STORAGE.findall(self.code))


def _split_args(text: str) -> list[str]:
    """Split 'a, f(b, c), d' at top-level commas."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    if cur.strip():
        out.append(cur)
    return out


# ---------------------------------------------------------------------------

def tensor_bytes(name: str, n: int, d: int, heads: int = 1, size: int = BYTES) -> int:
    """Bytes of one tensor for ``heads`` heads at ``size`` bytes an element (float32's 4
    by default): S, P (and dS, dP) are N·N, row statistics (L, D, m, l) are N,
    everything else (Q, K, V, O, dQ, …) N·d."""
    if name in SQUARE_TENSORS:
        return heads * n * n * size
    if name in ROW_TENSORS:
        return heads * n * size
    return heads * n * d * size


def dispatch_size(grid: str, n: int, tiling: Tiling, heads: int = 1) -> tuple[int, int, int]:
    """Workgroups dispatched (x, y, z) for a pass's manifest "grid": query tiles
    ceil(N/B_r) or key tiles ceil(N/B_c) by heads, or N rows by heads."""
    if grid == "query_tiles":
        return -(-n // tiling.block_rows), heads, 1
    if grid == "key_tiles":
        return -(-n // tiling.block_cols), heads, 1
    if grid == "rows":
        return n, heads, 1
    raise ValueError(f"unknown grid {grid!r}")


@functools.cache
def _pass_source(file: str, instrumented: bool) -> str:
    source = read_source(file)
    return instrument(source) if instrumented else source


def pass_shader(spec: dict, d: int, tiling: Tiling, subgroup_min: int = 0,
                instrumented: bool = True) -> tuple[str, dict, Shader]:
    """The shader one pass runs at d on a device: (file, override constants, its
    :class:`Shader` with those constants), the instrumented build (the counters'
    binding declared) when ``instrumented``. Source texts are read once per process.

    Raises FileNotFoundError if the .wgsl is missing.
    """
    file, constants = pass_variant(spec, d, tiling, subgroup_min)
    return file, constants, Shader(_pass_source(file, bool(instrumented)), constants)
