"""FlashAttention in Triton, the fast path: what solution.py's kernels become on Hopper.

    flash_attention(q, k, v, causal=False) -> o          (differentiable)
    flash_attention(q, k, v, causal, return_lse=True) -> (o, lse)

The same function, arguments, shapes and dtypes as solution.py's: q, k, v CUDA
tensors of shape (B, H, N, d), float32, float16 or bfloat16, d one of 16,
32, 64, 128; o of the same shape and dtype; lse float32 (B, H, N) in natural
units. Read solution.py first: it is the kernel the exercise's prompt teaches (one
program per tile, the online softmax, the two causal stages, the three
backward launches), and this file keeps its algorithm, tile walk and masks
line for line. What changes, each with what it bought on an H200 at
N = 16,384, 32 heads (docs/BENCHMARKS.md; milliseconds of the
kernel alone, solution.py's kernel at its own autotuned pick beside it):

  * every tile of the backward comes through a tensor descriptor (the TMA
    copy engine), as solution.py's forward already does: a descriptor load
    lands in workgroup memory (SRAM) without passing through registers, so
    the dK/dV kernel no longer spends registers on the addresses and masks of
    the Q and dO tiles it streams, and can afford 64 keys × 64 queries with 4
    warps and 2 stages (DKDV below). dK/dV: 19.38 → 16.15 ms at (bfloat16,
    d = 128, full), 6.73 → 5.07 at (float16, 64, causal), 10.90 → 9.71 at
    (bfloat16, 64, full); solution.py's own shapes through descriptors gained
    nothing (19.92 ms; 6.98 with 3 stages). dQ: 10.83 → 10.37 and 2.79 → 2.83 ms, noise;
  * the dQ kernel on a second CUDA stream beside the dK/dV kernel ("two
    streams" in _backward), timed once per shape against one stream: 8.04 →
    7.84 ms for the whole backward at (float16, 64, causal), but 27.38 → 28.21
    at (bfloat16, 128, full), where the one stream is kept;
  * the forward is solution.py's (its tiles already come through
    descriptors): nothing Triton 3.6 offers beat it. A warp-specialized loop
    (WS, tl.range(..., warp_specialize=True)) took 8.79 ms against 7.97 at
    (bfloat16, 128, full) and did not compile with 4 warps in float16; a
    persistent grid of one program per multiprocessor (PERSIST) took 9.03 to
    13.9 ms; 128 × 128 tiles with 8 warps 9.11 ms. The flags stay in the
    kernels so that bench/sweep_triton_fast.py can measure them again.

Tried in the backward and left out: warp specialization (NaN in dK/dV with
4 warps, within 1% with 8), and dQ from atomic adds in the dK/dV kernel (one
kernel, five products instead of seven), 19% slower at (bfloat16, 128, full)
and 17% at (float16, 64, causal) at best; it stays a way _backward times per
shape, and wins only at N = 1,024 and 2,048.
Where the backward's time goes now, (bfloat16, 128, full): the pre-pass
D = rowsum(dO ∘ O) 0.07 ms, dK/dV 16.15 ms (61%), dQ 10.37 ms (39%);
(float16, 64, causal): 0.04, 5.07 (64%) and 2.83 ms (36%). cuDNN's whole
backward takes 20.7 and 6.6 ms there: two kernels recompute S and dP, seven
matrix products against FlashAttention-2's five.

Where no copy engine exists (compute capability below 9.0), in float32, under
Triton's interpreter, or with tma=False, flash_attention is solution.py's.

Sources: as solution.py (Dao et al. 2022, Algorithm 1; Dao 2023, FlashAttention-2,
§3.1 and Algorithm 2; Triton's tutorial 06, "Fused Attention"), and Shah et al.
2024, FlashAttention-3 (§3.1: TMA loads, warp specialization). Written for this
project; run on an H200 with Triton 3.6 (docs/BENCHMARKS.md).
"""
import math

import solution
import torch
import triton
import triton.language as tl
from solution import INTERPRET, LN2, LOG2E, SHARED_BYTES, _backward_preprocess, _check, _rank, _scratch

# --------------------------------------------------------------------------- forward

@triton.jit
def _fwd_keys(acc, l, m, q, k_d, v_d, rows, lo, hi, N, qk_scale,
              BLOCK_N: tl.constexpr, MASK: tl.constexpr, WS: tl.constexpr):
    """solution._key_tiles with descriptor loads and an optional warp-specialized loop."""
    for start in tl.range(lo, hi, BLOCK_N, warp_specialize=WS):
        start = tl.multiple_of(start, BLOCK_N)
        k = k_d.load([start, 0])
        s = tl.dot(q, k.T)
        if MASK == 0:
            m_new = tl.maximum(m, tl.max(s, axis=1) * qk_scale)
            s = s * qk_scale - m_new[:, None]
        else:
            keys = start + tl.arange(0, BLOCK_N)
            if MASK == 1:
                visible = keys[None, :] < N
            else:
                visible = keys[None, :] <= rows[:, None]
            s = tl.where(visible, s * qk_scale, float("-inf"))
            m_new = tl.maximum(m, tl.max(s, axis=1))
            s = s - m_new[:, None]
        p = tl.exp2(s)
        alpha = tl.exp2(m - m_new)
        l = l * alpha + tl.sum(p, axis=1)
        v = v_d.load([start, 0])
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m = m_new
    return acc, l, m


@triton.jit
def _fwd_tile(Q, K, V, O, L, bh, tile, N, qk_scale, D: tl.constexpr, BLOCK_M: tl.constexpr,
              BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, EVEN: tl.constexpr, WS: tl.constexpr):
    """One query tile of one head: solution._flash_forward's body."""
    base = bh.to(tl.int64) * N * D
    q_d = tl.make_tensor_descriptor(Q + base, shape=[N, D], strides=[D, 1], block_shape=[BLOCK_M, D])
    k_d = tl.make_tensor_descriptor(K + base, shape=[N, D], strides=[D, 1], block_shape=[BLOCK_N, D])
    v_d = tl.make_tensor_descriptor(V + base, shape=[N, D], strides=[D, 1], block_shape=[BLOCK_N, D])
    o_d = tl.make_tensor_descriptor(O + base, shape=[N, D], strides=[D, 1], block_shape=[BLOCK_M, D])
    first = tile * BLOCK_M
    rows = first + tl.arange(0, BLOCK_M)
    q = q_d.load([first, 0])
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    if CAUSAL:
        acc, l, m = _fwd_keys(acc, l, m, q, k_d, v_d, rows, 0, first, N, qk_scale, BLOCK_N, 0, WS)
        acc, l, m = _fwd_keys(acc, l, m, q, k_d, v_d, rows, first, tl.minimum(N, first + BLOCK_M), N, qk_scale,
                              BLOCK_N, 2, False)
    elif EVEN:
        acc, l, m = _fwd_keys(acc, l, m, q, k_d, v_d, rows, 0, N, N, qk_scale, BLOCK_N, 0, WS)
    else:
        whole = (N // BLOCK_N) * BLOCK_N
        acc, l, m = _fwd_keys(acc, l, m, q, k_d, v_d, rows, 0, whole, N, qk_scale, BLOCK_N, 0, False)
        acc, l, m = _fwd_keys(acc, l, m, q, k_d, v_d, rows, whole, N, N, qk_scale, BLOCK_N, 1, False)
    o_d.store([first, 0], (acc / l[:, None]).to(O.dtype.element_ty))
    tl.store(L + bh * N + rows, (m + tl.log2(l)) * LN2, mask=rows < N)


@triton.jit(do_not_specialize=["N", "BH"])
def _flash_forward_fast(Q, K, V, O, L, N, BH, qk_scale, D: tl.constexpr, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, EVEN: tl.constexpr,
                        WS: tl.constexpr, PERSIST: tl.constexpr):
    """Q, K, V, O: (B·H, N, D) contiguous half precision; L: (B·H, N) float32.
    PERSIST: a grid of at most one program per multiprocessor, each walking tiles
    pid, pid + programs, … of the (batch·head, query tile) pairs, causal ones last
    tile first; else one program per pair, as solution.py. WS warp-specializes the
    main key loop. Both were slower on the H200 (module docstring), so FORWARD
    leaves them off; they stay for bench/sweep_triton_fast.py."""
    tiles = tl.cdiv(N, BLOCK_M)
    if PERSIST:
        for t in range(tl.program_id(0), tiles * BH, tl.num_programs(0)):
            tile = t % tiles
            if CAUSAL:
                tile = tiles - 1 - tile
            _fwd_tile(Q, K, V, O, L, t // tiles, tile, N, qk_scale, D, BLOCK_M, BLOCK_N, CAUSAL, EVEN, WS)
    else:
        tile = tl.program_id(0)
        if CAUSAL:
            tile = tl.num_programs(0) - 1 - tile
        _fwd_tile(Q, K, V, O, L, tl.program_id(1), tile, N, qk_scale, D, BLOCK_M, BLOCK_N, CAUSAL, EVEN, WS)


# --------------------------------------------------------------------------- backward

@triton.jit
def _dkdv_queries(dk, dv, k, v, q_d, do_d, L, Delta, DQ, keys, lo, hi, N, qk_scale, sm_scale,
                  BLOCK_M: tl.constexpr, MASK: tl.constexpr, DQ_ATOMIC: tl.constexpr, WS: tl.constexpr):
    """solution._query_tiles with descriptor loads (Q, dO) and an optional warp-specialized loop."""
    for start in tl.range(lo, hi, BLOCK_M, warp_specialize=WS):
        start = tl.multiple_of(start, BLOCK_M)
        rows = start + tl.arange(0, BLOCK_M)
        q = q_d.load([start, 0])
        l2 = tl.load(L + rows, mask=rows < N, other=float("inf")) * LOG2E
        s_t = tl.dot(k, q.T)
        p_t = tl.exp2(s_t * qk_scale - l2[None, :])
        if MASK == 1:
            p_t = tl.where(keys[:, None] < N, p_t, 0.0)
        if MASK == 2:
            p_t = tl.where(rows[None, :] >= keys[:, None], p_t, 0.0)
        do = do_d.load([start, 0])
        dv = tl.dot(p_t.to(do.dtype), do, dv)
        dp_t = tl.dot(v, do.T)
        delta = tl.load(Delta + rows, mask=rows < N, other=0.0)
        ds_t = p_t * (dp_t - delta[None, :])
        dk = tl.dot(ds_t.to(q.dtype), q, dk)
        if DQ_ATOMIC:
            DQ.atomic_add([start, 0], tl.dot(tl.trans(ds_t.to(k.dtype)), k) * sm_scale)
    return dk, dv


@triton.jit(do_not_specialize=["N"])
def _backward_dkdv_fast(Q, K, V, DO, L, Delta, DK, DV, DQ, N, qk_scale, sm_scale,
                        D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        CAUSAL: tl.constexpr, DQ_ATOMIC: tl.constexpr, WS: tl.constexpr):
    """solution._backward_dkdv with every tile through a descriptor; DQ float32 (zeroed) with DQ_ATOMIC."""
    tl.static_assert(BLOCK_N % BLOCK_M == 0)
    tile, bh = tl.program_id(0), tl.program_id(1)
    base = bh.to(tl.int64) * N * D
    # Every tile by the copy engine, straight into SRAM: no registers for addresses or masks, which
    # is what lets 64 × 64 tiles with 4 warps and 2 stages run (19.38 → 16.15 ms at bfloat16,
    # d = 128, full). Rows past N read as 0 and stores past N are dropped, as in the forward.
    q_d = tl.make_tensor_descriptor(Q + base, shape=[N, D], strides=[D, 1], block_shape=[BLOCK_M, D])
    do_d = tl.make_tensor_descriptor(DO + base, shape=[N, D], strides=[D, 1], block_shape=[BLOCK_M, D])
    k_d = tl.make_tensor_descriptor(K + base, shape=[N, D], strides=[D, 1], block_shape=[BLOCK_N, D])
    v_d = tl.make_tensor_descriptor(V + base, shape=[N, D], strides=[D, 1], block_shape=[BLOCK_N, D])
    dk_d = tl.make_tensor_descriptor(DK + base, shape=[N, D], strides=[D, 1], block_shape=[BLOCK_N, D])
    dv_d = tl.make_tensor_descriptor(DV + base, shape=[N, D], strides=[D, 1], block_shape=[BLOCK_N, D])
    dq_d = DQ
    if DQ_ATOMIC:
        dq_d = tl.make_tensor_descriptor(DQ + base, shape=[N, D], strides=[D, 1], block_shape=[BLOCK_M, D])
    L, Delta = L + bh * N, Delta + bh * N
    first = tile * BLOCK_N
    keys = first + tl.arange(0, BLOCK_N)
    k = k_d.load([first, 0])
    v = v_d.load([first, 0])
    dk = tl.zeros([BLOCK_N, D], tl.float32)
    dv = tl.zeros([BLOCK_N, D], tl.float32)
    if CAUSAL:
        dk, dv = _dkdv_queries(dk, dv, k, v, q_d, do_d, L, Delta, dq_d, keys, first, first + BLOCK_N, N,
                               qk_scale, sm_scale, BLOCK_M, 2, DQ_ATOMIC, False)
        dk, dv = _dkdv_queries(dk, dv, k, v, q_d, do_d, L, Delta, dq_d, keys, first + BLOCK_N, N, N,
                               qk_scale, sm_scale, BLOCK_M, 0, DQ_ATOMIC, WS)
    else:
        dk, dv = _dkdv_queries(dk, dv, k, v, q_d, do_d, L, Delta, dq_d, keys, 0, N, N, qk_scale, sm_scale,
                               BLOCK_M, 1 if DQ_ATOMIC else 0, DQ_ATOMIC, WS)
    dk_d.store([first, 0], (dk * sm_scale).to(DK.dtype.element_ty))
    dv_d.store([first, 0], dv.to(DV.dtype.element_ty))


@triton.jit
def _dq_keys(dq, q, do, l2, delta, k_d, v_d, rows, lo, hi, N, qk_scale,
             BLOCK_N: tl.constexpr, MASK: tl.constexpr, WS: tl.constexpr):
    """solution._key_tiles_dq with descriptor loads and an optional warp-specialized loop."""
    for start in tl.range(lo, hi, BLOCK_N, warp_specialize=WS):
        start = tl.multiple_of(start, BLOCK_N)
        k = k_d.load([start, 0])
        v = v_d.load([start, 0])
        s = tl.dot(q, k.T)
        p = tl.exp2(s * qk_scale - l2[:, None])
        if MASK == 1:
            keys = start + tl.arange(0, BLOCK_N)
            p = tl.where(keys[None, :] < N, p, 0.0)
        if MASK == 2:
            keys = start + tl.arange(0, BLOCK_N)
            p = tl.where(keys[None, :] <= rows[:, None], p, 0.0)
        dp = tl.dot(do, v.T)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq)
    return dq


@triton.jit(do_not_specialize=["N"])
def _backward_dq_fast(Q, K, V, DO, L, Delta, DQ, N, qk_scale, sm_scale,
                      D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      CAUSAL: tl.constexpr, WS: tl.constexpr):
    """solution._backward_dq with every tile through a descriptor."""
    tl.static_assert(BLOCK_M % BLOCK_N == 0)
    tile, bh = tl.program_id(0), tl.program_id(1)
    if CAUSAL:
        tile = tl.num_programs(0) - 1 - tile
    base = bh.to(tl.int64) * N * D
    q_d = tl.make_tensor_descriptor(Q + base, shape=[N, D], strides=[D, 1], block_shape=[BLOCK_M, D])
    do_d = tl.make_tensor_descriptor(DO + base, shape=[N, D], strides=[D, 1], block_shape=[BLOCK_M, D])
    dq_d = tl.make_tensor_descriptor(DQ + base, shape=[N, D], strides=[D, 1], block_shape=[BLOCK_M, D])
    k_d = tl.make_tensor_descriptor(K + base, shape=[N, D], strides=[D, 1], block_shape=[BLOCK_N, D])
    v_d = tl.make_tensor_descriptor(V + base, shape=[N, D], strides=[D, 1], block_shape=[BLOCK_N, D])
    first = tile * BLOCK_M
    rows = first + tl.arange(0, BLOCK_M)
    q = q_d.load([first, 0])
    do = do_d.load([first, 0])
    l2 = tl.load(L + bh * N + rows, mask=rows < N, other=float("inf")) * LOG2E
    delta = tl.load(Delta + bh * N + rows, mask=rows < N, other=0.0)
    dq = tl.zeros([BLOCK_M, D], tl.float32)
    if CAUSAL:
        dq = _dq_keys(dq, q, do, l2, delta, k_d, v_d, rows, 0, first, N, qk_scale, BLOCK_N, 0, WS)
        dq = _dq_keys(dq, q, do, l2, delta, k_d, v_d, rows, first, tl.minimum(N, first + BLOCK_M), N, qk_scale,
                      BLOCK_N, 2, False)
    else:
        whole = (N // BLOCK_N) * BLOCK_N
        dq = _dq_keys(dq, q, do, l2, delta, k_d, v_d, rows, 0, whole, N, qk_scale, BLOCK_N, 0, WS)
        dq = _dq_keys(dq, q, do, l2, delta, k_d, v_d, rows, whole, N, N, qk_scale, BLOCK_N, 1, False)
    dq_d.store([first, 0], (dq * sm_scale).to(DQ.dtype.element_ty))


# --------------------------------------------------------------------------- configs

def _cfg(blocks, warps, stages, **flags):
    return triton.Config(dict(blocks, **flags), num_warps=warps, num_stages=stages)


#: The candidates per kernel, (BLOCK_M, BLOCK_N, warps, stages, flags), the autotuner picking among
#: them per shape; the first is the one below N = 1,024. From the H200 sweep at N = 16,384
#: (bench/sweep_triton_fast.py; docs/BENCHMARKS.md has every figure):
#:  * forward: solution.py's picks. Its forward already takes its tiles through descriptors, and no
#:    knob Triton 3.6 offers beat them: a warp-specialized loop (WS) took 8.79 ms against 7.97 at
#:    (bfloat16, d = 128, full) and did not compile at float16 with 4 warps; the persistent grid
#:    (PERSIST) lost 13% to 80%; 128 × 128 tiles with 8 warps lost 14% and more.
#:  * dK/dV: 64 keys × 64 queries, 4 warps, 2 stages, which solution.py's pointer loads could not
#:    afford, is now the fastest everywhere: 16.15 ms against solution.py's 19.38 at (bfloat16, 128,
#:    full), 545 TFLOP/s; 5.07 against 6.73 at (float16, 64, causal). With 3 stages the same shape
#:    took 24.8 and 6.0 ms; warp specialization gave NaN with 4 warps and nothing with 8.
#:  * dQ: 128 × 64, 8 warps, 3 stages, as before: 10.37 ms against 10.83 (bfloat16, 128, full),
#:    2.83 against 2.79 (float16, 64, causal): the descriptors buy little where Q and dO are loaded once.
#:  * atomic dQ: the dK/dV shape, timed against the two kernels per shape (_backward).
FORWARD = [(128, 64, 4, 2, {}), (128, 64, 4, 3, {}), (64, 64, 4, 2, {}), (128, 64, 8, 3, {})]
DKDV = [(64, 64, 4, 2, {}), (64, 64, 4, 1, {}), (32, 64, 4, 2, {}), (32, 64, 4, 4, {})]
DQ = [(128, 64, 8, 3, {}), (128, 64, 8, 2, {}), (128, 64, 8, 4, {}), (64, 64, 4, 2, {})]
DKDV_ATOMIC = [(64, 64, 4, 2, {}), (64, 64, 4, 1, {}), (32, 64, 4, 2, {}), (64, 128, 8, 2, {})]


def _configs(table, **defaults):
    """triton.Configs from a table; every flag a kernel takes and a row leaves out gets its default."""
    if INTERPRET:
        return [_cfg({"BLOCK_M": 64, "BLOCK_N": 64}, 4, 1, **defaults)]
    return [_cfg({"BLOCK_M": bm, "BLOCK_N": bn}, w, s, **dict(defaults, **f)) for bm, bn, w, s, f in table]


def _prune(configs, named_args, **kwargs):
    """Those whose pipeline fits in SRAM; one config below N = 1,024 (a few tiles, a compile per shape)."""
    d = kwargs["D"]

    def fits(c):
        bm, bn = c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"]
        return c.num_stages * 2 * min(bm, bn) * d * 2 + 2 * max(bm, bn) * d * 2 <= SHARED_BYTES

    keep = [c for c in configs if fits(c)] or configs[:1]
    n = kwargs["N"] if "N" in kwargs else named_args["N"]  # positional in the forward, keyword in the backward
    return keep[:1] if n < 1024 else keep


def _tuner(configs, reset=None):
    return triton.autotune(configs=configs, key=["N", "D", "CAUSAL"], do_bench=_rank,
                           reset_to_zero=reset, prune_configs_by={"early_config_prune": _prune})


_fwd = _tuner(_configs(FORWARD, WS=False, PERSIST=False))(_flash_forward_fast)
_dkdv = _tuner(_configs(DKDV, WS=False))(_backward_dkdv_fast)
# With DQ_ATOMIC the trials add into DQ, so the autotuner zeroes it before each.
_dkdv_dq = _tuner(_configs(DKDV_ATOMIC, WS=False), reset=["DQ"])(_backward_dkdv_fast)
_dq = _tuner(_configs(DQ, WS=False))(_backward_dq_fast)


# --------------------------------------------------------------------------- host

def _fast(q, tma) -> bool:
    """The fast kernels run on Hopper and newer, in half precision, on a GPU, unless tma=False."""
    return tma is not False and not INTERPRET and solution._use_tma(q)


_SMS = {}


def _sms(device) -> int:
    if device not in _SMS:
        _SMS[device] = torch.cuda.get_device_properties(device).multi_processor_count
    return _SMS[device]


def _forward(q, k, v, causal: bool):
    b, h, n, d = q.shape
    o = torch.empty_like(q)
    lse = torch.empty((b, h, n), device=q.device, dtype=torch.float32)
    if o.numel() == 0:
        return o, lse
    triton.set_allocator(_scratch)
    sms = _sms(q.device)

    def grid(meta):
        tiles = triton.cdiv(n, meta["BLOCK_M"])
        return (min(sms, tiles * b * h),) if meta["PERSIST"] else (tiles, b * h)

    _fwd[grid](q, k, v, o, lse, n, b * h, LOG2E.value / math.sqrt(d), D=d, CAUSAL=bool(causal), EVEN=n % 128 == 0)
    return o, lse


#: The backward's ways (WAYS), timed once per (N, d, causal, dtype): {key: {way: ms}}, as solution.BACKWARD_TIMES.
BACKWARD_TIMES = {}
#: "two streams": the dQ kernel on a second CUDA stream beside the dK/dV kernel. The two write
#: different tensors and read only what the pre-pass and the forward made, so they may run at once;
#: each alone leaves the GPU part idle in its last wave of programs (8,192 dK/dV programs and
#: 4,096 dQ programs at N = 16,384 and 32 heads), which the other's programs can fill.
WAYS = ("two kernels", "two streams", "atomic dQ")
_SIDE = {}


def _side(device) -> torch.cuda.Stream:
    """The second stream the dQ kernel runs on (one per device, made once)."""
    if device not in _SIDE:
        _SIDE[device] = torch.cuda.Stream(device)
    return _SIDE[device]


def _backward(do, q, k, v, o, lse, causal: bool, dq_atomic=None, way=None):
    """(dq, dk, dv): solution._backward with the fast kernels, in one of WAYS.

    way None: dq_atomic=True is "atomic dQ"; else below N = 1,024 "two streams", and from there
    the fastest of WAYS (dq_atomic=False: of the two without atomics), timed once per shape.
    """
    if way is None:
        ways = WAYS if dq_atomic is None else (WAYS[-1:] if dq_atomic else WAYS[:2])
        key = (q.shape[2], q.shape[3], bool(causal), str(q.dtype).removeprefix("torch."))
        if len(ways) == 1 or q.shape[2] < 1024:
            way = ways[0] if len(ways) == 1 else "two streams"
        else:
            times = BACKWARD_TIMES.setdefault(key, {})
            for w in ways:
                if w not in times:
                    times[w] = _rank(lambda w=w: _backward(do, q, k, v, o, lse, causal, way=w), None)
            way = min(ways, key=times.get)
    b, h, n, d = q.shape
    do = do.contiguous()
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    if q.numel() == 0:
        return dq, dk, dv
    triton.set_allocator(_scratch)
    delta = torch.empty_like(lse)
    _backward_preprocess[(triton.cdiv(n, 64), b * h)](o, do, delta, n, D=d, BLOCK_M=64)
    args = dict(N=n, qk_scale=LOG2E.value / math.sqrt(d), sm_scale=1 / math.sqrt(d), D=d, CAUSAL=bool(causal))
    if way == "atomic dQ":
        dq32 = torch.zeros(q.shape, device=q.device, dtype=torch.float32)
        _dkdv_dq[lambda meta: (triton.cdiv(n, meta["BLOCK_N"]), b * h)](q, k, v, do, lse, delta, dk, dv, dq32,
                                                                        DQ_ATOMIC=True, **args)
        return dq32.to(q.dtype), dk, dv
    main = torch.cuda.current_stream(q.device)
    side = _side(q.device) if way == "two streams" else main
    side.wait_stream(main)  # D, L and dO are ready before dQ starts
    with torch.cuda.stream(side):
        _dq[lambda meta: (triton.cdiv(n, meta["BLOCK_M"]), b * h)](q, k, v, do, lse, delta, dq, **args)
    _dkdv[lambda meta: (triton.cdiv(n, meta["BLOCK_N"]), b * h)](q, k, v, do, lse, delta, dk, dv, dq,
                                                                 DQ_ATOMIC=False, **args)
    main.wait_stream(side)  # nothing after this backward, freeing delta included, overtakes dQ
    return dq, dk, dv


class FlashAttention(torch.autograd.Function):
    """As solution.FlashAttention, with the fast kernels: saves q, k, v, O and L, never P."""

    @staticmethod
    def forward(ctx, q, k, v, causal, dq_atomic=None):
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        o, lse = _forward(q, k, v, causal)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal, ctx.dq_atomic = causal, dq_atomic
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = _backward(do, q, k, v, o, lse, ctx.causal, ctx.dq_atomic)
        return dq, dk, dv, None, None


def flash_attention(q, k, v, causal=False, return_lse=False, tma=None, dq_atomic=None):
    """solution.flash_attention (same arguments, results and errors), with the fast kernels
    where they run (half precision on Hopper and newer, tma not False), else solution's."""
    _check(q, k, v)
    if not _fast(q, tma):
        return solution.flash_attention(q, k, v, causal, return_lse, tma, dq_atomic)
    if return_lse:
        with torch.no_grad():
            return _forward(q.contiguous(), k.contiguous(), v.contiguous(), causal)
    return FlashAttention.apply(q, k, v, bool(causal), dq_atomic)
