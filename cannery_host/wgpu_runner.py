"""Run the WGSL attention kernels of ``kernels_wgsl/`` natively through wgpu-py.

The same ``.wgsl`` files and ``manifest.json`` the page's ``site/static/js/gpu/``
loads are used here, with the same instrument transform (``planner.shaders``), and
every run is planned by the page's planner (``planner``: tiles, the shader and
override constants of each pass, dispatch sizes, buffer sizes, head batches, and the
refusal when this device offers too little), so the native tests
(tests/test_wgsl_native.py) and the native benchmark (``python -m bench.bench_wgsl``)
exercise exactly the kernels the browser runs.

Layouts: Q, K, V, O are (H, N, d) float32, row-major; S and P are (H_batch, N, N)
float32 in global memory (plain kernel only). Byte counts are 4 bytes an element. A kernel
that declares another "dtype" (fused-f16: float16, 2 bytes) gets its buffers in that type and
its counts at its bytes an element; it needs the dtype's device feature ("shader-f16"), which
the Runner asks for where the adapter has it.

Backward kernels ("direction": "backward" in the manifest: plain-backward,
fused-backward, fused-backward-no-D) take Q, K, V, O, dO (H, N, d) and the forward's
logsumexp L (H, N), and give dQ, dK, dV (H, N, d); D = rowsum(dO∘O) is (H, N), and
plain-backward's S, P, dP, dS are (H_batch, N, N). See :meth:`Runner.run_backward`.
"""

from __future__ import annotations

import math
import os
import re
import time
from pathlib import Path

import numpy as np

import planner as _plan
from emulator.tiling import (  # one manifest for the host and the emulator
    DTYPES,
    M_DEFAULT,
    MANIFEST,
    InputError,
    dtype_of,
    element_bytes,
)
from planner.shaders import DEFAULT_LIMITS, instrument, read_source

KERNEL_DIR = Path(__file__).resolve().parent.parent / "kernels_wgsl"
__all__ = ["BROWSER_DEFAULT_LIMITS", "KERNEL_DIR", "MANIFEST", "KernelError", "Runner", "TooSlow",
           "backward_gflops", "causal_key_end", "check_backward", "direction", "forward_saved", "gflops",
           "instrument", "storage_buffers_needed", "wgpu_name"]

# WebGPU's default limits (manifest "webgpu_default_limits", WebGPU §3.6.2): what a page
# gets without asking, under wgpu-py's names (maxBufferSize -> "max-buffer-size").
def wgpu_name(limit: str) -> str:
    """wgpu-py's name of a WebGPU limit: maxBufferSize -> "max-buffer-size"."""
    return re.sub(r"([A-Z])", r"-\1", limit).lower()


BROWSER_DEFAULT_LIMITS = {wgpu_name(name): value for name, value in DEFAULT_LIMITS.items()}

TENSORS = ("Q", "K", "V", "S", "P", "O")


def direction(kernel: str) -> str:
    """"forward" or "backward", as the manifest declares the kernel."""
    return MANIFEST["kernels"][kernel].get("direction", "forward")


def storage_buffers_needed(instrumented: bool = True) -> int:
    """The most storage buffers any pass of the manifest binds (one shader stage), at
    every d and shader variant, as planner plans them, the instrument's counters
    included when ``instrumented``: fused-backward's dkv pass binds Q, K, V, dO, L, D,
    dK, dV, one more than WebGPU's default 8 once counters are added.
    """
    most = 0
    for kernel in MANIFEST["kernels"]:
        for d in MANIFEST["head_dims"]:
            for subgroup_min in (0, 1 << 10):  # without subgroups, and with every variant's
                p = _plan.kernel_plan(kernel, 1, d, subgroup_min=subgroup_min, instrumented=instrumented)
                most = max(most, p["needs"]["maxStorageBuffersPerShaderStage"])
    return most


class KernelError(RuntimeError):
    """A kernel cannot run at this size on this device; the message gives the numbers."""


class TooSlow(RuntimeError):
    """A benchmark configuration that would take longer than its time budget."""


def causal_key_end(n: int, row0: int, br: int, bc: int, causal: bool) -> int:
    """One past the last key a query tile starting at ``row0`` visits (the shaders' key_end,
    kernels_wgsl/parts/walk.wgsl)."""
    if not causal:
        return n
    last = min(n, row0 + br) - 1
    return min(n, (last // bc + 1) * bc)


def gflops(n: int, d: int, heads: int, causal: bool) -> float:
    """FLOP convention: 4 N^2 d per head (two matmuls); causal counts half, 2 N^2 d."""
    f = 4.0 * n * n * d * heads
    return f / 2 if causal else f


def backward_gflops(n: int, d: int, heads: int, causal: bool) -> float:
    """Backward FLOP convention: 2.5 times the forward's (FlashAttention-2, arXiv:2307.08691,
    section 4.1: five matmuls against the forward's two), 10 N^2 d per head, causal half."""
    return 2.5 * gflops(n, d, heads, causal)


class Runner:
    """One wgpu device with the kernels compiled on demand.

    ``limits="default"`` asks for nothing beyond WebGPU's defaults (what a page gets);
    ``limits="max"`` asks for the adapter's maximum storage binding and buffer sizes.
    ``subgroups=True`` asks for the subgroup feature where the adapter has it, and then
    runs a pass's ``with_subgroups`` shader where the manifest gives one (see
    ``pass_variant``); ``False`` runs the shaders every WebGPU device can.
    Raises KernelError when no adapter exists.
    """

    def __init__(self, limits: str = "default", power_preference: str = "high-performance",
                 subgroups: bool = True):
        os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
        import wgpu

        self.wgpu = wgpu
        adapter = wgpu.gpu.request_adapter_sync(power_preference=power_preference)
        if adapter is None:
            raise KernelError("no WebGPU adapter")
        self.adapter = adapter
        feats = []
        if "timestamp-query" in adapter.features:
            feats.append("timestamp-query")
        if subgroups and "subgroup" in adapter.features:
            feats.append("subgroup")
        # A float16 kernel needs "shader-f16" (manifest "dtypes"); asked for where offered.
        for spec in DTYPES.values():
            if spec["feature"] and spec["feature"] in adapter.features and spec["feature"] not in feats:
                feats.append(spec["feature"])
        req = {}
        if limits == "max":
            req = {
                "max-storage-buffer-binding-size": adapter.limits["max-storage-buffer-binding-size"],
                "max-buffer-size": adapter.limits["max-buffer-size"],
                "max-compute-workgroup-storage-size": adapter.limits["max-compute-workgroup-storage-size"],
            }
        # The instrumented build of fused-backward's dkv pass binds 9 storage buffers, one
        # past WebGPU's default 8: ask for it where the adapter offers it, as the page asks
        # for what planner.gpu_plan's required_limits name.
        storage = storage_buffers_needed(instrumented=True)
        offered = adapter.limits["max-storage-buffers-per-shader-stage"]
        if storage > BROWSER_DEFAULT_LIMITS["max-storage-buffers-per-shader-stage"]:
            req["max-storage-buffers-per-shader-stage"] = min(storage, offered)
        req = req or None
        self.device = adapter.request_device_sync(required_features=feats, required_limits=req)
        self.limit_mode = limits
        lim = self.device.limits
        # What planner holds each run to: this device's limits under their WebGPU
        # names; with limits="default", the buffer and workgroup-memory sizes a page gets.
        self.limits = {name: int(lim[wgpu_name(name)]) for name in DEFAULT_LIMITS if wgpu_name(name) in lim}
        if limits == "default":
            for name in ("maxStorageBufferBindingSize", "maxBufferSize", "maxComputeWorkgroupStorageSize"):
                self.limits[name] = min(self.limits.get(name, DEFAULT_LIMITS[name]), DEFAULT_LIMITS[name])
        self.max_binding = self.limits["maxStorageBufferBindingSize"]
        self.max_buffer = self.limits["maxBufferSize"]
        self.max_wg_bytes = self.limits["maxComputeWorkgroupStorageSize"]
        self.timestamps = "timestamp-query" in self.device.features
        self.features = set(self.device.features)
        self._pipelines: dict = {}
        # Smallest subgroup a pipeline may get (0: no subgroups). wgpu-native 0.32 reports a
        # generic range (4 to 128, under the adapter-info key "stackgroup_min_size") on every
        # Vulkan device we tried, NVIDIA's fixed 32 included, where a browser reports the
        # device's own (gpu/device.js reads adapter.info.subgroupMinSize). So the size is also
        # measured with a one-workgroup shader, and the larger of the two is kept. The
        # float64 check before any timing guards the choice.
        self.subgroup_min = 0
        if "subgroup" in self.device.features:
            info = adapter.info
            reported = int(info.get("subgroup_min_size") or info.get("stackgroup_min_size") or 0)
            self.subgroup_min = max(reported, self.measure_subgroup_size())

    def measure_subgroup_size(self) -> int:
        """Subgroup size (invocations) one compute pipeline of this device runs with, read
        back from the WGSL builtin subgroup_size; 0 without the subgroup feature."""
        if "subgroup" not in self.device.features:
            return 0
        src = """
        @group(0) @binding(0) var<storage, read_write> out: array<u32, 4>;
        @compute @workgroup_size(64)
        fn main(@builtin(subgroup_size) sg: u32, @builtin(local_invocation_index) i: u32) {
          if (i == 0u) { out[0] = sg; }
        }"""
        dev = self.device
        buf = self._storage(16)
        pipe = dev.create_compute_pipeline(
            layout="auto", compute={"module": dev.create_shader_module(code=src), "entry_point": "main"})
        group = dev.create_bind_group(layout=pipe.get_bind_group_layout(0),
                                      entries=[{"binding": 0, "resource": {"buffer": buf}}])
        enc = dev.create_command_encoder()
        cpass = enc.begin_compute_pass()
        cpass.set_pipeline(pipe)
        cpass.set_bind_group(0, group)
        cpass.dispatch_workgroups(1)
        cpass.end()
        dev.queue.submit([enc.finish()])
        return int(np.frombuffer(dev.queue.read_buffer(buf), np.uint32)[0])

    def _wait(self) -> None:
        """Block until all submitted work is done.

        wgpu-py 0.32's on_submitted_work_done_sync breaks on a callback signature
        mismatch, so a 16-byte buffer is read back instead: mapping it waits for every
        earlier submission, like onSubmittedWorkDone does in the browser.
        """
        if not hasattr(self, "_sync_buf"):
            self._sync_buf = self._storage(16)
        self.device.queue.read_buffer(self._sync_buf)

    @property
    def info(self) -> dict:
        i = self.adapter.info
        return {"vendor": i.get("vendor", ""), "architecture": i.get("architecture", ""),
                "device": i.get("device", ""), "backend": i.get("backend_type", "")}

    # ----------------------------------------------------------------- pipelines
    def pipeline(self, kernel: str, pass_index: int, pass_plan: dict, instrumented: bool):
        """The compute pipeline of one planned pass (planner.pass_plan: its file,
        entry point and override constants), compiled once per device; (pipeline, spec)."""
        feature = DTYPES[dtype_of(kernel)]["feature"]
        if feature and feature not in self.features:
            raise KernelError(f"{kernel} is a {dtype_of(kernel)} kernel: it needs the device feature "
                              f"{feature!r}, which this adapter does not offer")
        spec = MANIFEST["kernels"][kernel]["wgsl"][pass_index]
        file, constants, entry = pass_plan["file"], pass_plan["constants"], pass_plan["entry_point"]
        key = (file, entry, tuple(sorted(constants.items())), instrumented)
        if key in self._pipelines:
            return self._pipelines[key], spec
        src = read_source(file)  # parts joined: the text gpu/files.js gives the page
        if instrumented:
            src = instrument(src)
        # WGSL asks a shader that uses subgroup built-ins to say `enable subgroups;`
        # (WGSL spec, "Enable Extensions"); Tint requires it. Naga in wgpu-native 0.32
        # implements the built-ins behind the device feature but rejects the directive.
        src = re.sub(r"^enable subgroups;$", "// (enable subgroups; left to the device feature)", src, flags=re.M)
        module = self.device.create_shader_module(code=src)
        msgs = [m for m in module.get_compilation_info_sync() if m.type == "error"]
        if msgs:
            raise KernelError(f"{file}: {msgs}")
        pipe = self.device.create_compute_pipeline(
            layout="auto", compute={"module": module, "entry_point": entry, "constants": constants})
        self._pipelines[key] = pipe
        return pipe, spec

    def shader(self, kernel: str, d: int, workgroup_bytes: int = M_DEFAULT) -> str:
        """The .wgsl file this device runs for the first pass of ``kernel`` at d (the plan's)."""
        return _plan.kernel_plan(kernel, 1, d, False, workgroup_bytes,
                                 subgroup_min=self.subgroup_min)["passes"][0]["file"]

    def shaders(self, kernel: str, d: int, workgroup_bytes: int = M_DEFAULT) -> list[str]:
        """The .wgsl file this device runs for each pass of ``kernel`` at d, in pass order (the plan's)."""
        return [pp["file"] for pp in _plan.kernel_plan(kernel, 1, d, False, workgroup_bytes,
                                                       subgroup_min=self.subgroup_min)["passes"]]

    # ----------------------------------------------------------------- buffers
    def _storage(self, size: int, data: np.ndarray | None = None, dtype=np.float32):
        wgpu = self.wgpu
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        size = max(16, (size + 3) // 4 * 4)
        if data is not None:
            raw = np.ascontiguousarray(data, dtype).tobytes()
            raw += b"\0" * (-len(raw) % 4)  # a buffer's size is a multiple of 4 bytes
            return self.device.create_buffer_with_data(data=raw, usage=usage)
        return self.device.create_buffer(size=size, usage=usage)

    def plan(self, kernel: str, n: int, d: int, heads: int, workgroup_bytes: int = M_DEFAULT,
             causal: bool = False, instrumented: bool = False) -> dict:
        """planner's plan of one run on this device: tiles, each pass's shader,
        constants and dispatch, buffer sizes (bytes) and the head batch (heads of S and
        P one buffer holds), held to this device's limits (``self.limits``).

        Returns planner.kernel_plan's dict. Raises KernelError with the planner's
        message (the limit, the need, the offer, and a size that fits).
        """
        try:
            out = _plan.gpu_plan({"kernel": kernel, "n": n, "d": d, "causal": causal,
                                  "workgroup_bytes": workgroup_bytes},
                                 self.limits, [kernel], self.subgroup_min, heads=heads, instrumented=instrumented)
        except InputError as e:
            raise KernelError(e.message) from None
        return out["plans"][kernel]

    # ----------------------------------------------------------------- encode
    def _encode(self, cpass, kernel, n, d, causal, plan, bufs, instrumented, h_lo=0, h_hi=None,
                passes=None):
        """Encode the dispatches of one attention run over heads [h_lo, h_hi) into ``cpass``.

        Heads go in batches of plan["head_batch"] (S and P hold one batch); h_lo must
        be a multiple of the batch. ``passes``: indices of the passes to encode (all if None;
        the benchmark times plain's passes one at a time).
        """
        hb = plan["head_batch"]
        h_hi = plan["heads"] if h_hi is None else h_hi
        for h0 in range(h_lo, h_hi, hb):
            nh = min(hb, h_hi - h0)
            for pi, pass_plan in enumerate(plan["passes"]):
                if passes is not None and pi not in passes:
                    continue
                pipe, spec = self.pipeline(kernel, pi, pass_plan, instrumented)
                count = pass_plan["dispatch"][0]
                params = bufs["params"][h0]
                entries = []
                for name, binding in spec["bindings"].items():
                    buf = params if name == "params" else bufs[name]
                    entries.append({"binding": binding, "resource": {"buffer": buf, "offset": 0, "size": buf.size}})
                if instrumented:
                    c = bufs["counters"]
                    entries.append({"binding": MANIFEST["instrument"]["binding"],
                                    "resource": {"buffer": c, "offset": 0, "size": c.size}})
                bg = self.device.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=entries)
                cpass.set_pipeline(pipe)
                cpass.set_bind_group(0, bg)
                cpass.dispatch_workgroups(count, nh, 1)

    def _params(self, n, causal, plan):
        """One uniform buffer per head batch: (n, causal, head_base, x_base) as u32."""
        out = {}
        for h0 in range(0, plan["heads"], plan["head_batch"]):
            data = np.array([n, int(causal), h0, 0], np.uint32)
            out[h0] = self.device.create_buffer_with_data(data=data, usage=self.wgpu.BufferUsage.UNIFORM)
        return out

    def _make_buffers(self, kernel, n, d, heads, causal, plan, Q=None, K=None, V=None, instrumented=False,
                      grads=None):
        """Every buffer the plan names (plan["buffers"], bytes), filled from Q, K, V and, for
        a backward kernel, ``grads`` (O, dO, L; random timing inputs where not given); the
        rest zeroed. Plus the instrument's counters and the uniform params per head batch."""
        rng = np.random.default_rng(0)
        shape = (heads, n, d)
        dtype = np.dtype(dtype_of(kernel))  # float32, or float16 (manifest "dtype")
        data = {}
        for name, arr in (("Q", Q), ("K", K), ("V", V)):
            data[name] = rng.standard_normal(shape, dtype=np.float32) if arr is None else arr
        if direction(kernel) == "backward":
            grads = dict(grads or {})
            if "dO" not in grads:
                grads["dO"] = rng.uniform(-1, 1, shape).astype(np.float32)
            if "O" not in grads:
                grads["O"] = rng.standard_normal(shape, dtype=np.float32) / np.sqrt(np.float32(n))
            if "L" not in grads:
                grads["L"] = np.broadcast_to(timing_lse(n, causal), (heads, n))
            data.update(O=grads["O"], dO=grads["dO"], L=np.asarray(grads["L"], np.float32).reshape(heads, n))
        bufs = {}
        for name, size in plan["buffers"].items():
            if name in data:
                bufs[name] = self._storage(0, np.asarray(data[name], np.float32).reshape(-1), dtype)
            else:
                bufs[name] = self._storage(size)
        if instrumented:
            bufs["counters"] = self._storage(len(MANIFEST["instrument"]["slots"]) * 4)
        bufs["params"] = self._params(n, causal, plan)
        return bufs

    def _run_once(self, kernel, n, d, causal, plan, bufs, instrumented):
        """Clear the outputs, then run every pass of the kernel once, in one submission."""
        enc = self.device.create_command_encoder()
        self._clear(enc, bufs)
        cpass = enc.begin_compute_pass()
        self._encode(cpass, kernel, n, d, causal, plan, bufs, instrumented)
        cpass.end()
        self.device.queue.submit([enc.finish()])

    def _clear(self, enc, bufs):
        outputs = ("D", "dQ", "dK", "dV", "S", "P", "dP", "dS", "counters") if "dQ" in bufs else (
            "O", "S", "P", "counters")
        for name in outputs:
            if name in bufs:
                enc.clear_buffer(bufs[name])

    # ----------------------------------------------------------------- public
    def run(self, kernel: str, Q, K, V, causal: bool = False, instrumented: bool = False,
            workgroup_bytes: int = M_DEFAULT):
        """Run ``kernel`` on Q, K, V ((N, d) or (H, N, d) float32 arrays).

        Returns (O, counts): O has Q's shape, float32 (a float16 kernel's O, read back as
        float16, widened exactly; inf and NaN kept); counts is None, or with
        ``instrumented`` a dict tensor -> {"read": bytes, "write": bytes}.
        Raises KernelError when the size exceeds this device's limits.
        """
        if direction(kernel) != "forward":
            raise KernelError(f"{kernel} is a backward kernel: use run_backward")
        Q = np.asarray(Q, np.float32)
        squeeze = Q.ndim == 2
        if squeeze:
            Q, K, V = (np.asarray(x, np.float32)[None] for x in (Q, K, V))
        heads, n, d = Q.shape
        plan = self.plan(kernel, n, d, heads, workgroup_bytes, causal, instrumented)
        bufs = self._make_buffers(kernel, n, d, heads, causal, plan, Q, K, V, instrumented)
        self._run_once(kernel, n, d, causal, plan, bufs, instrumented)
        dtype = np.dtype(dtype_of(kernel))
        raw = self.device.queue.read_buffer(bufs["O"])[:heads * n * d * dtype.itemsize]
        O = np.frombuffer(raw, dtype).reshape(heads, n, d).astype(np.float32)
        counts = None
        if instrumented:
            counts = self._read_counts(bufs, kernel)
        return (O[0] if squeeze else O), counts

    def run_backward(self, kernel: str, Q, K, V, O, L, dO, causal: bool = False,
                     instrumented: bool = False, workgroup_bytes: int = M_DEFAULT):
        """Run a backward kernel: Q, K, V, O, dO (N, d) or (H, N, d) float32, L (N) or (H, N)
        float32, the forward's logsumexp per row (finite: every row must see a key).

        Every pass the manifest lists runs in order in one compute pass (D first, where the
        kernel has a preprocess pass). Returns (dQ, dK, dV, counts): gradients with Q's
        shape, float32; counts None, or with ``instrumented`` {tensor: {"read": bytes,
        "write": bytes}} for every backward tensor. Raises KernelError for a forward
        kernel, a non-finite L, or a size past this device's limits.
        """
        if direction(kernel) != "backward":
            raise KernelError(f"{kernel} is a forward kernel: use run")
        Q = np.asarray(Q, np.float32)
        squeeze = Q.ndim == 2
        arrs = [np.asarray(x, np.float32) for x in (Q, K, V, O, dO)]
        if squeeze:
            arrs = [a[None] for a in arrs]
        heads, n, d = arrs[0].shape
        L = np.asarray(L, np.float32).reshape(heads, n)
        if not np.isfinite(L).all():
            raise KernelError("L must be finite: the WGSL backward has no -inf (a row with no key has none)")
        plan = self.plan(kernel, n, d, heads, workgroup_bytes, causal, instrumented)
        grads = {"O": arrs[3], "dO": arrs[4], "L": L}
        bufs = self._make_buffers(kernel, n, d, heads, causal, plan, *arrs[:3], instrumented=instrumented,
                                  grads=grads)
        self._run_once(kernel, n, d, causal, plan, bufs, instrumented)
        out = []
        for name in ("dQ", "dK", "dV"):
            a = np.frombuffer(self.device.queue.read_buffer(bufs[name]), np.float32).reshape(heads, n, d).copy()
            out.append(a[0] if squeeze else a)
        counts = self._read_counts(bufs, kernel) if instrumented else None
        return out[0], out[1], out[2], counts

    def _read_counts(self, bufs, kernel: str) -> dict:
        """Instrument counters -> {tensor: {"read": bytes, "write": bytes}} for every tensor
        of the kernel's direction (emulator.traffic.tensors_of), 0 where untouched."""
        from emulator.traffic import tensors_of

        raw = np.frombuffer(self.device.queue.read_buffer(bufs["counters"]), np.uint32)
        direction = MANIFEST["kernels"][kernel].get("direction", "forward")
        counts = {t: {"read": 0, "write": 0} for t in tensors_of(direction)}
        for i, slot in enumerate(MANIFEST["instrument"]["slots"]):
            tensor, kind = slot.split(".")
            if raw[i]:
                if tensor not in counts:
                    raise KernelError(f"{kernel} moved {slot} ({int(raw[i])} elements), "
                                      f"a tensor its direction does not declare")
                counts[tensor][kind] = int(raw[i]) * element_bytes(kernel)
        return counts

    def time(self, kernel: str, n: int, d: int, heads: int = 1, causal: bool = False,
             min_sample_ms: float = 10.0, min_samples: int = 5, max_submit_ms: float = 1000.0,
             workgroup_bytes: int = M_DEFAULT, max_run_ms: float | None = None,
             max_config_ms: float | None = None, passes: tuple | None = None) -> dict:
        """Time ``kernel`` on random (heads, N, d) float32 inputs (a backward kernel: random Q,
        K, V, O, dO and the stand-in L of :func:`timing_lse`; every pass the manifest lists).

        Returns {"medianMs": ms per run, "samples": [ms per run], "reps": runs per
        sample, "method": "timestamp"|"wall", "belowResolution": bool, ...}.
        Method: a warm-up, one head timed alone to size the work, then samples of
        ``reps`` runs each, reps chosen so a sample holds >= min_sample_ms of GPU work,
        and at least ``min_samples`` samples; the median is reported. No submission
        holds more than about max_submit_ms: long runs are split by heads. GPU time
        comes from timestamp queries (read as 64-bit unsigned nanoseconds,
        non-positive deltas dropped) when the device has them, else wall time until the work is done
        (see _wait).
        Budget (benchmarks only): with ``max_run_ms``, a run predicted from one head to
        take longer raises TooSlow; with ``max_config_ms``, fewer samples (at least 1)
        are taken when min_samples of them would take longer; "samples" says how many.
        ``passes``: time only these pass indices (see _encode).
        Also "cpuSamples" and "cpuMedianMs": this process's CPU time per run over the same
        samples (time.process_time, every thread). On a CPU adapter such as lavapipe, whose
        worker threads run in this process, that is the work the kernel took, whatever else
        shares the machine; on a GPU it is only the host's side.
        Raises KernelError when the size exceeds this device's limits.
        """
        plan = self.plan(kernel, n, d, heads, workgroup_bytes, causal)
        cap = plan["head_batch"]
        cpu = [0.0]  # CPU ms of the submissions so far
        bufs = self._make_buffers(kernel, n, d, heads, causal, plan)
        enc = self.device.create_command_encoder()
        self._clear(enc, bufs)
        self.device.queue.submit([enc.finish()])

        def submit(reps: int, h_lo: int, h_hi: int) -> float:
            """Submit ``reps`` runs over heads [h_lo, h_hi) in one command buffer; GPU ms."""
            enc = self.device.create_command_encoder()
            qs = tw = None
            if self.timestamps:
                qs = self.device.create_query_set(type="timestamp", count=2)
                tw = {"query_set": qs, "beginning_of_pass_write_index": 0, "end_of_pass_write_index": 1}
            cpass = enc.begin_compute_pass(timestamp_writes=tw)
            for _ in range(reps):
                self._encode(cpass, kernel, n, d, causal, plan, bufs, False, h_lo, h_hi, passes)
            cpass.end()
            if qs is not None:
                rb = self.device.create_buffer(
                    size=16, usage=self.wgpu.BufferUsage.QUERY_RESOLVE | self.wgpu.BufferUsage.COPY_SRC)
                enc.resolve_query_set(qs, 0, 2, rb, 0)
            t0, c0 = time.perf_counter(), time.process_time()
            self.device.queue.submit([enc.finish()])
            self._wait()
            wall = (time.perf_counter() - t0) * 1e3
            cpu[0] += (time.process_time() - c0) * 1e3
            if qs is None:
                return wall
            ts = np.frombuffer(self.device.queue.read_buffer(rb), np.uint64)
            if ts[1] <= ts[0]:
                return float("nan")
            return float(ts[1] - ts[0]) / 1e6

        # Warm-up and size estimate on the first head batch's first head.
        plan["head_batch"] = 1
        bufs["params"] = self._params(n, causal, plan)
        submit(1, 0, 1)
        one_head = submit(1, 0, 1)
        if not one_head > 0:
            one_head = 1e-3
        run_ms = one_head * heads
        if max_run_ms is not None and run_ms > max_run_ms:
            raise TooSlow(f"predicted {run_ms / 1e3:.1f} s a run (one head: {one_head:.0f} ms); "
                          f"not run, to save device time")
        if max_config_ms is not None:
            min_samples = max(1, min(min_samples, int(max_config_ms // max(run_ms, min_sample_ms))))
        # Heads per submission: all of them unless one run would pass max_submit_ms.
        per_submit = max(1, min(heads, int(max_submit_ms // one_head)))
        plan["head_batch"] = max(1, min(cap, per_submit))
        bufs["params"] = self._params(n, causal, plan)
        split = per_submit < heads
        reps = max(1, math.ceil(min_sample_ms / run_ms))
        reps_per_submit = 1 if split else max(1, min(reps, int(max_submit_ms // run_ms)))
        if split:
            submit(1, 0, plan["head_batch"])
        else:
            submit(1, 0, heads)
        samples, cpu_samples = [], []
        attempts = 0
        while len(samples) < min_samples and attempts < 3 * min_samples:
            attempts += 1
            total, done = 0.0, 0
            cpu[0] = 0.0
            while done < reps and total == total:
                r = min(reps_per_submit, reps - done)
                if split:
                    step = plan["head_batch"]
                    for h0 in range(0, heads, step):
                        total += submit(r, h0, min(heads, h0 + step))
                else:
                    total += submit(r, 0, heads)
                done += r
            if total > 0:
                samples.append(total / reps)
                cpu_samples.append(cpu[0] / reps)
        samples.sort()
        cpu_samples.sort()
        med = samples[len(samples) // 2] if samples else float("nan")
        # Free this configuration's buffers now rather than at garbage collection, so the
        # next configuration's allocations do not depend on what ran before.
        for buf in [b for name, b in bufs.items() if name != "params"] + list(bufs["params"].values()):
            buf.destroy()
        # Timestamp resolution: Chrome rounds to 100 us; native Vulkan ticks in ns.
        return {"medianMs": med, "samples": samples, "reps": reps,
                "cpuMedianMs": cpu_samples[len(cpu_samples) // 2] if cpu_samples else float("nan"),
                "cpuSamples": cpu_samples,
                "method": "timestamp" if self.timestamps else "wall",
                "belowResolution": bool(med * reps < 0.1),
                "headBatch": plan["head_batch"], "split": split,
                "tiling": [plan["tiling"]["block_rows"], plan["tiling"]["block_cols"]]}


def timing_lse(n: int, causal: bool) -> np.ndarray:
    """A stand-in logsumexp for timing runs, (N,) float32: ln(keys of row i) + 1/2, about
    the logsumexp of that many standard-normal scores, so P = exp(S - L) stays finite and
    near 1/keys. The work a backward pass does does not depend on these values; every
    check uses the real L (cannery_host.wgpu_runner's callers compute it from the forward)."""
    keys = np.arange(1, n + 1, dtype=np.float64) if causal else np.full(n, float(n))
    return (np.log(keys) + 0.5).astype(np.float32)


def forward_saved(Q, K, V, causal: bool):
    """The forward's O and L in float64 on the CPU (numpy), for a backward's inputs.

    Q, K, V: (..., N, d). Returns (O (..., N, d), L (..., N)), L_i = m_i + ln Σ_j exp(S_ij - m_i).
    """
    Q, K, V = (np.asarray(x, np.float64) for x in (Q, K, V))
    n, d = Q.shape[-2:]
    S = Q @ np.swapaxes(K, -1, -2) / math.sqrt(d)
    if causal:
        S = np.where(np.tril(np.ones((n, n), bool)), S, -np.inf)
    m = S.max(-1, keepdims=True)
    E = np.exp(S - m)
    total = E.sum(-1, keepdims=True)
    return (E / total) @ V, (m + np.log(total))[..., 0]


def check_backward(q: list, k: list, v: list, do: list, causal: bool, dq, dk, dv, block_cols: int,
                   reference: dict | None = None) -> dict:
    """Hold a backward kernel's dQ, dK, dV ((N, d) arrays) to the exact float64 gradients,
    entry by entry, within emulator.backward.bounds (the bound its float32 mirrors meet).

    q, k, v, do: (N, d) lists of float32 values, one head; block_cols: B_c of the forward
    that produced O and L (the bound counts its key tiles). Returns {"passed", "tensors":
    {"dQ"|"dK"|"dV": {"passed", "max_abs_error", "worst_ratio", "nan_entries"}}}: an entry
    passes when |got - float64| <= its bound; NaN or inf fails. The float64 reference is
    pure Python (N x N tables): keep N to a few hundred. ``reference``: the
    {"ref", "bound"} of an earlier call on the same inputs (returned under "reference"),
    to check several kernels against one computation.
    """
    from emulator import backward as bw

    if reference is None:
        ref = bw.reference(q, k, v, do, causal)
        reference = {"ref": ref, "bound": bw.bounds(q, k, v, do, ref, causal, None, block_cols)}
    ref, bound = reference["ref"], reference["bound"]
    tensors = {}
    for name, got in (("dQ", dq), ("dK", dk), ("dV", dv)):
        got = np.asarray(got, np.float64)
        want, b = np.array(ref[name], np.float64), np.array(bound[name], np.float64)
        finite = np.isfinite(got)
        err = np.where(finite, np.abs(got - want), np.inf)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(b > 0, err / b, np.where(err == 0, 0.0, np.inf))
        tensors[name] = {"passed": bool((ratio <= 1.0).all()), "max_abs_error": float(err.max()),
                         "worst_ratio": float(ratio.max()), "nan_entries": int((~finite).sum())}
    return {"passed": all(t["passed"] for t in tensors.values()), "tensors": tensors, "reference": reference}
