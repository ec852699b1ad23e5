"""Exercise 4 (wgsl-kernel): static checks on a learner's WGSL shader, the step's
cases, and the judgement of an O read back from a GPU.

Standard library only (CPython 3.11 and Pyodide), like the rest of the package.
The page runs the shader on the learner's GPU through WebGPU; the tests run it
through wgpu-py (tests/test_exercise_wgsl.py). Both then call :func:`judge`.

The static checks are deliberately simple and say what they cannot see:

``no_infinity`` (WGSL spec §15.7: an implementation may assume no inf or NaN, so a
kernel must not depend on one). After comments are removed it rejects:
  * a float literal whose magnitude exceeds f32's largest finite value
    3.40282347e38 (``-1e39``, ``1e309``: Tint also refuses these at compile time);
  * the identifiers ``inf``, ``infinity``, ``INFINITY``, ``f32_inf`` and any name with
    ``inf`` as a whole underscore-separated word (``NEG_INF``): the name is the intent;
  * ``bitcast<f32>`` (or ``vec*<f32>``) of an integer literal whose exponent bits are all
    ones (0x7f800000 and 0xff800000, and NaN patterns);
  * a division by the literal zero (``1.0 / 0.0``).
It cannot see an infinity made at run time: ``exp`` of a large argument, a division
by a variable that is zero, ``-3e38 * 10.0`` folded from finite parts, a value read
from a buffer.

``uniform_barriers`` (WGSL spec §15.2, uniformity analysis): a ``workgroupBarrier()``
or ``storageBarrier()`` must be reached by every invocation of the workgroup. A
value is per-invocation ("varying") when it mentions a builtin that differs between
invocations (local_invocation_index, local_invocation_id, global_invocation_id,
subgroup_invocation_id) or a ``let``/``var`` assigned from one, followed through
assignments to a fixed point. The check reports a barrier inside an ``if``,
``else``, ``switch``, ``for`` or ``while`` whose condition is varying, and a
``return``, ``break`` or ``continue`` under a varying condition in a function that
has a barrier after it. It cannot see: a barrier in a helper function called from
a varying branch, values made varying by reading workgroup or storage memory at a
uniform index (Tint is stricter there), and loops whose trip count is uniform in
fact though their bounds mention a varying name. Tint's own analysis in the
browser is the final word; this check gives the same verdict on the shapes the
exercise is about, with a line number, also where no GPU is present.

``counted_loads`` (the instrument's own rule): every read of a storage buffer
(q, k, v) and every write of o goes through a counted helper, a function that
calls ``tally`` (``load_q``, ``load_k``, ``load_v``, ``store_o``). A shader that
reads ``k[...]`` straight from global memory, for instance to walk its whole row
of keys for the row's max before the tiles, gets the right O with bytes the
counters never see: it is not a tiled kernel, and the check names the line. It
does not follow a buffer passed by pointer, which WGSL does not allow for
storage buffers of runtime size anyway.
"""
from __future__ import annotations

import math
import re
from array import array

import planner as _plan
from emulator.accuracy import check_arrays, check_output
from emulator.i18n import _, group, short
from emulator.inputs import random_qkv
from emulator.tiling import lesson_blocks
from emulator.traffic import count

from . import content
from .testing import marked

SLUG = "wgsl-kernel"
F32_MAX = 3.4028234663852886e38
VARYING_BUILTINS = ("local_invocation_index", "local_invocation_id", "global_invocation_id",
                    "subgroup_invocation_id")
BARRIERS = ("workgroupBarrier", "storageBarrier", "textureBarrier", "workgroupUniformLoad")
BARRIER_CALL = re.compile(r"\b(" + "|".join(BARRIERS) + r")\s*\(")
_HEADER_RE = re.compile(r"^[^\n]*var<storage, read_write> counters[^\n]*\n.*?^fn tally\(.*?^}\n", re.M | re.S)


def header_block(source: str) -> str | None:
    """The shared instrument header (counters binding to the end of ``fn tally``), or None.

    The exercise's shaders stay whole files (the learner edits one in the page, and
    the page compiles it as typed, with no include step), so their copy of the block
    must equal kernels_wgsl/parts/header.wgsl's byte for byte, or the page's counters
    do not line up with the manifest's slots.
    """
    m = _HEADER_RE.search(source)
    return m.group(0) if m else None


def strip_comments(source: str) -> str:
    """``source`` with // and /* */ comments blanked (newlines kept, so lines still count)."""
    out = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), source, flags=re.S)
    return re.sub(r"//[^\n]*", "", out)


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


_FLOAT = re.compile(r"(?<![\w.])((?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)[fh]?(?![\w.])")
_INF_NAME = re.compile(r"\b(?:inf|infinity|f32_inf|\w*_inf|inf_\w*|\w*_inf_\w*)\b", re.I)
_BITCAST = re.compile(r"bitcast\s*<\s*(?:f32|vec[234]\s*<\s*f32\s*>)\s*>\s*\(\s*(0[xX][0-9a-fA-F]+|\d+)[iu]?\s*\)")
_DIV_ZERO = re.compile(r"/\s*(?:0+\.0*|\.0+)(?:[eE][+-]?\d+)?f?(?![\w.])")


def check_no_infinity(source: str) -> list[str]:
    """Problems (each "line L: ...") for infinities written into ``source``; [] if none."""
    text = strip_comments(source)
    problems = []
    for m in _FLOAT.finditer(text):
        lit = m.group(1)
        if "." not in lit and "e" not in lit.lower():
            continue  # an integer
        try:
            value = float(lit)
        except ValueError:
            continue
        if value > F32_MAX:
            problems.append(f"line {_line(text, m.start())}: " + _(
                "{literal} is beyond f32's largest finite value (about {top}), so it stands for infinity; "
                "use a finite sentinel such as {sentinel}").format(literal=lit, top="3.4e38", sentinel="-3.0e38"))
    for m in _INF_NAME.finditer(text):
        problems.append(f"line {_line(text, m.start())}: " + _(
            "the name {name} says infinity; WGSL may assume there is none, so keep a finite sentinel "
            "and skip masked keys instead").format(name=m.group(0)))
    for m in _BITCAST.finditer(text):
        bits = int(m.group(1), 0) & 0xFFFFFFFF
        if (bits >> 23) & 0xFF == 0xFF:
            problems.append(f"line {_line(text, m.start())}: "
                            + _("bitcast of {bits} makes an infinity or NaN").format(bits=m.group(1)))
    for m in _DIV_ZERO.finditer(text):
        problems.append(f"line {_line(text, m.start())}: " + _("division by the literal zero makes an infinity"))
    return sorted(set(problems), key=lambda p: int(p.split(":")[0].split()[1]))


_TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|==|!=|<=|>=|&&|\|\||[{}()\[\];,=<>!+\-*/%&|^.:@]")


def _functions(text: str):
    """Yield (name, params text, body start, body end) of each ``fn`` in comment-free text."""
    for m in re.finditer(r"\bfn\s+(\w+)\s*\(", text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        params = text[m.end():i - 1]
        brace = text.index("{", i)
        depth, j = 1, brace + 1
        while depth and j < len(text):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        yield m.group(1), params, brace + 1, j - 1


def _varying_names(params: str, body: str, seed=()) -> set[str]:
    names = set(seed)
    for m in re.finditer(r"@builtin\(\s*(\w+)\s*\)\s*(\w+)", params):
        if m.group(1) in VARYING_BUILTINS:
            names.add(m.group(2))
    decl = re.compile(r"\b(?:let|var)\s+(\w+)\s*(?::[^=;]*)?=([^;]*);|\b(\w+)\s*(?:[-+*/|&^]?=)(?!=)([^;]*);")
    changed = True
    while changed:
        changed = False
        for m in decl.finditer(body):
            name = m.group(1) or m.group(3)
            expr = m.group(2) if m.group(1) else m.group(4)
            if name and name not in names and any(re.search(rf"(?<![\w.]){re.escape(v)}\b", expr) for v in names):
                names.add(name)
                changed = True
        for m in re.finditer(r"\bfor\s*\(\s*var\s+(\w+)\s*=\s*([^;]*);", body):
            if m.group(1) not in names and any(re.search(rf"(?<![\w.]){re.escape(v)}\b", m.group(2)) for v in names):
                names.add(m.group(1))
                changed = True
    return names


def check_uniform_barriers(source: str) -> list[str]:
    """Problems (each "line L: ...") for barriers a part of the workgroup may skip; [] if none."""
    text = strip_comments(source)
    problems = []
    for _fname, params, lo, hi in _functions(text):
        body = text[lo:hi]
        barrier_at = [lo + m.start() for m in re.finditer(BARRIER_CALL, body)]
        if not barrier_at:
            continue
        # A name assigned under a varying condition is varying too (control dependence):
        # walk until no new name turns up.
        varying = _varying_names(params, body)
        while True:
            found, assigned = _walk(text, lo, hi, varying, barrier_at)
            if assigned <= varying:
                problems.extend(found)
                break
            varying = _varying_names(params, body, varying | assigned)
    return problems


def _walk(text: str, lo: int, hi: int, varying: set, barrier_at: list) -> tuple[list, set]:
    """One pass over a function body: (problems, names assigned under a varying condition)."""
    problems, assigned = [], set()
    # Walk the body's braces; each block remembers whether its header was varying.
    stack = []  # (varying?, header text)
    header_start = lo
    i = lo
    prev_varying_if = False
    parens = 0  # `;` inside a for header's parentheses does not end a statement
    while i < hi:
        ch = text[i]
        if ch in "()":
            parens += 1 if ch == "(" else -1
        elif ch == "{":
            header = text[header_start:i]
            kw = re.search(r"\b(if|else|switch|for|while|loop|continuing)\b(?!.*\b(?:if|else|switch|for|while|loop)\b)",
                           header, re.S)
            is_var = False
            if kw:
                cond = header[kw.end():]
                if kw.group(1) == "else":
                    is_var = prev_varying_if or any(re.search(rf"(?<![\w.]){re.escape(v)}\b", cond) for v in varying)
                elif kw.group(1) != "loop":
                    is_var = any(re.search(rf"(?<![\w.]){re.escape(v)}\b", cond) for v in varying)
            stack.append((is_var, kw.group(1) if kw else ""))
            header_start = i + 1
        elif ch == "}":
            if stack:
                was_var, kind = stack.pop()
                prev_varying_if = was_var and kind in ("if", "else")
            header_start = i + 1
        elif ch == ";" and parens == 0:
            stmt = text[header_start:i]
            under = [v for v, _ in stack if v]
            barrier = re.search(BARRIER_CALL, stmt)
            if under and barrier:
                problems.append(f"line {_line(text, header_start + len(stmt) - len(stmt.lstrip()))}: " + _(
                    "{barrier}() is inside a branch or loop whose condition differs between invocations; "
                    "every invocation of the workgroup must reach it").format(barrier=barrier.group(1)))
            a = re.match(r"\s*(\w+)\s*(?:\[[^;]*\])?\s*[-+*/|&^]?=(?!=)", stmt)
            if a and under and a.group(1) not in ("let", "var"):
                assigned.add(a.group(1))
            m = re.match(r"\s*(return|break|continue)\b", stmt)
            if m and under and any(b > i for b in barrier_at):
                problems.append(f"line {_line(text, header_start + len(stmt) - len(stmt.lstrip()))}: " + _(
                    "{statement} under a per-invocation condition, before a barrier: the invocations that "
                    "leave never reach it; keep every row in the loops and skip only its store").format(
                        statement=m.group(1)))
            header_start = i + 1
        i += 1
    return problems, assigned


_STORAGE = re.compile(r"var\s*<\s*storage\b[^>]*>\s*(\w+)\s*:")
_LOCAL = r"\b(?:let|var|const)\s+{name}\b|[(,]\s*{name}\s*:"


def check_counted_loads(source: str) -> list[str]:
    """Problems (each "line L: ...") for storage buffers read or written outside a counted
    helper (a function that calls ``tally``); [] if none. The counters binding is exempt."""
    text = strip_comments(source)
    buffers = [m.group(1) for m in _STORAGE.finditer(text) if m.group(1) != "counters"]
    problems = []
    for fname, params, lo, hi in _functions(text):
        body = text[lo:hi]
        if re.search(r"\btally\s*\(", body):
            continue  # a counted helper: its accesses are the ones the counters see
        for name in buffers:
            if re.search(_LOCAL.format(name=re.escape(name)), "(" + params + ")" + body):
                continue  # a local or a parameter of the same name shadows the buffer
            for m in re.finditer(rf"(?<![\w.]){re.escape(name)}\s*\[", body):
                after = body[m.end():]
                depth, i = 1, 0
                while depth and i < len(after):
                    depth += {"[": 1, "]": -1}.get(after[i], 0)
                    i += 1
                written = re.match(r"\s*(?:[-+*/|&^]?=)(?!=)", after[i:]) is not None
                line = _line(text, lo + m.start())
                if written:
                    problems.append(f"line {line}: " + _(
                        "{fn} writes {name}[...] straight to global memory, not through a counted helper such as "
                        "store_o: the counters cannot see that store").format(fn=fname, name=name))
                else:
                    problems.append(f"line {line}: " + _(
                        "{fn} reads {name}[...] straight from global memory, not through load_{name}: the counters "
                        "cannot see those reads, and a tiled kernel reads {name} only into its tile in workgroup "
                        "memory").format(fn=fname, name=name))
    return sorted(set(problems), key=lambda p: (int(p.split(":")[0].split()[1]), p))


STATIC_CHECKS = {"no_infinity": check_no_infinity, "uniform_barriers": check_uniform_barriers,
                 "counted_loads": check_counted_loads}


def static_problems(source: str, names, reference: str | None = None) -> list[str]:
    """Problems from the named static checks, plus a changed instrument header.

    reference: the text of kernels_wgsl/parts/header.wgsl, the shared header (the page
    passes the copy it fetched; by default the file is read from kernels_wgsl/).
    """
    problems = []
    shared = header_block(reference if reference is not None else _header_source())
    got = header_block(source)
    if shared is not None and got != shared:
        problems.append(_("the instrument header (counters binding to the end of fn tally) was changed or "
                          "removed; restore it from the starter, or the byte counts cannot be read"))
    for name in names:
        problems.extend(STATIC_CHECKS[name](source))
    return problems


def _header_source() -> str:
    import os

    path = os.path.join(content.ROOT, "kernels_wgsl", "parts", "header.wgsl")
    with open(path, encoding="utf-8") as f:
        return f.read()


def step_entry(step_id: str) -> dict:
    """The step's entry in exercise.toml (cases, workgroup_bytes, static)."""
    return content.step(SLUG, step_id)


def tiling(d: int, workgroup_bytes: int) -> dict:
    """The override constants the shader gets: {"D": d, "BR": B_r, "BC": B_c} (lesson preset).

    Raises emulator.tiling.InputError when the tile does not fit.
    """
    br, bc = lesson_blocks(d, workgroup_bytes)
    return {"D": d, "BR": br, "BC": bc}


def run_plan(n: int, d: int, causal: bool, workgroup_bytes: int, limits: dict | None = None,
             subgroup_min: int = 0, instrumented: bool = True) -> dict:
    """planner.gpu_plan of one run of the learner's shader: the lesson's fused kernel
    at (N, d, causal, M bytes), whose bindings and tiles the learner's shader takes. The
    page asks its device for the plan's required_limits and dispatches its workgroups.
    Raises emulator.tiling.InputError when the size does not fit ``limits``."""
    return _plan.gpu_plan({"n": n, "d": d, "causal": causal, "workgroup_bytes": workgroup_bytes}, limits or {},
                          ["fused"], subgroup_min, instrumented=instrumented)


def plans(step_id: str, workgroup_bytes: int | None = None, limits: dict | None = None,
          subgroup_min: int = 0, time: tuple | None = None) -> dict:
    """The plans the page needs beside the cases: {"compile": the plan of the step's first
    case (a device to compile on)}, and with ``time`` = (N, d), "time": {"constants", "yours":
    the learner's instrumented run at that size, "fused": the project's fused kernel's timed
    run (no counters, its shader for this device's subgroups)}."""
    entry = step_entry(step_id)
    m = workgroup_bytes or entry["workgroup_bytes"]
    n, d, causal = entry["cases"][0][:3]
    out = {"compile": run_plan(n, d, causal, m, limits)}
    if time:
        tn, td = (int(x) for x in time)
        out["time"] = {"constants": tiling(td, m), "yours": run_plan(tn, td, False, m, limits),
                       "fused": run_plan(tn, td, False, m, limits, subgroup_min, instrumented=False)}
    return out

F32_EXP_TOP = math.log(F32_MAX)  # about 88.72: exp of anything above is inf in f32
F32_EXP_BOTTOM = math.log(2.0 ** -149)  # about -103.28: exp of anything below is 0, even as a subnormal


def _row_top(i: int, q: list, k: list, causal: bool) -> float:
    """The largest score q_i·k_j/√d that row i sees (float64; −inf for none)."""
    keys = k[:i + 1] if causal else k
    return max((math.fsum(a * b for a, b in zip(q[i], kj, strict=True)) for kj in keys),
               default=-math.inf) / math.sqrt(len(q[0]))


def _first_non_finite(outputs: list) -> tuple | None:
    """(row, column, value) of the first entry of O, row by row, that is not a finite number."""
    for i, row in enumerate(outputs):
        for c, x in enumerate(row):
            if not math.isfinite(x):
                return i, c, x
    return None


def _vanished(outputs: list, i: int) -> bool:
    """Whether row i of O, a row beyond its bound, is all zeros: every weight underflowed."""
    return all(x == 0.0 for x in outputs[i])


def _failure(case: str, report: dict, outputs: list, q: list, k: list, causal: bool) -> str:
    """The message for a run that failed the check: the first bad row, in the learner's terms."""
    bad = _first_non_finite(outputs) if report.get("nan_rows") else None
    row = report["first_failing_row"]
    if bad is not None and (row is None or bad[0] <= row):
        i, c, x = bad
        value = "NaN" if math.isnan(x) else ("inf" if x > 0 else "-inf")
        top = _row_top(i, q, k, causal)
        msg = _("{case}: row {row}, column {column} (query tile {tile}) holds {value}").format(
            case=case, row=i, column=c, tile=i // report["block_rows"], value=value)
        if top > F32_EXP_TOP:
            msg = _("{message}: the row's largest score is {top}, and exp overflows f32 past {edge} "
                    "unless the row's own running max is subtracted first").format(
                        message=msg, top=marked(f"{top:.1f}"), edge=marked(f"{F32_EXP_TOP:.1f}"))
        return msg
    if row is None:  # within the bound, not within twice the plain kernel's error
        return _("{case}: the largest error, {error}, is more than twice the plain kernel's ({plain}) "
                 "plus {margin}").format(case=case, error=marked(f"{report['max_abs_error']:.3g}"),
                                         plain=marked(f"{report['plain_max_abs_error']:.3g}"),
                                         margin=marked(f"{report['fa_rule_margin']:.3g}"))
    if _vanished(outputs, row):
        top = _row_top(row, q, k, causal)
        return _("{case}: row {row} (query tile {tile}) came out as zeros, as if it saw no key: its largest "
                 "score is {top}. Either every weight exp(s − shift) vanished to 0 (exp of anything below about "
                 "{bottom} is 0 in f32), or l overflowed to inf (past {edge}) and acc / l gave 0; subtract the "
                 "row's own running max, so that its largest weight is exp(0) = 1").format(
                     case=case, row=row, tile=report["first_failing_tile"], top=marked(f"{top:.1f}"),
                     bottom=marked(f"{F32_EXP_BOTTOM:.0f}"), edge=marked(f"{F32_EXP_TOP:.1f}"))
    return _("{case}: row {row} (query tile {tile}) is off by {error}, beyond the bound {bound}").format(
        case=case, row=row, tile=report["first_failing_tile"],
        error=marked(f"{report['first_failing_error']:.3g}"),
        bound=marked(f"{report['first_failing_bound']:.3g}"))


def judge(outputs: list, q: list, k: list, v: list, causal: bool, workgroup_bytes: int,
          counted: dict | None, scale: float = 1.0, offsets: tuple = ()) -> dict:
    """Judge one run: O (N rows of d floats read back) against float64, and the counted
    bytes ({tensor: {"read": B, "write": B}}, or None) against
    emulator.traffic.count("fused", N, d, causal, M). scale and offsets: how Q was drawn
    (see :func:`case_inputs`), named in the messages with the largest score.

    Returns {"passed", "message", "check": check_output's report, "expected_bytes",
    "counted_bytes"}. The message names the first failing row: the first entry of O
    that is inf or NaN (its row and column, and the row's largest score, past f32's
    exp range), a row that came out as zeros though its keys carry weight (every
    exp underflowed), or the first row beyond its bound and its query tile; else
    the first tensor whose counted bytes differ from the walk's.
    """
    n, d = len(q), len(q[0])
    report = check_output(outputs, q, k, v, causal, "fused", workgroup_bytes)
    want = count("fused", n, d, causal, workgroup_bytes)
    got_total = None
    if counted is not None:
        got_total = 0
        for t in counted.values():
            got_total += t["read"] + t["write"]
    case = _case(n, d, causal, scale, q, k, offsets)
    # A case with large scores (Q scaled, or rows shifted by offsets: scores past exp's f32
    # range, for a kernel without the max) is judged by the first-order bound alone: there
    # the FlashAttention 2x rule, which holds the error to twice the CPU plain mirror's,
    # measures how the GPU sums a dot product of large terms, not the kernel.
    large = scale != 1.0 or bool(offsets)
    ok = report["passed"] or (large and report["bound_passed"] and not report.get("nan_rows"))
    if not ok:
        msg = _failure(case, report, outputs, q, k, causal)
        return {"passed": False, "message": msg, "check": report, "expected_bytes": want.total_bytes,
                "counted_bytes": got_total}
    if got_total is not None and got_total != want.total_bytes:
        message = _("{case}: O is right, but the counters saw {got} B where the fused walk "
                    "at B_r = {br}, B_c = {bc} moves {want} B").format(
                        case=case, got=group(got_total), br=report["block_rows"],
                        bc=report["block_cols"], want=group(want.total_bytes))
        for tensor in want.reads:
            for kind, walked in (("read", want.reads[tensor]), ("write", want.writes[tensor])):
                seen = counted.get(tensor, {}).get(kind, 0)
                if seen != walked:
                    if kind == "read":
                        part = _("{tensor} read {got} B, the walk {want} B").format(
                            tensor=tensor, got=group(seen), want=group(walked))
                    else:
                        part = _("{tensor} written {got} B, the walk {want} B").format(
                            tensor=tensor, got=group(seen), want=group(walked))
                    message = _("{message} ({part})").format(message=message, part=part)
                    break
            else:
                continue
            break
        return {"passed": False, "check": report, "expected_bytes": want.total_bytes, "counted_bytes": got_total,
                "message": message}
    return {"passed": True, "check": report, "expected_bytes": want.total_bytes, "counted_bytes": got_total,
            "message": _("{case}: every checked row within its bound").format(case=case) if got_total is None
            else _("{case}: every checked row within its bound; {got} B, as the emulator counts").format(
                case=case, got=group(got_total))}


def _case(n: int, d: int, causal: bool, scale: float = 1.0, q=None, k=None, offsets: tuple = ()) -> str:
    """The case's description: "N = 64, d = 16, causal" (or "full"); for a case whose Q
    was scaled, ", Q × 30, largest score 126.8" (the largest q·k/√d it may see); for one
    whose rows were shifted, ", rows shifted by +200 and −200 in turn, each row's largest
    score from −198.7 to 201.3"."""
    if causal:
        text = _("N = {n}, d = {d}, causal").format(n=group(n), d=d)
    else:
        text = _("N = {n}, d = {d}, full").format(n=group(n), d=d)
    if (scale == 1.0 and not offsets) or q is None:
        return text
    tops = [_row_top(i, q, k, causal) for i in range(len(q))]
    if scale != 1.0:
        text = _("{case}, Q × {scale}").format(case=text, scale=short(scale))
    if not offsets:
        return _("{case}, largest score {top}").format(case=text, top=marked(f"{max(tops):.1f}"))
    shifts = _(" and ").join(f"{x:+.0f}".replace("-", "−") for x in offsets)
    return _("{case}, rows' scores shifted by {shifts} in turn, each row's largest score from {low} to {high}").format(
        case=text, shifts=shifts, low=marked(f"{min(tops):.1f}"), high=marked(f"{max(tops):.1f}"))


def case_offsets(case) -> tuple:
    """The score offsets of one of a step's ``cases`` entries (its fifth item; () if none)."""
    return tuple(float(x) for x in case[4]) if len(case) > 4 else ()


def case_inputs(case) -> tuple:
    """(n, d, causal, scale, q, k, v) of one of a step's ``cases`` entries, [n, d, causal],
    [n, d, causal, scale] or [n, d, causal, scale, offsets]: Q, K, V from
    emulator.inputs.random_qkv (seed 0) as rows of float32 values, Q multiplied by
    ``scale`` (so scores of about ``scale``: 30 makes exp overflow f32 past 88.7 unless
    the max is subtracted). ``offsets`` (a list of numbers) shifts every score of row i
    by offsets[i % len(offsets)]: K's column 0 is set to 1 and Q's column 0 of row i to
    offset·√d, so q·k/√d gains the offset while the rest of the row's spread stays.
    Softmax does not change when a row's scores all move together, so O is the same;
    but with +200 beside −200 in one dispatch no fixed shift keeps exp finite and
    nonzero on both rows (f32's exp holds about −103 to 88.7): only the row's own max does."""
    n, d, causal = case[:3]
    scale = float(case[3]) if len(case) > 3 else 1.0
    offsets = case_offsets(case)
    q, k, v = random_qkv(n, d, 0)
    if scale != 1.0:
        q = [array("f", [scale * x for x in row]).tolist() for row in q]  # float32, as the GPU holds them
    if offsets:
        root = math.sqrt(d)
        k = [[1.0] + row[1:] for row in k]
        q = [array("f", [offsets[i % len(offsets)] * root] + row[1:]).tolist() for i, row in enumerate(q)]
    return n, d, causal, scale, q, k, v


def cases(step_id: str, workgroup_bytes: int | None = None) -> list[dict]:
    """The step's runs: [{n, d, causal, scale, workgroup_bytes, constants, plan, q, k, v}] with
    Q, K, V from :func:`case_inputs` as flat row-major lists of float32 values, at the
    declared M (default: the step's), and each run's plan (:func:`run_plan`).
    Raises emulator.tiling.InputError for an M whose tiles do not fit."""
    entry = step_entry(step_id)
    m = workgroup_bytes or entry["workgroup_bytes"]
    out = []
    for case in entry["cases"]:
        n, d, causal, scale, q, k, v = case_inputs(case)
        out.append({"n": n, "d": d, "causal": causal, "scale": scale, "workgroup_bytes": m,
                    "constants": tiling(d, m), "plan": run_plan(n, d, causal, m),
                    "q": [x for row in q for x in row], "k": [x for row in k for x in row],
                    "v": [x for row in v for x in row]})
    return out


def mirror(step_id: str) -> list[dict]:
    """Without WebGPU: the emulator's float32 fused mirror (emulator.attention.fused, the
    same tile walk as the shader) on each of the step's cases, checked against float64
    (emulator.accuracy.check_arrays), beside the byte count of that walk.
    Returns [{n, d, causal, passed, message, expected_bytes}]."""
    entry = step_entry(step_id)
    m = entry["workgroup_bytes"]
    out = []
    for entry_case in entry["cases"]:
        n, d, causal, scale, q, k, v = case_inputs(entry_case)
        report = check_arrays("fused", q, k, v, causal, m)
        want = count("fused", n, d, causal, m).total_bytes
        case = _case(n, d, causal, scale, q, k, case_offsets(entry_case))
        out.append({"n": n, "d": d, "causal": causal, "passed": report["passed"], "expected_bytes": want,
                    "message": _("{case}: the mirror's largest error is {error} over {rows} checked rows, "
                                 "B_r = {br}, B_c = {bc}; the walk moves {want} B").format(
                                     case=case, error=marked(f"{report['max_abs_error']:.3g}"),
                                     rows=group(report["rows_checked"]), br=report["block_rows"],
                                     bc=report["block_cols"], want=group(want))})
    return out


def read_float(x) -> float:
    """One value of O as the page sends it: a number, or the string "inf", "-inf" or "nan"
    that site/static/js/worker.js writes for a non-finite one (JSON has no inf or NaN).
    Anything else, such as the null a JSON encoder makes of NaN, is NaN: a value lost."""
    if isinstance(x, bool):
        return math.nan
    if isinstance(x, int | float):
        return float(x)
    if x in ("inf", "-inf", "nan"):
        return float(x)
    return math.nan


def _rows(flat: list, n: int, d: int) -> list:
    return [list(flat[i * d:(i + 1) * d]) for i in range(n)]


def handle(request: dict) -> dict:
    """The page worker's ops for this exercise (exercises.runner.handle passes "wgsl-*"):
    wgsl-static {step, source, reference} -> {problems};
    wgsl-cases {step} -> {cases};
    wgsl-plan {step, workgroup_bytes, limits, subgroup_min_size, time: [N, d]} -> plans();
    wgsl-judge {step, index, o (flat N*d), counts} -> judge's verdict;
    wgsl-mirror {step} -> {results}."""
    op = request.get("op")
    if op == "wgsl-static":
        names = step_entry(request["step"]).get("static", [])
        return {"ok": True, "result": {"problems": static_problems(request["source"], names,
                                                                    request.get("reference"))}}
    if op == "wgsl-cases":
        return {"ok": True, "result": {"cases": cases(request["step"], request.get("workgroup_bytes"))}}
    if op == "wgsl-plan":
        return {"ok": True, "result": plans(request["step"], request.get("workgroup_bytes"),
                                            request.get("limits"), int(request.get("subgroup_min_size") or 0),
                                            request.get("time"))}
    if op == "wgsl-judge":
        entry = step_entry(request["step"])
        case = entry["cases"][request["index"]]
        n, d, causal, scale, q, k, v = case_inputs(case)
        m = request.get("workgroup_bytes") or entry["workgroup_bytes"]
        o = [read_float(x) for x in request["o"]]
        verdict = judge(_rows(o, n, d), q, k, v, causal, m, request.get("counts"), scale, case_offsets(case))
        verdict["check"] = {key: verdict["check"].get(key) for key in (
            "passed", "max_abs_error", "rows_checked", "rows_description", "first_failing_row",
            "first_failing_tile", "block_rows", "block_cols")}
        return {"ok": True, "result": verdict}  # runner.handle makes inf JSON-safe
    if op == "wgsl-mirror":
        return {"ok": True, "result": {"results": mirror(request["step"])}}
    return {"ok": False, "message": _("unknown op {op}").format(op=repr(op))}
