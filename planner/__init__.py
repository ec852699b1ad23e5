"""The GPU planner: what a run of manifest kernels asks of a WebGPU device, and the
refusal, with a size that fits, when a device offers less.

Standard library only: it runs in the page's Pyodide worker (op ``gpu_plan`` of
lab_api), in the native host (cannery_host.wgpu_runner.Runner) and in the build, which
writes the table the page needs before Python has started (:func:`cold_rules`). The
page's WebGPU code (site/static/js/gpu/) derives nothing: it allocates the buffers,
builds the pipelines and lays out the dispatches this module gives.

Every figure comes from one of two sources:

* the tiling rule, once, in emulator.tiling (``make_tiling``: the lesson's B_r and B_c
  from M and d, or a tuned kernel's own table);
* each pass's WGSL source, read by planner.shaders with the pass's override constants:
  workgroup size (x, y, z), ``var<workgroup>`` bytes, ``var<storage>`` bindings.

Each is held to the WebGPU limit that bounds it (WebGPU §3.6.2 "Limits"; a limit an
adapter does not report counts at WebGPU's default, the manifest's
``webgpu_default_limits``), in the order of :data:`LIMITS`. Sizes are bytes, at the
kernel's bytes an element (its manifest "dtype": float32's 4, float16's 2;
emulator.tiling.element_bytes). A kernel whose dtype needs a WebGPU feature (float16:
"shader-f16", WebGPU §24) says so in its plan ("feature"); the device asks for it, and a
device without it does not run the kernel.

Public API
  kernel_plan(kernel, n, d, ...)   one kernel: tiles, each pass's shader, constants,
                                   workgroup size and dispatch, buffers, head batch,
                                   and the limits it needs
  pass_plan(kernel, index, tiling) one pass of it
  gpu_plan(p, limits, ...)         several kernels on one device: the limits to ask
                                   for, or an InputError naming the field to change
                                   and a size that passes every check
  fits(p, limits, kernels)         gpu_plan as a yes or no
  cold_rules()                     the table the page shows before Python starts
  offered(limits, name)            an adapter's limit, WebGPU's default if unreported
  LIMITS, DEFAULT_LIMITS, TIMED    the limits checked, WebGPU's defaults, Time's
                                   optional kernels
"""
from __future__ import annotations

from emulator.float16_mirrors import float16_kernels
from emulator.i18n import _, group
from emulator.tiling import (
    DTYPES,
    HEAD_DIMS,
    LESSON_KERNELS,
    M_DEFAULT,
    M_MAX,
    M_MIN,
    MANIFEST,
    InputError,
    dtype_of,
    element_bytes,
    lesson_too_small,
    make_tiling,
    parse_int,
)

from . import shaders as _shaders

#: WebGPU's default limits (WebGPU §3.6.2), by their WebGPU names: what a device has
#: when nothing more is asked for.
DEFAULT_LIMITS = _shaders.DEFAULT_LIMITS

#: plain's softmax pass holds one row of S in registers: N keys at most (manifest limits).
SOFTMAX_MAX_ROW = int(MANIFEST.get("limits", {}).get("softmax_max_row", 1 << 62))

#: The instrument counts elements in u32 counters (manifest "instrument"): at most this many a slot.
COUNTER_MAX = (1 << 32) - 1

#: The timed forward kernels beyond the lesson's, in manifest order: Time runs each that fits.
TIMED = tuple(k for k, e in MANIFEST["kernels"].items()
              if e.get("timed") and k not in LESSON_KERNELS and e.get("direction", "forward") == "forward")


def N_(message: str) -> str:
    """Marks a message for extraction; _() translates it when it is used."""
    return message


# The limits a pass can exceed, in the order they are checked: the pass figure that the
# limit bounds, how to say it, and the form field that fixes it.
LIMITS = (
    ("maxStorageBufferBindingSize", "largest_binding",
     N_("binds {tensor} as one storage buffer of {v} B"), "n"),
    ("maxBufferSize", "largest_binding",
     N_("keeps {tensor} in global memory: {v} B in one buffer"), "n"),
    ("maxComputeWorkgroupStorageSize", "workgroup_bytes",
     N_("declares {v} B of workgroup memory"), "workgroup_bytes"),
    ("maxComputeInvocationsPerWorkgroup", "invocations",
     N_("runs {v} invocations per workgroup"), "workgroup_bytes"),
    ("maxComputeWorkgroupSizeX", "size_x",
     N_("has workgroups {v} invocations wide (x)"), "workgroup_bytes"),
    ("maxComputeWorkgroupSizeY", "size_y",
     N_("has workgroups {v} invocations high (y)"), "workgroup_bytes"),
    ("maxComputeWorkgroupSizeZ", "size_z",
     N_("has workgroups {v} invocations deep (z)"), "workgroup_bytes"),
    ("maxStorageBuffersPerShaderStage", "storage_buffers",
     N_("binds {v} storage buffers (the instrumented build's counters included)"), "kernel"),
    ("maxComputeWorkgroupsPerDimension", "workgroups",
     N_("dispatches {v} workgroups along one dimension"), "n"),
)
_BYTE_LIMITS = frozenset({"maxBufferSize", "maxStorageBufferBindingSize", "maxComputeWorkgroupStorageSize"})


def offered(limits: dict, name: str) -> int:
    """An adapter's value of limit ``name`` (GPUSupportedLimits, WebGPU §3.6.2), read
    from ``limits`` ({WebGPU name: number or numeric text}); WebGPU's default when the
    limit is absent or unreadable."""
    try:
        return parse_int("limits", (limits or {}).get(name), name)
    except InputError:
        return DEFAULT_LIMITS[name]


def writes_scores(kernel: str) -> bool:
    """Whether ``kernel`` keeps the N×N scores S (and so P) in global memory (manifest passes)."""
    return any("S" in p.get("writes", {}) for p in MANIFEST["kernels"][kernel]["passes"])


def _tensor_bytes(name: str, n: int, d: int, heads: int, head_batch: int, size: int) -> int:
    """Bytes of one tensor's buffer at ``size`` bytes an element: (N, N) tables hold
    ``head_batch`` heads, the rest all heads."""
    if name in _shaders.SQUARE_TENSORS:
        return _shaders.tensor_bytes(name, n, d, head_batch, size)
    return _shaders.tensor_bytes(name, n, d, heads, size)


def pass_plan(kernel: str, index: int, tiling, heads: int = 1, subgroup_min: int = 0,
              instrumented: bool = True, head_batch: int | None = None) -> dict:
    """What pass ``index`` of ``kernel`` asks of the GPU at this tiling (its N and d).

    tiling: an emulator.tiling.Tiling. heads: heads in Q, K, V; head_batch: heads of
    S and P one dispatch covers (default: all). subgroup_min: the device's smallest
    subgroup (0: none), which picks the pass's shader (planner.shaders.pass_variant).
    instrumented: whether the build binds the instrument's counters.

    Returns {"pass", "file", "entry_point", "constants": {name: int}, "grid",
    "workgroup_size": [x, y, z], "invocations", "workgroup_bytes" (bytes of
    var<workgroup>), "storage_buffers", "largest_binding" (bytes), "largest_tensor",
    "dispatch": [x, y, z] workgroups (y: head_batch heads)}. Raises FileNotFoundError
    for a missing .wgsl and ValueError for WGSL the evaluator cannot size.
    """
    spec = MANIFEST["kernels"][kernel]["wgsl"][index]
    n, d = tiling.n, tiling.d
    batch = heads if head_batch is None else head_batch
    file, constants, size, workgroup_bytes, storage = _shader_figures(spec, tiling, subgroup_min, instrumented)
    tensors = [t for t in spec.get("bindings", {}) if t != "params"]
    elem = element_bytes(kernel)
    sizes = {t: _tensor_bytes(t, n, d, heads, batch, elem) for t in tensors}
    largest = max(tensors, key=lambda t: sizes[t]) if tensors else None
    return {
        "pass": spec.get("pass", str(index)),
        "file": file,
        "entry_point": spec.get("entry_point", "main"),
        "constants": dict(constants),
        "grid": spec["grid"],
        "workgroup_size": list(size),
        "invocations": size[0] * size[1] * size[2],
        "workgroup_bytes": workgroup_bytes,
        "storage_buffers": storage,
        "largest_binding": sizes[largest] if largest else 0,
        "largest_tensor": largest,
        "dispatch": list(_shaders.dispatch_size(spec["grid"], n, tiling, batch)),
    }


_FIGURES: dict = {}


def _shader_figures(spec: dict, tiling, subgroup_min: int, instrumented: bool) -> tuple:
    """(file, constants, workgroup size, workgroup bytes, storage buffers) of one pass's
    shader: they depend on the shader and its constants alone, so each is evaluated once
    per process for each (file, constants) (a plan's searches ask for the same shaders again)."""
    file, constants = _shaders.pass_variant(spec, tiling.d, tiling, subgroup_min)
    constants = {k: int(v) for k, v in constants.items()}
    key = (file, bool(instrumented), tuple(sorted(constants.items())))
    if key not in _FIGURES:
        _file, _constants, shader = _shaders.pass_shader(spec, tiling.d, tiling, subgroup_min, instrumented)
        _FIGURES[key] = (shader.workgroup_size(), shader.workgroup_bytes(), shader.storage_buffers())
    return (file, constants, *_FIGURES[key])


def _resolved_overrides(file: str, constants: dict, instrumented: bool) -> tuple:
    """Every override constant of ``file`` as the pipeline sees it: the given
    ``constants``, the rest at the shader's declared defaults (a sorted tuple of pairs)."""
    key = ("overrides", file, bool(instrumented), tuple(sorted(constants.items())))
    if key not in _FIGURES:
        shader = _shaders.Shader(_shaders.read_source(file), constants)
        names = [m.group(2) for m in _shaders._DECL.finditer(shader.code) if m.group(1) == "override"]
        _FIGURES[key] = tuple((name, _override_value(shader, name)) for name in sorted(names))
    return _FIGURES[key]


def _override_value(shader, name: str):
    """An override's value where the planner's integer arithmetic reads it; otherwise
    (a float such as ``TAU: f32 = 1.0 / sqrt(f32(D))``) its declared expression, which
    with the integer overrides beside it in the key fixes the value as well."""
    try:
        return shader.value(name)
    except ValueError:
        return ("expression", shader.decls.get(name))


def run_key(plan: dict) -> tuple:
    """What a run of a kernel plan executes: its tiles and, for each pass, the shader
    file, entry point, workgroup size and every override constant (defaults filled in).
    Two kernels with the same key at the same N run the same code: timing one times both."""
    tiling = plan["tiling"]
    passes = tuple((pp["file"], pp["entry_point"], tuple(pp["workgroup_size"]),
                    _resolved_overrides(pp["file"], pp["constants"], plan["instrumented"]))
                   for pp in plan["passes"])
    return (tiling["block_rows"], tiling["block_cols"], tiling["workgroup_bytes"], passes)


def same_runs(plans: dict) -> dict:
    """{kernel: the kernel it repeats} for the planned kernels whose :func:`run_key`
    equals another's; the one kept is the lesson's kernel where there is one, else the
    first in ``plans``' order. Kernels that repeat none are absent."""
    order = sorted(plans, key=lambda k: (not MANIFEST["kernels"][k].get("lesson", False), list(plans).index(k)))
    first: dict = {}
    same = {}
    for kernel in order:
        key = run_key(plans[kernel])
        if key in first:
            same[kernel] = first[key]
        else:
            first[key] = kernel
    return {k: same[k] for k in plans if k in same}


def _pass_figure(pp: dict, key: str) -> int:
    if key.startswith("size_"):
        return pp["workgroup_size"]["xyz".index(key[-1])]
    if key == "workgroups":
        return max(pp["dispatch"])
    return pp[key]


def kernel_plan(kernel: str, n: int, d: int, causal: bool = False, workgroup_bytes: int = M_DEFAULT,
                heads: int = 1, subgroup_min: int = 0, instrumented: bool = True,
                limits: dict | None = None) -> dict:
    """The plan of one run of ``kernel`` on (heads, N, d) inputs of its dtype (float32
    unless the manifest declares another; bytes at its bytes an element).

    Tiles from emulator.tiling.make_tiling (M = workgroup_bytes, bytes); every pass
    sized from its own WGSL (:func:`pass_plan`). A kernel that keeps S and P in global
    memory batches its heads: as many (N, N) tables as fit one buffer of the smaller
    of ``limits``' maxStorageBufferBindingSize and maxBufferSize (WebGPU defaults when
    not given), at least one.

    Returns {"kernel", "direction", "dtype", "element_bytes", "feature" (the WebGPU
    feature the dtype needs, or None), "n", "d", "causal", "heads", "head_batch",
    "instrumented", "subgroup_min", "tiling": {"block_rows", "block_cols", "workgroup_bytes"},
    "passes": [pass_plan, ...], "buffers": {tensor: bytes} (every tensor a pass binds,
    (N, N) tables for head_batch heads, rounded up to whole vec4s), "needs": {limit:
    value}}. Raises InputError
    for an unknown kernel, a d outside the manifest's head_dims, or a tile that does
    not fit.
    """
    entry = MANIFEST["kernels"].get(kernel)
    if entry is None or "wgsl" not in entry:
        raise InputError("kernel", _("Unknown kernel {kernel}.").format(kernel=repr(kernel)))
    if d not in HEAD_DIMS:
        raise InputError("d", _("Head dimension d must be one of {dims}; {d} is not.").format(
            dims=", ".join(map(str, HEAD_DIMS)), d=d))
    tiling = make_tiling(kernel, n, d, causal, workgroup_bytes)
    batch = heads
    elem = element_bytes(kernel)
    if writes_scores(kernel):
        cap = min(offered(limits, "maxStorageBufferBindingSize"), offered(limits, "maxBufferSize"))
        batch = max(1, min(heads, cap // (n * n * elem)))
    passes = [pass_plan(kernel, i, tiling, heads, subgroup_min, instrumented, batch)
              for i in range(len(entry["wgsl"]))]
    buffers: dict = {}
    for spec in entry["wgsl"]:
        for t in spec.get("bindings", {}):
            if t != "params":
                buffers[t] = _tensor_bytes(t, n, d, heads, batch, elem)
                if t in _shaders.SQUARE_TENSORS:  # whole vec4s: shaders may view a table as array<vec4<f32>>
                    buffers[t] = -(-buffers[t] // 16) * 16
    needs = {name: max(_pass_figure(pp, key) for pp in passes) for name, key, _w, _f in LIMITS}
    return {
        "kernel": kernel, "direction": entry.get("direction", "forward"), "dtype": dtype_of(kernel),
        "element_bytes": elem, "feature": DTYPES[dtype_of(kernel)]["feature"], "n": n, "d": d,
        "causal": bool(causal), "heads": heads, "head_batch": batch, "instrumented": bool(instrumented),
        "subgroup_min": subgroup_min,
        "tiling": {"block_rows": tiling.block_rows, "block_cols": tiling.block_cols,
                   "workgroup_bytes": tiling.workgroup_bytes},
        "passes": passes, "buffers": buffers, "needs": needs,
    }


# ---------------------------------------------------------------------------
# Several kernels on one device: the first limit that refuses, and a size that fits.

def _plans(kernels, n, d, causal, m, heads, subgroup_min, instrumented, limits) -> dict:
    return {k: kernel_plan(k, n, d, causal, m, heads, subgroup_min, instrumented, limits) for k in kernels}


def _most_counted(plan: dict) -> int:
    """The largest instrument counter of a run: elements one tensor moves, all heads."""
    from emulator.traffic import count  # the manifest walk: the counts the instrument must equal

    t = count(plan["kernel"], plan["n"], plan["d"], plan["causal"], plan["tiling"]["workgroup_bytes"])
    most = max([*t.reads.values(), *t.writes.values(), 0])
    return most // plan["element_bytes"] * plan["heads"]


def _first_refusal(plans: dict, limits: dict):
    """The first check these plans fail, in the order a learner is told: the buffers,
    the WGSL kernels' softmax row, workgroup memory and size, storage buffers,
    workgroups per dispatch, then the instrument's counters.

    Returns None, or (check, value, offer, kernel, pass plan or None): check is a
    WebGPU limit name, "softmax_max_row" or "counters".
    """
    for name, key, _what, _field in LIMITS:
        if name == "maxComputeWorkgroupStorageSize":  # buffers first, then what the kernels support
            for kernel, plan in plans.items():
                if plan["direction"] == "forward" and writes_scores(kernel) and plan["n"] > SOFTMAX_MAX_ROW:
                    return "softmax_max_row", plan["n"], SOFTMAX_MAX_ROW, kernel, None
        worst = None
        for kernel, plan in plans.items():
            for pp in plan["passes"]:
                value = _pass_figure(pp, key)
                if worst is None or value > worst[0]:
                    worst = (value, kernel, pp)
        offer = offered(limits, name)
        if worst is not None and worst[0] > offer:
            return name, worst[0], offer, worst[1], worst[2]
    for kernel, plan in plans.items():
        if plan["instrumented"]:
            most = _most_counted(plan)
            if most > COUNTER_MAX:
                return "counters", most, COUNTER_MAX, kernel, None
    return None


def _settings(p: dict) -> tuple:
    return int(p["n"]), int(p["d"]), bool(p.get("causal", False)), int(p.get("workgroup_bytes", M_DEFAULT))


def fits(p: dict, limits: dict, kernels, subgroup_min: int = 0, *, heads: int = 1,
         instrumented: bool = True) -> bool:
    """Whether ``kernels`` plan at p's (n, d, causal, workgroup_bytes) and pass every
    check of :func:`gpu_plan` on a device offering ``limits``."""
    n, d, causal, m = _settings(p)
    try:
        plans = _plans(kernels, n, d, causal, m, heads, subgroup_min, instrumented, limits)
    except InputError:
        return False
    return _first_refusal(plans, limits) is None


def _largest(ok, lo: int, hi: int):
    """Largest x in [lo, hi] with ok(x), for ok true up to some x and false after (None
    if ok(lo) is false)."""
    if lo > hi or not ok(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _advice(field: str, kernel: str, p: dict, limits, kernels, subgroup_min, heads, instrumented) -> tuple:
    """The field to change and a sentence naming a value the next press accepts: one
    that passes every check of the plan, not only the one that refused."""
    n, d, _causal, m = _settings(p)

    def ok(**change) -> bool:
        return fits(dict(p, **change), limits, kernels, subgroup_min, heads=heads, instrumented=instrumented)

    if field == "n":
        best = _largest(lambda x: ok(n=x), 1, n - 1)
        if best:
            return "n", _("Try N ≤ {n}.").format(n=group(best))
        return "n", _("No N fits this GPU at d = {d} and M = {m} B.").format(d=d, m=group(m))
    if field == "workgroup_bytes" and MANIFEST["kernels"][kernel].get("tiling", "lesson") == "lesson":
        # Lesson tiles change at multiples of 16·d bytes (B_c = (M/2)/(8d)).
        step = 16 * d
        lo = max(-(-M_MIN // step), 1)
        while lo * step <= m and not _tiles(d, lo * step):
            lo += 1
        best = _largest(lambda k: ok(workgroup_bytes=k * step), lo, m // step)
        if best:
            return "workgroup_bytes", _("Use M ≤ {m} B.").format(m=group(best * step))
        return "workgroup_bytes", _("No M from {low} B to {m} B fits this GPU at d = {d}.").format(
            low=group(M_MIN), m=group(m), d=d)
    return "kernel", _("Choose another kernel for this GPU.")


def _tiles(d: int, m: int) -> bool:
    try:
        make_tiling("fused", 1, d, False, m)
        return True
    except InputError:
        return False


def _refusal_error(refusal, p, limits, kernels, subgroup_min, heads, instrumented) -> InputError:
    check, value, offer, kernel, pp = refusal
    n, d, _causal, m = _settings(p)
    if check == "softmax_max_row":
        return InputError("n", _(
            "The plain kernel's softmax pass holds one row of S ({n} scores) in registers; the WGSL kernels "
            "stop at N = {max_row}. Count and Check still work at this size.").format(
                n=group(n), max_row=group(SOFTMAX_MAX_ROW)))
    if check == "counters":
        _field, fix = _advice("n", kernel, p, limits, kernels, subgroup_min, heads, instrumented)
        return InputError("n", _(
            "At N = {n}, the instrumented {kernel} kernel counts {v} elements of one tensor, past its 32-bit "
            "counters ({limit}). {fix}").format(n=group(n), kernel=kernel, v=group(value), limit=group(offer),
                                               fix=fix))
    what, field = next((w, f) for name, _k, w, f in LIMITS if name == check)
    if check == "maxStorageBuffersPerShaderStage" and not instrumented:
        what = N_("binds {v} storage buffers")
    field, fix = _advice(field, kernel, p, limits, kernels, subgroup_min, heads, instrumented)
    template = (_("At N = {n}, d = {d} and M = {m} B, the {kernel} kernel's {pass_name} pass ({file}) {what}, "
                  "but this GPU allows {offer} B ({limit}). {fix}") if check in _BYTE_LIMITS else
                _("At N = {n}, d = {d} and M = {m} B, the {kernel} kernel's {pass_name} pass ({file}) {what}, "
                  "but this GPU allows {offer} ({limit}). {fix}"))
    return InputError(field, template.format(
        n=group(n), d=d, m=group(m), kernel=kernel, pass_name=pp["pass"], file=pp["file"],
        what=_(what).format(v=group(value), tensor=pp["largest_tensor"]), offer=group(offer), limit=check, fix=fix))


def _optional_list(optional) -> tuple:
    if optional == "timed":
        return TIMED
    return tuple(optional or ())


def gpu_plan(p: dict, limits: dict, kernels=None, subgroup_min: int = 0, *, heads: int = 1,
             instrumented: bool = True, optional=()) -> dict:
    """Whether ``kernels`` fit one GPU with these WebGPU limits, and how to run them.

    p: {"n", "d", "causal", "workgroup_bytes" (M, bytes), "kernel"} (parse_request's
    output will do). kernels: default the chosen kernel, plain and fused (Time always
    runs the last two). limits: the adapter's limits by their WebGPU names
    (GPUSupportedLimits, WebGPU §3.6.2; absent ones at WebGPU's default).
    subgroup_min: the device's smallest subgroup (0: no subgroups), which picks each
    pass's shader. heads: heads of Q, K, V (S and P are batched, see kernel_plan).
    instrumented: the build with the instrument's counters (one more storage buffer,
    and counts below 2³²). optional: kernels run only where they fit this GPU's
    workgroup memory ("timed": :data:`TIMED`); one whose tiles do not exist at this d
    is skipped, one over another limit refuses like any other.

    Returns {"fits": True, "kernels": [planned, in order: kernels, then the optional
    ones kept], "optional": [the optional ones kept], "left_out": [{"kernel", "limit",
    "need", "offer"}: optional ones past the workgroup memory], "plans": {kernel:
    kernel_plan}, "needs": {limit: value}, "by_kernel": {kernel: {limit: value}},
    "required_limits": {limit: value}, "same_run": {kernel: kernel it repeats}
    (:func:`same_runs`: the same shaders, tiles and constants)}; required_limits holds every need above
    WebGPU's default, what requestDevice must ask for.

    Raises InputError naming the field to change ("n", "workgroup_bytes" or "kernel"),
    the limit, what the pass asks and what the GPU allows, and a value that passes
    every check (the largest N, or M, that does), when the adapter offers less.
    """
    n, d, causal, m = _settings(p)
    if kernels is None:
        kernels = [p["kernel"]] + [k for k in ("plain", "fused") if k != p["kernel"]]
    kernels = list(kernels)
    for kernel in kernels:
        if kernel not in MANIFEST["kernels"]:
            raise InputError("kernel", _("Unknown kernel {kernel}.").format(kernel=repr(kernel)))
    plans = _plans(kernels, n, d, causal, m, heads, subgroup_min, instrumented, limits)
    refusal = _first_refusal(plans, limits)
    if refusal is not None:
        raise _refusal_error(refusal, p, limits, kernels, subgroup_min, heads, instrumented)
    left_out = []
    kept = []
    planned = list(kernels)
    room = offered(limits, "maxComputeWorkgroupStorageSize")
    for kernel in _optional_list(optional):
        if kernel in plans:
            continue
        try:
            plan = kernel_plan(kernel, n, d, causal, m, heads, subgroup_min, instrumented, limits)
        except InputError:
            continue
        need = plan["needs"]["maxComputeWorkgroupStorageSize"]
        if need > room:
            left_out.append({"kernel": kernel, "limit": "maxComputeWorkgroupStorageSize", "need": need,
                             "offer": room})
            continue
        plans[kernel] = plan
        kept.append(kernel)
        planned.append(kernel)
    refusal = _first_refusal(plans, limits)
    if refusal is not None:
        raise _refusal_error(refusal, p, limits, planned, subgroup_min, heads, instrumented)
    by_kernel = {k: dict(plan["needs"]) for k, plan in plans.items()}
    needs = {name: max(b[name] for b in by_kernel.values()) for name, _k, _w, _f in LIMITS}
    required = {name: value for name, value in needs.items() if value > DEFAULT_LIMITS[name]}
    return {"fits": True, "kernels": planned, "optional": kept, "left_out": left_out, "plans": plans,
            "needs": needs, "by_kernel": by_kernel, "required_limits": required, "same_run": same_runs(plans)}


# ---------------------------------------------------------------------------
# What the page must know before Python starts.

def _smallest_m(kernel: str, d: int):
    """The smallest M in [M_MIN, M_MAX] the kernel tiles at d (make_tiling), or None."""
    def ok(m: int) -> bool:
        try:
            make_tiling(kernel, 1, d, False, m)
            return True
        except InputError:
            return False
    if ok(M_MIN):
        return M_MIN
    if not ok(M_MAX):
        return None
    lo, hi = M_MIN, M_MAX  # ok(hi), not ok(lo): tiles only grow with M
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def cold_rules() -> dict:
    """The tiling refusals a page shows before Python has started, in the active
    language, from the one tiling rule (emulator.tiling.make_tiling).

    Returns {"tiling": [{"kernels": [names], "by_d": {str(d): {"smallest_m": bytes,
    "message": text}}}]}: for the kernels of a group, an M below smallest_m bytes at
    that d gets the message, whose "{m}" and "{half}" the page fills with M and
    ⌊M/2⌋ written its language's way (every other figure is already in the text).
    Kernels whose tiles never depend on M, and d where every allowed M tiles, are
    left out. The build writes it into the lab's form (data-rules).
    """
    groups: list = []
    for kernel, entry in MANIFEST["kernels"].items():
        if entry.get("tiling", "lesson") != "lesson":
            continue
        by_d = {}
        for d in HEAD_DIMS:
            smallest = _smallest_m(kernel, d)
            if smallest is not None and smallest > M_MIN:
                by_d[str(d)] = {"smallest_m": smallest, "message": lesson_too_small(d, "{m}", "{half}")}
        if not by_d:
            continue
        same = next((g for g in groups if g["by_d"] == by_d), None)
        if same is None:
            groups.append({"kernels": [kernel], "by_d": by_d})
        else:
            same["kernels"].append(kernel)
    return {"tiling": groups}


# ---------------------------------------------------------------------------
# The roofline probes: the two roofs of the device a run is on.

#: The probes' declaration (manifest "probes"): files, bindings, sizes and the time budget.
PROBES = MANIFEST.get("probes", {})


def probe_plan(limits: dict) -> dict:
    """How to run the roofline probes (kernels_wgsl/probes/) within an adapter's limits.

    limits: the adapter's limits by their WebGPU names (absent ones at WebGPU's default).
    The copy probe streams one buffer into another: each holds the manifest's
    ``max_bytes`` at most, no more than the smaller of maxStorageBufferBindingSize and
    maxBufferSize, rounded down to whole workgroups of vec4s; it dispatches one
    invocation a vec4, at most maxComputeWorkgroupsPerDimension workgroups (the shader
    strides over the rest). The arithmetic probe dispatches the manifest's
    ``invocations`` (in workgroups of the shader's @workgroup_size) over x, then y.

    Returns {"copy": {"file", "entry_point", "bindings", "workgroup_size": [x, y, z],
    "dispatch": [x, y, z], "buffers": {"src", "dst": bytes}, "n4": vec4s copied,
    "bytes_per_run": bytes read plus written, "flop_per_run": 0}, "fma": {... "buffers":
    {"out": bytes}, "invocations", "flop_per_step": FLOP of one step of every chain of
    one invocation, "a", "b", "min_iters", "max_iters"}, "sample_ms", "samples",
    "budget_ms"} (the sample rule: manifest "probes" comment). The FLOP of an fma run
    is invocations · flop_per_step · iters (an FMA counts 2 FLOP). Raises InputError
    when the adapter cannot hold one workgroup's copy.
    """
    wg_copy = _probe_workgroup(PROBES["copy"]["file"])
    wg_fma = _probe_workgroup(PROBES["fma"]["file"])
    per_dim = offered(limits, "maxComputeWorkgroupsPerDimension")
    cap = min(int(PROBES["copy"]["max_bytes"]), offered(limits, "maxStorageBufferBindingSize"),
              offered(limits, "maxBufferSize"))
    unit = 16 * wg_copy[0]
    nbytes = cap // unit * unit
    if nbytes <= 0:
        raise InputError("limits", _("This GPU cannot hold the copy probe's buffers."))
    n4 = nbytes // 16
    copy = {"file": PROBES["copy"]["file"], "entry_point": PROBES["copy"]["entry_point"],
            "bindings": dict(PROBES["copy"]["bindings"]), "workgroup_size": list(wg_copy),
            "dispatch": [min(n4 // wg_copy[0], per_dim), 1, 1],
            "buffers": {"src": nbytes, "dst": nbytes}, "n4": n4,
            "bytes_per_run": 2 * nbytes, "flop_per_run": 0}
    spec = PROBES["fma"]
    groups = -(-int(spec["invocations"]) // wg_fma[0])
    gx = min(groups, per_dim)
    gy = -(-groups // gx)
    invocations = gx * gy * wg_fma[0]
    fma = {"file": spec["file"], "entry_point": spec["entry_point"], "bindings": dict(spec["bindings"]),
           "workgroup_size": list(wg_fma), "dispatch": [gx, gy, 1], "buffers": {"out": 4 * invocations},
           "invocations": invocations, "flop_per_step": int(spec["flop_per_step"]),
           "a": float(spec["a"]), "b": float(spec["b"]),
           "min_iters": int(spec["min_iters"]), "max_iters": int(spec["max_iters"])}
    return {"copy": copy, "fma": fma, "sample_ms": float(PROBES["sample_ms"]),
            "samples": int(PROBES["samples"]), "budget_ms": float(PROBES["budget_ms"])}


def _probe_workgroup(file: str) -> tuple:
    """(x, y, z) of a probe's @workgroup_size, from its source at its default constants."""
    return _shaders.Shader(_shaders.read_source(file)).workgroup_size()


def float16_plans(lengths, d: int, heads: int, limits: dict | None = None, subgroup_min: int = 0) -> dict:
    """The GPU plans of the float16 kernels (emulator.float16_mirrors.float16_kernels) on the
    held-out sentences, from :func:`gpu_plan`: one device plan per distinct sentence length N,
    all the float16 kernels in it, ``heads`` heads side by side, full attention, the
    build without counters.

    lengths: the sentences' N (tokens); d: head dimension; limits: the adapter's
    (WebGPU names, absent ones at WebGPU's defaults). Returns {"by_length": {str(N):
    gpu_plan's dict}, "kernels": the float16 kernels, "feature": the WebGPU feature they
    need ("shader-f16")}; each kernel plan carries "dtype", "element_bytes" (2) and its
    buffers in bytes. Raises emulator.tiling.InputError when a size does
    not fit, ValueError for lengths that are not positive integers.
    """
    kernels = float16_kernels()
    try:
        sizes = sorted({int(n) for n in lengths})
    except (TypeError, ValueError):
        raise ValueError(f"sentence lengths must be integers, not {lengths!r}") from None
    if not sizes or sizes[0] < 1:
        raise ValueError(f"sentence lengths must be positive, not {lengths!r}")
    by_length = {}
    for n in sizes:
        by_length[str(n)] = gpu_plan({"n": n, "d": d, "causal": False}, limits or {}, kernels,
                                     subgroup_min, heads=heads, instrumented=False)
    return {"by_length": by_length, "kernels": kernels, "feature": DTYPES["float16"]["feature"]}
