"""Exercise 5, "Break it": the judge for its two steps.

The content lives in ``site/content/exercises/break-it/``: ``kernel.py`` (a
correct fused forward with the online softmax), ``bugs/*.py`` (five copies,
each one line different), ``weak_tests.py`` (a suite with the holes real
suites have) and ``exercise.toml`` (the bugs' names and the step texts).

Predict
    :func:`predict` compares the learner's guess of which weak tests catch
    each bug with the truth, found by running the suite (:func:`truth`), and
    shows the truth only once the learner has predicted every bug (or asked
    to see it).
Break it
    :func:`judge_input` parses one learner input (a Python literal, or a
    call of the one whitelisted generator ``random_qkv``; learner text is
    never evaluated) and runs the buggy and the correct kernel on it against
    the float64 reference. The input *exposes* bug k when the buggy output
    is off by more than the bound (or is NaN, or the kernel raises) while
    the correct kernel's output stays within it, and every other bug j that
    some input can break k and spare (:func:`shared_bugs` lists the pairs
    where none can) survives it: the input shows what bug k needs, not only
    that the kernels differ.
After the five
    :func:`extended_suite` adds the learner's inputs to the weak suite and
    runs it on all six kernels.

The bound: every entry of O within ``TOL * max(1, max |V|)`` of the
reference, with TOL = 2⁻⁷ ≈ 0.0078, the spacing of bfloat16 numbers just
above 1 (a suite meant to pass a bfloat16 port too can ask no more). The
correct kernel, in float64, stays within about 1e-15 of it.

The reference is the emulator's exact float64 attention
(:func:`emulator.attention.reference`, one row at a time). Standard library
only: the same source runs in CPython 3.11 and in the page's Pyodide.
"""
from __future__ import annotations

import ast
import difflib
import math
import os
import tomllib

from emulator.attention import reference
from emulator.i18n import _, fixed, group, language, ngettext, short
from emulator.inputs import random_qkv as _emulator_qkv

from . import sandbox
from .testing import marked

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDER = os.path.join(ROOT, "site", "content", "exercises", "break-it")

TOL = 2.0 ** -7          # relative to max(1, max |V|); see the module docstring
MAX_ROWS = 64            # N, query rows, at most
MAX_KEYS = 64            # N_k, key rows, at most
MAX_D = 16               # d (and V's width), at most
MAX_ABS = 1.0e4          # largest |entry| of Q, K, V accepted
MAX_TEXT = 100_000       # characters of one input


class InputError(ValueError):
    """A learner input that cannot be run: ``message`` says why, in their terms."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


# --------------------------------------------------------------- content

def _read(name: str, folder: str = FOLDER) -> str:
    with open(os.path.join(folder, name), encoding="utf-8") as f:
        return f.read()


def meta(folder: str = FOLDER) -> dict:
    """exercise.toml as a dict."""
    with open(os.path.join(folder, "exercise.toml"), "rb") as f:
        return tomllib.load(f)


def bugs(folder: str = FOLDER) -> list[dict]:
    """The five bugs from exercise.toml, each with ``id`` (1–5), ``file``,
    ``title``, ``kind`` and ``why``, in order; title, kind and why in the active
    language (emulator.i18n) when it has this exercise's words, in
    site/content/<code>/exercises/break-it/exercise.toml (the build ships it)."""
    listed = meta(folder)["bugs"]
    content_dir = os.path.dirname(os.path.dirname(os.path.abspath(folder)))
    words = os.path.join(content_dir, language(), "exercises", os.path.basename(os.path.abspath(folder)),
                         "exercise.toml")
    if os.path.isfile(words):
        with open(words, "rb") as f:
            said = tomllib.load(f).get("bugs", [])
        listed = [dict(b, **{k: w[k] for k in ("title", "kind", "why") if k in w})
                  for b, w in zip(listed, said, strict=True)]
    return listed


def shared_bugs(bug_id: int, folder: str = FOLDER) -> dict:
    """{other bug id: why} for each bug that every input breaking bug ``bug_id`` breaks too.

    Read from exercise.toml's ``[[shared]]`` entries ({bug, also, why}; ``why`` in the
    active language when site/content/<code>/exercises/break-it/exercise.toml words it,
    by position). tests/test_exercise_break_it.py searches a family of inputs for one
    that breaks each bug and spares each other one, and holds this list to what it finds:
    a pair is listed exactly when the search finds no such input.
    """
    listed = meta(folder).get("shared", [])
    content_dir = os.path.dirname(os.path.dirname(os.path.abspath(folder)))
    words = os.path.join(content_dir, language(), "exercises", os.path.basename(os.path.abspath(folder)),
                         "exercise.toml")
    if listed and os.path.isfile(words):
        with open(words, "rb") as f:
            said = tomllib.load(f).get("shared", [])
        listed = [dict(x, **{k: w[k] for k in ("why",) if k in w}) for x, w in zip(listed, said, strict=True)]
    return {x["also"]: x["why"] for x in listed if x["bug"] == bug_id}


def bug_info(bug_id: int, folder: str = FOLDER) -> dict:
    for b in bugs(folder):
        if b["id"] == bug_id:
            return b
    raise InputError(_("there is no bug {bug}; the bugs are numbered 1 to 5").format(bug=repr(bug_id)))


def kernel_source(which, folder: str = FOLDER) -> str:
    """Source of the correct kernel (``which`` = 0 or "correct") or of bug 1–5."""
    if which in (0, "correct"):
        return _read("kernel.py", folder)
    return _read(os.path.join("bugs", bug_info(which, folder)["file"]), folder)


def load_kernel(which, folder: str = FOLDER):
    """The ``attention(Q, K, V, causal=False, key_mask=None)`` function of a kernel."""
    ns = {"__name__": f"breakit_kernel_{which}"}
    exec(compile(kernel_source(which, folder), f"break-it/{which}.py", "exec"), ns)
    return ns["attention"]


def diff(bug_id: int, folder: str = FOLDER) -> str:
    """The unified diff (difflib, 2 lines of context) from the correct kernel to bug ``bug_id``."""
    b = bug_info(bug_id, folder)
    lines = difflib.unified_diff(kernel_source(0, folder).splitlines(keepends=True),
                                 kernel_source(bug_id, folder).splitlines(keepends=True),
                                 fromfile="kernel.py", tofile=f"bugs/{b['file']}", n=2)
    return "".join(lines)


def changed_lines(bug_id: int, folder: str = FOLDER) -> list[tuple[str, str]]:
    """(line in kernel.py, line in the bug's file) for each replaced line."""
    a = kernel_source(0, folder).splitlines()
    b = kernel_source(bug_id, folder).splitlines()
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if tag != "replace" or i2 - i1 != j2 - j1:
            out.append(("\n".join(a[i1:i2]), "\n".join(b[j1:j2])))
        else:
            out.extend(zip(a[i1:i2], b[j1:j2], strict=True))
    return out


# ----------------------------------------------------- inputs and oracle

def random_qkv(n: int, d: int, seed: int = 0, scale: float = 1.0, n_keys: int | None = None):
    """Seeded (Q, K, V): Q is n×d, K and V are n_keys×d (n_keys defaults to n).

    Entries of Q and K are uniform on [−√3, √3) and V's on [−1, 1), as the
    lab's inputs (:func:`emulator.inputs.random_qkv`, the same seed gives the
    same numbers); then Q is multiplied by ``scale``, so the scores
    q·k/√d have mean 0 and standard deviation about ``scale``.
    """
    n_keys = n if n_keys is None else n_keys
    q, k, v = _emulator_qkv(max(n, n_keys), d, seed)
    return ([[scale * x for x in row] for row in q[:n]], k[:n_keys], v[:n_keys])


def reference_attention(Q, K, V, causal=False, key_mask=None):
    """Exact float64 O (N rows of width floats) from the emulator's reference.

    Row i attends to the keys j with key_mask[j] true (all when None) and,
    when causal, j ≤ i; a row with no such key gets zeros.
    """
    d = len(Q[0])
    width = len(V[0]) if V else d
    out = []
    for i, q in enumerate(Q):
        keys = [j for j in range(len(K))
                if (key_mask is None or key_mask[j]) and (not causal or j <= i)]
        dots = [math.fsum(a * b for a, b in zip(q, K[j], strict=True)) for j in keys]
        vt = [[V[j][c] for j in keys] for c in range(width)]
        out.append(reference(dots, vt, d)[0])
    return out


def bound(V) -> float:
    """The allowed |O − O_ref| per entry: TOL · max(1, max |V|)."""
    vmax = max((abs(x) for row in V for x in row), default=0.0)
    return TOL * max(1.0, vmax)


def compare(O, want, limit: float):
    """None when every entry of O is a finite number within ``limit`` of
    ``want``; else the first bad entry: {"row", "col", "expected", "got", "error"}."""
    if not isinstance(O, list) or len(O) != len(want):
        return {"row": None, "col": None, "expected": _("{n} rows").format(n=len(want)),
                "got": _("{n} rows").format(n=len(O) if isinstance(O, list) else type(O).__name__),
                "error": math.inf}
    for i, (row, ref_row) in enumerate(zip(O, want, strict=True)):
        if not isinstance(row, list) or len(row) != len(ref_row):
            return {"row": i, "col": None, "expected": _("{count} numbers").format(count=len(ref_row)),
                    "got": repr(row)[:60], "error": math.inf}
        for c, (x, y) in enumerate(zip(row, ref_row, strict=True)):
            err = abs(x - y) if isinstance(x, float | int) else math.nan
            if not err <= limit:  # NaN fails too
                return {"row": i, "col": c, "expected": y, "got": x, "error": err}
    return None


def max_error(O, want) -> float:
    """Largest |O − want| over all entries (NaN if any entry is NaN)."""
    worst = 0.0
    for row, ref_row in zip(O, want, strict=True):
        for x, y in zip(row, ref_row, strict=True):
            err = abs(x - y)
            if math.isnan(err):
                return math.nan
            worst = max(worst, err)
    return worst


# ------------------------------------------------------- parsing, safely

_CASE_KEYS = ("Q", "K", "V", "causal", "key_mask", "masked_keys")
_GEN_ARGS = ("n", "d", "seed", "scale", "n_keys", "causal", "key_mask", "masked_keys")

# The two ways to write an input, as the messages show them (Python, in every language).
EXAMPLE_CALL = "random_qkv(n=10, d=4, seed=1, scale=1.0, causal=False, masked_keys=[0, 1])"
EXAMPLE_LITERAL = '{"Q": [[1.0, 0.0]], "K": [[1.0, 0.0], [0.0, 1.0]], "V": [[1.0], [2.0]], "causal": False}'


def example() -> str:
    """Both ways to write an input, joined by "or" in the active language."""
    return _("{call}  or  {literal}").format(call=EXAMPLE_CALL, literal=EXAMPLE_LITERAL)


def parse_input(text: str) -> dict:
    """Turn one learner input into a case {"Q", "K", "V", "causal", "key_mask"}.

    Two forms are accepted, nothing else:

    * a dict literal with "Q", "K", "V" (lists of rows of numbers) and,
      optionally, "causal" (bool) and one of "key_mask" (N_k booleans, False
      marks a padding key) or "masked_keys" (indices of padding keys);
    * a call ``random_qkv(n, d, seed, scale=1.0, n_keys=None, causal=False,
      key_mask=None, masked_keys=None)`` whose arguments are literals.

    Literals go through :func:`ast.literal_eval`; the text itself is never
    evaluated. Raises InputError with a message for the learner.
    """
    if not isinstance(text, str) or not text.strip():
        raise InputError(_("Write an input first, for example {example}").format(example=example()))
    if len(text) > MAX_TEXT:
        raise InputError(_("That input is {length} characters long; keep it under {limit} "
                           "(at most {rows} rows, {keys} keys and d = {d}).").format(
                             length=group(len(text)), limit=group(MAX_TEXT), rows=MAX_ROWS, keys=MAX_KEYS, d=MAX_D))
    try:
        sandbox.refuse_deep_nesting(text, "input")  # before ast.parse, which Pyodide's stack may not survive
    except SyntaxError:
        raise InputError(_("That input is nested too deeply to read.")) from None
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise InputError(_("Python cannot read that input (line {line}: {error}). Write it as {example}").format(
            line=exc.lineno, error=exc.msg, example=example())) from None
    except (RecursionError, MemoryError):
        raise InputError(_("That input is nested too deeply to read.")) from None
    except ValueError as exc:  # e.g. an integer literal past Python's 4,300 digits
        raise InputError(_("Python cannot read that input ({error}).").format(error=exc)) from None
    try:
        if isinstance(tree, ast.Call):
            return _from_call(tree)
        if isinstance(tree, ast.Dict):
            value = ast.literal_eval(tree)
            return _case(value)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(_("Only numbers, True/False/None, lists and a dict of them are allowed "
                           "(no names, arithmetic or other calls); or one call of random_qkv(...).")) from None
    raise InputError(_("An input is a dict of Q, K and V, or a call of random_qkv(...): {example}")
                     .format(example=example()))


def _from_call(node: ast.Call) -> dict:
    if not isinstance(node.func, ast.Name) or node.func.id != "random_qkv":
        raise InputError(_("The only call allowed is random_qkv(n, d, seed, scale=..., n_keys=..., "
                           "causal=..., key_mask=... or masked_keys=...)."))
    if len(node.args) > 3:
        raise InputError(_("random_qkv takes at most three arguments by position (n, d, seed); "
                           "name the others, e.g. {example}.").format(example="scale=100.0"))
    kw = {}
    for name, arg in zip(("n", "d", "seed"), node.args, strict=False):
        kw[name] = ast.literal_eval(arg)
    for k in node.keywords:
        if k.arg is None:
            raise InputError(_("write random_qkv's arguments out as name=value, without **."))
        if k.arg not in _GEN_ARGS:
            raise InputError(_("random_qkv has no argument {name}; it takes {names}.").format(
                name=repr(k.arg), names=", ".join(_GEN_ARGS)))
        if k.arg in kw:
            raise InputError(_("random_qkv got {name} twice.").format(name=k.arg))
        kw[k.arg] = ast.literal_eval(k.value)
    for name in ("n", "d", "seed"):
        if name not in kw:
            raise InputError(_("random_qkv needs {name}: {call}.").format(
                name=name, call="random_qkv(n, d, seed, scale=1.0)"))
    n, d, seed = kw["n"], kw["d"], kw["seed"]
    n_keys = kw.get("n_keys")
    for name, value in (("n", n), ("d", d), ("seed", seed)) + ((("n_keys", n_keys),) if n_keys is not None else ()):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(_("random_qkv's {name} must be a whole number, got {value}.").format(
                name=name, value=repr(value)))
    _check_sizes(n, n_keys if n_keys is not None else n, d)
    if not 0 <= seed < 2 ** 32:
        raise InputError(_("seed must be between 0 and {top}, got {seed}.").format(
            top=group(2 ** 32 - 1), seed=group(seed)))
    scale = kw.get("scale", 1.0)
    if isinstance(scale, bool) or not isinstance(scale, int | float) or not math.isfinite(scale):
        raise InputError(_("scale must be a finite number, got {value}.").format(value=repr(scale)))
    if abs(scale) * math.sqrt(3.0) > MAX_ABS:
        raise InputError(_("scale must be at most {top} in size (entries of Q at most {entries}), got {scale}.")
                         .format(top=group(round(MAX_ABS / math.sqrt(3.0))), entries=group(round(MAX_ABS)),
                                 scale=short(scale)))
    Q, K, V = random_qkv(n, d, seed, float(scale), n_keys)
    case = {"Q": Q, "K": K, "V": V}
    for name in ("causal", "key_mask", "masked_keys"):
        if name in kw:
            case[name] = kw[name]
    return _case(case)


def _check_sizes(n: int, n_keys: int, d: int) -> None:
    if not 1 <= n <= MAX_ROWS:
        raise InputError(_("N (query rows) must be between 1 and {top}, got {n}.").format(top=MAX_ROWS, n=group(n)))
    if not 1 <= n_keys <= MAX_KEYS:
        raise InputError(_("N_k (key rows) must be between 1 and {top}, got {n}.").format(
            top=MAX_KEYS, n=group(n_keys)))
    if not 1 <= d <= MAX_D:
        raise InputError(_("d must be between 1 and {top}, got {d}.").format(top=MAX_D, d=group(d)))


def _matrix(name: str, value, width: int | None = None) -> list:
    if not isinstance(value, list | tuple) or not value:
        raise InputError(_("{name} must be a non-empty list of rows, each a list of numbers.").format(name=name))
    rows = []
    for i, row in enumerate(value):
        if not isinstance(row, list | tuple) or not row:
            raise InputError(_("{name}[{i}] must be a list of numbers (a row), got {value}.").format(
                name=name, i=i, value=f"{row!r:.40}"))
        for c, x in enumerate(row):
            if isinstance(x, bool) or not isinstance(x, int | float):
                raise InputError(_("{name}[{i}][{c}] must be a number, got {value}.").format(
                    name=name, i=i, c=c, value=f"{x!r:.40}"))
            if not abs(x) <= MAX_ABS:  # NaN and ±inf fail too; a huge int is compared exactly
                shown = repr(x) if not isinstance(x, int) or abs(x) < 10 ** 20 else _("a very large whole number")
                raise InputError(_("{name}[{i}][{c}] = {value} is out of range: entries must be finite and at "
                                   "most {top} in size (mask keys with key_mask, not with inf).").format(
                                     name=name, i=i, c=c, value=shown, top=group(round(MAX_ABS))))
        rows.append([float(x) for x in row])
    widths = {len(r) for r in rows}
    if len(widths) != 1:
        raise InputError(_("the rows of {name} have different lengths ({lengths}).").format(
            name=name, lengths=", ".join(map(str, sorted(widths)))))
    if width is not None and widths != {width}:
        raise InputError(_("{name} has rows of {count} numbers, but Q's rows have {width}: "
                           "queries and keys must have the same d.").format(name=name, count=widths.pop(), width=width))
    return rows


def _case(value) -> dict:
    if not isinstance(value, dict):
        raise InputError(_("An input is a dict of Q, K and V, or a call of random_qkv(...): {example}")
                         .format(example=example()))
    unknown = [k for k in value if k not in _CASE_KEYS]
    if unknown:
        raise InputError(_("unknown key {key}; an input may have {keys}.").format(
            key=repr(unknown[0]), keys=", ".join(_CASE_KEYS)))
    for k in ("Q", "K", "V"):
        if k not in value:
            raise InputError(_("the input has no {name}; it needs Q, K and V.").format(name=k))
    Q = _matrix("Q", value["Q"])
    K = _matrix("K", value["K"], width=len(Q[0]))
    V = _matrix("V", value["V"])
    if len(V) != len(K):
        raise InputError(_("K has {k} rows but V has {v}: each key needs its value row.").format(k=len(K), v=len(V)))
    _check_sizes(len(Q), len(K), len(Q[0]))
    if len(V[0]) > MAX_D:
        raise InputError(_("V's rows must have at most {top} numbers, got {count}.").format(top=MAX_D, count=len(V[0])))
    causal = value.get("causal", False)
    if not isinstance(causal, bool):
        raise InputError(_("causal must be True or False, got {value}.").format(value=f"{causal!r:.40}"))
    mask = value.get("key_mask")
    masked = value.get("masked_keys")
    if mask is not None and masked is not None:
        raise InputError(_("give key_mask or masked_keys, not both."))
    if mask is not None:
        if not isinstance(mask, list | tuple) or len(mask) != len(K):
            raise InputError(_("key_mask must be a list of {count} values (one per key), True to keep a key "
                               "and False to mask it.").format(count=len(K)))
        if any(not isinstance(x, bool) and x not in (0, 1) for x in mask):
            raise InputError(_("key_mask's values must be True/False (or 1/0)."))
        mask = [bool(x) for x in mask]
    elif masked is not None:
        if not isinstance(masked, list | tuple) or any(isinstance(j, bool) or not isinstance(j, int)
                                                        for j in masked):
            raise InputError(_("masked_keys must be a list of key indices, e.g. [0, 1, 2, 3]."))
        bad = [j for j in masked if not 0 <= j < len(K)]
        if bad:
            raise InputError(_("masked_keys has {index}, but the keys are numbered 0 to {last}.").format(
                index=bad[0], last=len(K) - 1))
        mask = [j not in set(masked) for j in range(len(K))]
    return {"Q": Q, "K": K, "V": V, "causal": causal, "key_mask": mask}


def describe(case: dict) -> str:
    """A one-line summary of a case, e.g. "N = 10, N_k = 10, d = 4, causal, 2 keys masked"."""
    text = f"N = {len(case['Q'])}, N_k = {len(case['K'])}, d = {len(case['Q'][0])}"
    if case["causal"]:
        text = _("{case}, causal").format(case=text)
    if case["key_mask"] is not None:
        text = _("{case}, {masked} of {keys} keys masked").format(
            case=text, masked=case["key_mask"].count(False), keys=len(case["K"]))
    return text


# ------------------------------------------------------------ running

def reference_for(case: dict) -> list:
    """The float64 reference O of a parsed case."""
    return reference_attention(case["Q"], case["K"], case["V"], case["causal"], case["key_mask"])


def run_case(kernel, case: dict, want: list | None = None) -> dict:
    """Run one kernel on one case against the reference (``want``, computed
    here when not given).

    Returns {"ok": within the bound, "max_error": float (nan when the output
    has NaN, inf when the kernel raised), "first_bad": entry or None,
    "raised": "OverflowError: ..." or None, "bound": float}.
    """
    if want is None:
        want = reference_for(case)
    limit = bound(case["V"])
    try:
        got = kernel(case["Q"], case["K"], case["V"], causal=case["causal"], key_mask=case["key_mask"])
    except (ArithmeticError, ValueError, IndexError, TypeError) as exc:
        return {"ok": False, "max_error": math.inf, "first_bad": None,
                "raised": f"{type(exc).__name__}: {exc}", "bound": limit}
    bad = compare(got, want, limit)
    shape_ok = bad is None or bad["col"] is not None
    return {"ok": bad is None, "max_error": max_error(got, want) if shape_ok else math.inf,
            "first_bad": bad, "raised": None, "bound": limit}


def _say(result: dict) -> str:
    if result["raised"]:
        if result["raised"].startswith("OverflowError"):
            return _("raised {error} (Python's exp raises where a GPU's returns inf, "
                     "and then acc / l = inf / inf = NaN)").format(error=result["raised"])
        return _("raised {error}").format(error=result["raised"])
    bad = result["first_bad"]
    if bad is None:
        return _("stays within the bound (largest error {error})").format(error=marked(f"{result['max_error']:.2e}"))
    if bad["col"] is None:
        return _("returned the wrong shape: expected {expected}, got {got}").format(
            expected=bad["expected"], got=bad["got"])
    got = bad["got"]
    got_s = "NaN" if isinstance(got, float) and math.isnan(got) else marked(f"{got:.6g}")
    return _("O[{row}][{col}] = {got}, the reference says {expected}").format(
        row=bad["row"], col=bad["col"], got=got_s, expected=marked(f"{bad['expected']:.6g}"))


def judge_input(bug_id: int, text: str, folder: str = FOLDER) -> dict:
    """Does this learner input expose bug ``bug_id``?

    Returns {"ok": bool, "message": str, "input": summary or "",
    "bound": float, "buggy": run_case result, "correct": run_case result,
    "broad": True when refused for breaking other bugs too, "also_breaks":
    the other bugs whose kernels leave the bound on it}.
    ``ok`` is True when the buggy kernel leaves the bound (or gives NaN, or
    raises), the correct kernel stays within it, and so does the kernel of
    every other bug that some input can break bug ``bug_id`` and spare (all
    but :func:`shared_bugs`). An input that breaks other bugs too (scale=1000
    with a ragged tile breaks bugs 1 to 4 at once) shows that the kernels
    differ, not what this bug needs, and is refused with a message naming
    the others it breaks. A bug that every input breaking ``bug_id`` breaks
    too is allowed to fail, and the message says why. A malformed input gives
    ok False, a message saying what to fix, and no kernel results.
    """
    b = bug_info(bug_id, folder)
    try:
        case = parse_input(text)
    except InputError as exc:
        return {"ok": False, "message": exc.message, "input": "", "bound": None,
                "buggy": None, "correct": None, "broad": False, "also_breaks": []}
    summary = describe(case)
    want = reference_for(case)
    correct = run_case(load_kernel(0, folder), case, want)
    buggy = run_case(load_kernel(bug_id, folder), case, want)
    limit = correct["bound"]
    broad = False
    also = []
    if correct["ok"] and not buggy["ok"]:
        also = [other["id"] for other in bugs(folder) if other["id"] != bug_id
                and not run_case(load_kernel(other["id"], folder), case, want)["ok"]]
    shared = shared_bugs(bug_id, folder)
    aimless = [j for j in also if j not in shared]
    if not correct["ok"]:
        msg = _("{input}: the correct kernel also leaves the bound ({how}), so this input "
                "tests something else; keep the numbers smaller.").format(input=summary, how=_say(correct))
        ok = False
    elif buggy["ok"]:
        msg = _("{input}: bug {bug} ({title}) survives this input. Its largest error is "
                "{error}, within the bound {bound}.").format(
                    input=summary, bug=bug_id, title=b["title"], error=marked(f"{buggy['max_error']:.2e}"),
                    bound=marked(f"{limit:.2e}"))
        ok = False
    elif len(also) == len(bugs(folder)) - 1 and aimless:
        msg = _("{input}: every one of the five bugs fails on this input (its largest score is {top}), so it "
                "cannot tell which line it catches. Write one that bug {bug} ({title}) fails and the others "
                "survive.").format(input=summary, top=fixed(largest_score(case), 1), bug=bug_id, title=b["title"])
        ok, broad = False, True
    elif aimless:
        each = [_("bug {bug} ({title})").format(bug=j, title=bug_info(j, folder)["title"]) for j in aimless]
        named = each[0] if len(each) == 1 else _("{first} and {last}").format(first=_(", ").join(each[:-1]),
                                                                               last=each[-1])
        msg = ngettext(
            "{input}: bug {bug} fails on this input, but so does {others}, and another input can break bug {bug} "
            "and spare it: this one shows that the kernels differ, not what bug {bug} ({title}) needs. Take "
            "out what the other bug needs and keep what bug {bug} needs.",
            "{input}: bug {bug} fails on this input, but so do {others}, and other inputs can break bug {bug} "
            "and spare each of them: this one shows that the kernels differ, not what bug {bug} ({title}) "
            "needs. Take out what the other bugs need and keep what bug {bug} needs.",
            len(aimless)).format(input=summary, bug=bug_id, others=named, title=b["title"])
        ok, broad = False, True
    else:
        msg = _("{input}: exposes bug {bug} ({title}). The buggy kernel {buggy}; "
                "the correct kernel {correct}. Bound: {bound}.").format(
                    input=summary, bug=bug_id, title=b["title"], buggy=_say(buggy), correct=_say(correct),
                    bound=marked(f"{limit:.2e}"))
        for j in also:  # bugs that every input breaking this one breaks too
            msg = _("{message} It breaks bug {other} ({title}) too, as every input that breaks bug {bug} "
                    "does: {why}").format(message=msg, other=j, title=bug_info(j, folder)["title"], bug=bug_id,
                                          why=shared[j])
        ok = True
    return {"ok": ok, "message": msg, "input": summary, "bound": limit, "buggy": buggy, "correct": correct,
            "broad": broad, "also_breaks": also}


def largest_score(case: dict) -> float:
    """The largest score q·k/√d any row of a parsed case may see (−inf if none)."""
    Q, K, mask = case["Q"], case["K"], case["key_mask"]
    scale = 1.0 / math.sqrt(len(Q[0]))
    top = -math.inf
    for i, q in enumerate(Q):
        for j, k in enumerate(K):
            if (mask is None or mask[j]) and (not case["causal"] or j <= i):
                top = max(top, math.fsum(a * b for a, b in zip(q, k, strict=True)) * scale)
    return top


# ---------------------------------------------------------- weak suite

def weak_tests(folder: str = FOLDER) -> list:
    """The weak suite's test functions ``test_*(attention)``, in file order."""
    path = os.path.join(folder, "weak_tests.py")
    ns = {"__name__": "breakit_weak_tests", "__file__": path}
    exec(compile(_read("weak_tests.py", folder), path, "exec"), ns)
    return [v for k, v in ns.items() if k.startswith("test_") and callable(v)]


def test_names(folder: str = FOLDER) -> list[dict]:
    """[{"name", "title"}] of the weak tests (title = docstring's first line)."""
    return [{"name": fn.__name__, "title": (fn.__doc__ or fn.__name__).strip().splitlines()[0]}
            for fn in weak_tests(folder)]


def run_weak_suite(kernel, folder: str = FOLDER) -> dict:
    """{test name: None if it passes, else its failure message}."""
    out = {}
    for fn in weak_tests(folder):
        try:
            fn(kernel)
            out[fn.__name__] = None
        except (AssertionError, ArithmeticError, ValueError, IndexError, TypeError) as exc:
            out[fn.__name__] = f"{type(exc).__name__}: {exc}"
    return out


_TRUTH: dict = {}


def truth(folder: str = FOLDER) -> dict:
    """{bug id: sorted names of the weak tests that fail on it}, found by running
    them (once per folder and process: the files do not change under a page)."""
    if folder not in _TRUTH:
        _TRUTH[folder] = {b["id"]: sorted(name for name, failure
                                          in run_weak_suite(load_kernel(b["id"], folder), folder).items()
                                          if failure is not None)
                          for b in bugs(folder)}
    return {k: list(v) for k, v in _TRUTH[folder].items()}


def predict(predictions: dict, folder: str = FOLDER, reveal: bool = False) -> dict:
    """Judge the Predict step.

    ``predictions`` maps each bug id (1–5, int or its string) to the names of
    the weak tests the learner thinks fail on it ([] for none), or to None (or
    leaves it out) for a bug not predicted yet.

    The truth is revealed only once the learner has committed: when every bug
    has a prediction, or when ``reveal`` is True (the learner chose to see the
    answers). Until then no result carries the answer: each says whether that
    bug's prediction is saved, "actual" is None, and "ok" is False.

    Returns {"ok": all right, "right": count, "total": 5, "revealed": bool,
    "predicted": bugs with a prediction, "results": [{"bug", "title",
    "predicted" (a list, or None), "actual" (a list, or None until revealed),
    "ok", "message", "detail"}]}. Raises InputError for an unknown test name
    or bug id.
    """
    names = {t["name"] for t in test_names(folder)}
    got = {}
    for key, chosen in (predictions or {}).items():
        try:
            bug_id = int(key)
        except (TypeError, ValueError):
            raise InputError(_("there is no bug {bug}; the bugs are numbered 1 to 5").format(bug=repr(key))) from None
        bug_info(bug_id, folder)
        if chosen is None:
            continue
        unknown = sorted(set(chosen) - names)
        if unknown:
            raise InputError(_("there is no weak test named {name}").format(name=repr(unknown[0])))
        got[bug_id] = sorted(set(chosen))
    listed = bugs(folder)
    revealed = reveal or all(b["id"] in got for b in listed)
    results = []
    if not revealed:
        for b in listed:
            if b["id"] in got:
                detail = _("the answers show once every bug has a prediction ({count} of {total} so far)").format(
                    count=len(got), total=len(listed))
                message = _("prediction saved; {detail}").format(detail=detail)
            else:
                detail = _("tick the weak tests you think fail on it, or none of them")
                message = _("no prediction yet: {detail}").format(detail=detail)
            results.append({"bug": b["id"], "title": b["title"], "predicted": got.get(b["id"]), "actual": None,
                            "ok": False, "message": message, "detail": detail})
        return {"ok": False, "right": 0, "total": len(listed), "revealed": False, "predicted": len(got),
                "results": results}
    real = truth(folder)
    for b in listed:
        predicted, actual = got.get(b["id"]), real[b["id"]]
        ok = predicted == actual
        if ok and actual:
            detail = ngettext("{count} of the weak tests catch it", "{count} of the weak tests catch it",
                              len(actual)).format(count=len(actual))
        elif ok:
            detail = _("no weak test catches it")
        elif predicted is None:
            detail = _("no prediction was made")
        else:
            missed = sorted(set(predicted) - set(actual))
            caught = sorted(set(actual) - set(predicted))
            passes = ngettext("{tests} passes on this bug", "{tests} pass on this bug",
                              len(missed)).format(tests=", ".join(missed))
            catches = ngettext("{tests} catches it", "{tests} catch it", len(caught)).format(tests=", ".join(caught))
            if missed and caught:
                detail = _("{passes}, and {catches}").format(passes=passes, catches=catches)
            else:
                detail = passes if missed else catches
        message = (_("right: {detail}") if ok else _("not quite: {detail}")).format(detail=detail)
        results.append({"bug": b["id"], "title": b["title"], "predicted": predicted,
                        "actual": actual, "ok": ok, "message": message, "detail": detail})
    right = [r["ok"] for r in results].count(True)
    return {"ok": right == len(results), "right": right, "total": len(results), "revealed": True,
            "predicted": len(got), "results": results}


def extended_suite(texts: dict, folder: str = FOLDER) -> dict:
    """The weak suite plus the learner's inputs (one per bug), run on every kernel.

    ``texts`` maps bug id to the learner's input text. Returns {"ok": every
    bug caught and the correct kernel passing, "tests": [names], "kernels":
    [{"kernel": "correct" or bug id, "title", "failed": [test names],
    "caught": bool}], "errors": {bug id: message for inputs that did not parse}}.
    """
    cases, errors = {}, {}
    for key, text in (texts or {}).items():
        try:
            cases[int(key)] = parse_input(text)
        except InputError as exc:
            errors[int(key)] = exc.message
    wants = {k: reference_for(c) for k, c in cases.items()}
    names = [t["name"] for t in test_names(folder)] + [f"your_input_{k}" for k in sorted(cases)]
    kernels = [("correct", "the correct kernel")] + [(b["id"], b["title"]) for b in bugs(folder)]
    rows = []
    for which, title in kernels:
        fn = load_kernel(0 if which == "correct" else which, folder)
        failed = [name for name, failure in run_weak_suite(fn, folder).items() if failure is not None]
        failed += [f"your_input_{k}" for k in sorted(cases) if not run_case(fn, cases[k], wants[k])["ok"]]
        rows.append({"kernel": which, "title": title, "failed": failed,
                     "caught": bool(failed) if which != "correct" else not failed})
    ok = not errors and all(r["caught"] for r in rows) and len(cases) == len(kernels) - 1
    return {"ok": ok, "tests": names, "kernels": rows, "errors": errors}


def handle(request: dict) -> dict:
    """The page worker's entry, JSON in and out.

    {"op": "bugs"}                               → the bugs with their diffs, the weak tests
    {"op": "predict", "predictions": {...}, "reveal": false} → :func:`predict`
    {"op": "break", "bug": k, "text": "..."}     → :func:`judge_input`
    {"op": "suite", "texts": {k: "..."}}         → :func:`extended_suite`
    Answers {"ok": True, "result": ...} or {"ok": False, "message": ...}.
    """
    try:
        op = request.get("op")
        if op == "bugs":
            return {"ok": True, "result": {
                "bugs": [dict(b, diff=diff(b["id"])) for b in bugs()],
                "tests": test_names(), "bound": TOL,
                "limits": {"rows": MAX_ROWS, "keys": MAX_KEYS, "d": MAX_D, "abs": MAX_ABS}}}
        if op == "predict":
            return {"ok": True, "result": predict(request.get("predictions", {}), reveal=bool(request.get("reveal")))}
        if op == "break":
            return {"ok": True, "result": judge_input(int(request["bug"]), request.get("text", ""))}
        if op == "suite":
            return {"ok": True, "result": extended_suite(request.get("texts", {}))}
        return {"ok": False, "message": _("unknown op {op}").format(op=repr(op))}
    except InputError as exc:
        return {"ok": False, "message": exc.message}
