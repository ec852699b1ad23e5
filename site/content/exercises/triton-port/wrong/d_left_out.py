# Wrong: dS = P ∘ dP, with D = rowsum(dO ∘ O) left out: dV stays right, dQ and dK do not.
"""FlashAttention in Triton, forward and backward: a wrong answer to exercise 3 (see above).

    flash_attention(q, k, v, causal=False) -> o          (differentiable)
    flash_attention(q, k, v, causal, return_lse=True) -> (o, lse)

q, k, v: CUDA tensors of shape (B, H, N, d), float32, float16 or bfloat16,
d one of 16, 32, 64, 128. o has the same shape and dtype; lse is float32
(B, H, N), the logsumexp L of each row of scores, in natural units.

Forward (steps Port and Compose). One program per (query tile, batch·head),
the same tile walk as the lesson's fused kernel: it loads its BLOCK_M query
rows once, streams the keys and values past them BLOCK_N rows at a time,
keeps a running max m, a running sum l and an accumulator acc per row in
registers, and writes O and L once. S and P never leave the chip. What the
Triton tutorial's fused attention does to make that fast, all exact in real
arithmetic:
  * exponentials in base 2 (exp2 is one instruction on NVIDIA GPUs), with
    log2(e) folded into the score scale: exp2(s·log2e/√d − m2) = e^(s/√d − m);
  * one division by l per row, at the end;
  * causal in two stages: key tiles wholly below the diagonal run with no
    mask at all, only the diagonal block computes one, and the tiles past
    it are never loaded; a full (non-causal) pass masks only a ragged last
    key tile;
  * block sizes, warps and software-pipeline stages autotuned per (N, d,
    dtype, causal) from a few configurations (CONFIGS below);
  * on Hopper (H100, H200) in half precision, the tiles come through tensor
    descriptors (the TMA copy engine) instead of pointer arithmetic. Each
    program makes descriptors for its own head, of shape (N, d), so rows past
    N read as zeros and stores past N are dropped by the hardware. On the
    H200 that saved up to 9% at d = 128 and stayed within 2% at d = 64
    (docs/BENCHMARKS.md). Triton 3.6 can warp-specialize a loop on Hopper
    too (tl.range(..., warp_specialize=True), one loop per kernel): on the
    H200 it was never faster by more than 0.5% here, and its run failed
    the benchmark's check at d = 128, so this kernel does not ask for it;
  * N a multiple of 128 (EVEN): every tile is whole, one loop, no mask.

Backward (step Backward), FlashAttention-2, Algorithm 2, in three launches:
  1. D = rowsum(dO ∘ O), one float32 per row (_backward_preprocess);
  2. dK and dV: one program per key tile, the query tiles streaming past;
     P is recomputed from the scores and the saved L, never stored;
  3. dQ: one program per query tile, the key tiles streaming past.
Each program writes only its own rows of the gradients, so no atomics are
needed; the price is that steps 2 and 3 both recompute S and dP. Or (the
backward cuDNN and FlashAttention-2 itself run) steps 2 and 3 in one kernel
that adds each tile's share of dQ into a float32 buffer with atomic adds:
the backward times both once per shape and keeps the faster (_backward).
With dS = P ∘ (dP − D): dV = Pᵀ dO, dK = dSᵀ Q / √d, dQ = dS K / √d.

Float32 inputs are multiplied in IEEE float32 (input_precision="ieee"), not
TF32, so the tests can hold the kernel to float32 accuracy.

Sources: Dao et al. 2022, FlashAttention, Algorithm 1 (tiles, m, l);
Dao 2023, FlashAttention-2, §3.1 (forward: one division at the end, causal
masks on the diagonal blocks only) and Algorithm 2 (backward, D, recomputed P);
Triton's tutorial 06, "Fused Attention" (exp2, two causal stages, autotuning,
tensor descriptors). Written for this project; run on an H200 with
Triton 3.6 (docs/BENCHMARKS.md).
"""
import math
import os

import torch
import triton
import triton.language as tl
import triton.testing

# A @triton.jit function may read a global only if it is a tl.constexpr; the host reads .value.
LOG2E = tl.constexpr(1.4426950408889634)  # log2(e): exp(x) = exp2(x * LOG2E)
LN2 = tl.constexpr(0.6931471805599453)    # ln(2): back from base 2 to natural units
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"


# --------------------------------------------------------------------------- forward

@triton.jit
def _tile(src, start, N, ROWS: tl.constexpr, D: tl.constexpr, TMA: tl.constexpr, BOUNDED: tl.constexpr):
    """Rows start .. start + ROWS − 1 of one head, a (ROWS, D) tile; rows at or past N read as 0.

    src is a tensor descriptor (TMA) or a pointer to the head's row 0. A
    descriptor knows N; a pointer load is masked only where BOUNDED says a
    row may lie past N.
    """
    if TMA:
        tile = src.load([start, 0])
    else:
        rows = start + tl.arange(0, ROWS)
        ptrs = src + rows[:, None] * D + tl.arange(0, D)[None, :]
        if BOUNDED:
            tile = tl.load(ptrs, mask=rows[:, None] < N, other=0.0)
        else:
            tile = tl.load(ptrs)
    return tile


@triton.jit
def _key_tiles(acc, l, m, q, k_src, v_src, rows, lo, hi, N, qk_scale,
               D: tl.constexpr, BLOCK_N: tl.constexpr, MASK: tl.constexpr,
               TMA: tl.constexpr, PRECISION: tl.constexpr):
    """Stream key tiles lo, lo + BLOCK_N, … < hi past the query tile; return the new (acc, l, m).

    MASK 0: every key in [lo, hi) is visible to every row, nothing to mask.
    MASK 1: the ragged last tile of a full pass: keys at or past N are hidden.
    MASK 2: the diagonal block of a causal pass: keys past a row are hidden.
    m is in base-2 units: the scores times qk_scale = log2(e)/√d.
    """
    for start in range(lo, hi, BLOCK_N):
        start = tl.multiple_of(start, BLOCK_N)
        k = _tile(k_src, start, N, BLOCK_N, D, TMA, MASK != 0)
        s = tl.dot(q, k.T, input_precision=PRECISION)          # (BLOCK_M, BLOCK_N) q·k, float32
        if MASK == 0:
            # The scale rides on the max and on one fused multiply-add per score.
            m_new = tl.maximum(m, tl.max(s, axis=1) * qk_scale)
            s = s * qk_scale - m_new[:, None]
        else:
            keys = start + tl.arange(0, BLOCK_N)
            if MASK == 1:
                visible = keys[None, :] < N
            else:
                visible = keys[None, :] <= rows[:, None]
            s = tl.where(visible, s * qk_scale, float("-inf"))
            m_new = tl.maximum(m, tl.max(s, axis=1))   # finite: each row sees a key by now
            s = s - m_new[:, None]
        p = tl.exp2(s)                                  # hidden keys give exp2(-inf) = 0
        alpha = tl.exp2(m - m_new)                      # 0 on the first tile, else <= 1
        l = l * alpha + tl.sum(p, axis=1)
        v = _tile(v_src, start, N, BLOCK_N, D, TMA, MASK != 0)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None], input_precision=PRECISION)
        m = m_new
    return acc, l, m


def _forward_configs():
    """The autotuner's candidates: BLOCK_M, BLOCK_N, warps and pipeline stages, pruned per d,
    dtype and N by _prune_forward. On the H200 (docs/BENCHMARKS.md) the fastest at N = 16,384
    were 64 × 64 with 4 warps at d = 64 and 128 × 64 with 4 warps at d = 128."""
    if INTERPRET:  # the interpreter would time every config by running it on the CPU: give it one
        return [triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4, num_stages=1)]
    half = [(bm, bn, w, s) for bm, bn, w in ((128, 64, 4), (128, 128, 8), (128, 64, 8), (64, 64, 4),
                                            (128, 32, 4)) for s in (2, 3, 4)]
    f32 = [(64, 32, 4, 2), (32, 32, 4, 2)]
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s) for bm, bn, w, s in half + f32]


SHARED_BYTES = 232_448  # workgroup memory (SRAM) a program may use on Hopper: 227 KiB


def _prune_forward(configs, named_args, **kwargs):
    """Half precision: the tensor-core shapes whose pipeline fits in SRAM (each stage holds a K and
    a V tile); float32: a tile that fits. One shape where tuning does not pay: d ≤ 32, or
    N < 1,024 (a few tiles, and a compile per shape)."""
    if INTERPRET:
        return configs
    d, half = kwargs["D"], named_args["Q"].dtype != torch.float32
    if not half:
        return [c for c in configs if c.kwargs["BLOCK_N"] == 32 and c.kwargs["BLOCK_M"] == (64 if d <= 64 else 32)]

    def fits(c):
        bm, bn = c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"]
        return c.num_stages * 2 * bn * d * 2 + bm * d * 2 <= SHARED_BYTES

    big = [c for c in configs if c.kwargs["BLOCK_M"] >= 64 and fits(c)]
    return big[:1] if d <= 32 or named_args["N"] < 1024 else big


def _rank(fn, quantiles):
    """How the autotuner times a candidate: 25 ms of runs after 5 ms of warm-up (enough to rank them)."""
    return triton.testing.do_bench(fn, warmup=5, rep=25, quantiles=quantiles)


@triton.autotune(configs=_forward_configs(), key=["N", "D", "CAUSAL"], do_bench=_rank,
                 prune_configs_by={"early_config_prune": _prune_forward})
@triton.jit(do_not_specialize=["N"])  # one binary for every N
def _flash_forward(Q, K, V, O, L,     # Q, K, V, O: (B·H, N, D) contiguous; L: (B·H, N) float32
                   N, qk_scale,       # sequence length, log2(e)/sqrt(D)
                   D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   CAUSAL: tl.constexpr, EVEN: tl.constexpr, TMA: tl.constexpr, PRECISION: tl.constexpr):
    tl.static_assert(BLOCK_M % BLOCK_N == 0)   # the diagonal block is whole key tiles
    tile = tl.program_id(0)
    if CAUSAL:  # the last query tiles have the most keys to see: start them first
        tile = tl.num_programs(0) - 1 - tile
    bh = tl.program_id(1)                      # which (batch, head)
    base = bh.to(tl.int64) * N * D             # int64: B·H·N·D can pass 2^31
    if TMA:
        q_src = tl.make_tensor_descriptor(Q + base, shape=[N, D], strides=[D, 1], block_shape=[BLOCK_M, D])
        k_src = tl.make_tensor_descriptor(K + base, shape=[N, D], strides=[D, 1], block_shape=[BLOCK_N, D])
        v_src = tl.make_tensor_descriptor(V + base, shape=[N, D], strides=[D, 1], block_shape=[BLOCK_N, D])
        o_dst = tl.make_tensor_descriptor(O + base, shape=[N, D], strides=[D, 1], block_shape=[BLOCK_M, D])
    else:
        q_src, k_src, v_src, o_dst = Q + base, K + base, V + base, O + base
    first = tile * BLOCK_M
    rows = first + tl.arange(0, BLOCK_M)       # (BLOCK_M,) query rows of this tile

    q = _tile(q_src, first, N, BLOCK_M, D, TMA, not EVEN)  # loaded once, kept on the chip
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)   # running max (base-2 units)
    l = tl.zeros([BLOCK_M], tl.float32)                 # running sum of exp2(s - m)
    acc = tl.zeros([BLOCK_M, D], tl.float32)            # running sum of exp2(s - m) * v

    if CAUSAL:
        # Stage 1: keys below `first` are visible to every row of this tile.
        acc, l, m = _key_tiles(acc, l, m, q, k_src, v_src, rows, 0, first, N, qk_scale,
                               D, BLOCK_N, 0, TMA, PRECISION)
        # Stage 2: the diagonal block; no key at or past first + BLOCK_M is visible.
        acc, l, m = _key_tiles(acc, l, m, q, k_src, v_src, rows, first, tl.minimum(N, first + BLOCK_M), N,
                               qk_scale, D, BLOCK_N, 2, TMA, PRECISION)
    elif EVEN:
        # N a multiple of 128 (and so of BLOCK_N): every key tile is whole, one loop, no mask.
        acc, l, m = _key_tiles(acc, l, m, q, k_src, v_src, rows, 0, N, N, qk_scale,
                               D, BLOCK_N, 0, TMA, PRECISION)
    else:
        whole = (N // BLOCK_N) * BLOCK_N       # the key tiles that lie wholly below N
        acc, l, m = _key_tiles(acc, l, m, q, k_src, v_src, rows, 0, whole, N, qk_scale,
                               D, BLOCK_N, 0, TMA, PRECISION)
        acc, l, m = _key_tiles(acc, l, m, q, k_src, v_src, rows, whole, N, N, qk_scale,
                               D, BLOCK_N, 1, TMA, PRECISION)

    o = (acc / l[:, None]).to(O.dtype.element_ty)
    if TMA:
        o_dst.store([first, 0], o)             # rows past N are dropped
    else:
        tl.store(o_dst + rows[:, None] * D + tl.arange(0, D)[None, :], o, mask=rows[:, None] < N)
    # logsumexp in natural units: ln(sum exp(s)) = (m + log2 l) * ln 2
    tl.store(L + bh * N + rows, (m + tl.log2(l)) * LN2, mask=rows < N)


# --------------------------------------------------------------------------- backward

@triton.jit(do_not_specialize=["N"])
def _backward_preprocess(O, DO, Delta, N, D: tl.constexpr, BLOCK_M: tl.constexpr):
    """D = rowsum(dO ∘ O) for BLOCK_M rows of one head, in float32 (FlashAttention-2, Algorithm 2, line 4)."""
    bh = tl.program_id(1)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    at = bh.to(tl.int64) * N * D + rows[:, None] * D + tl.arange(0, D)[None, :]
    o = tl.load(O + at, mask=rows[:, None] < N, other=0.0).to(tl.float32)
    do = tl.load(DO + at, mask=rows[:, None] < N, other=0.0).to(tl.float32)
    tl.store(Delta + bh * N + rows, tl.sum(o * do, axis=1), mask=rows < N)


@triton.jit
def _query_tiles(dk, dv, k, v, Q, DO, L, Delta, DQ, keys, lo, hi, N, qk_scale, sm_scale,
                 D: tl.constexpr, BLOCK_M: tl.constexpr, MASK: tl.constexpr, PRECISION: tl.constexpr,
                 DQ_ATOMIC: tl.constexpr):
    """Stream query tiles lo, lo + BLOCK_M, … < hi past one key tile; return the new (dk, dv).

    Everything is transposed (keys along rows), so each product lands in
    dK and dV without a transpose. MASK 0: nothing to hide; 1: keys past N
    (a full pass with DQ_ATOMIC); 2: the diagonal of a causal pass.
    Rows past N read q = dO = 0 and L = +inf, so their P is exactly 0.
    DQ_ATOMIC: also add this tile's share of dQ, dS K / √d, into DQ (float32)
    with atomic adds, since other programs add theirs to the same rows.
    """
    for start in range(lo, hi, BLOCK_M):
        start = tl.multiple_of(start, BLOCK_M)
        rows = start + tl.arange(0, BLOCK_M)
        at = rows[:, None] * D + tl.arange(0, D)[None, :]
        q = tl.load(Q + at, mask=rows[:, None] < N, other=0.0)
        l2 = tl.load(L + rows, mask=rows < N, other=float("inf")) * LOG2E   # L in base 2
        s_t = tl.dot(k, q.T, input_precision=PRECISION)                      # (BLOCK_N, BLOCK_M) = Sᵀ·√d
        p_t = tl.exp2(s_t * qk_scale - l2[None, :])                         # Pᵀ, recomputed
        if MASK == 1:  # a key past N reads k = 0, so P = exp2(-L), inf where L << 0 (see _key_tiles_dq)
            p_t = tl.where(keys[:, None] < N, p_t, 0.0)
        if MASK == 2:
            p_t = tl.where(rows[None, :] >= keys[:, None], p_t, 0.0)
        do = tl.load(DO + at, mask=rows[:, None] < N, other=0.0)
        dv = tl.dot(p_t.to(do.dtype), do, dv, input_precision=PRECISION)   # dV += Pᵀ dO
        dp_t = tl.dot(v, do.T, input_precision=PRECISION)                    # dPᵀ = V dOᵀ
        ds_t = p_t * dp_t                                                   # dSᵀ = Pᵀ ∘ dPᵀ
        dk = tl.dot(ds_t.to(q.dtype), q, dk, input_precision=PRECISION)     # dK += dSᵀ Q  (· 1/√d later)
        if DQ_ATOMIC:  # FlashAttention-2's own backward (Algorithm 2, line 21): dQ += dS K
            dq = tl.dot(tl.trans(ds_t.to(k.dtype)), k, input_precision=PRECISION) * sm_scale
            tl.atomic_add(DQ + at, dq, mask=rows[:, None] < N, sem="relaxed")
    return dk, dv


@triton.jit(do_not_specialize=["N"])
def _backward_dkdv(Q, K, V, DO, L, Delta, DK, DV, DQ, N, qk_scale, sm_scale,
                   D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   CAUSAL: tl.constexpr, PRECISION: tl.constexpr, DQ_ATOMIC: tl.constexpr):
    """dK and dV for BLOCK_N keys of one head; the query tiles that see them stream past.
    With DQ_ATOMIC, dQ too, added up over the programs in DQ (float32, zeroed first)."""
    tl.static_assert(BLOCK_N % BLOCK_M == 0)   # the diagonal is whole query tiles
    tile, bh = tl.program_id(0), tl.program_id(1)
    base = bh.to(tl.int64) * N * D
    Q, K, V, DO, DK, DV, DQ = Q + base, K + base, V + base, DO + base, DK + base, DV + base, DQ + base
    L, Delta = L + bh * N, Delta + bh * N
    first = tile * BLOCK_N
    keys = first + tl.arange(0, BLOCK_N)
    at = keys[:, None] * D + tl.arange(0, D)[None, :]
    k = tl.load(K + at, mask=keys[:, None] < N, other=0.0)   # this program's keys and values stay
    v = tl.load(V + at, mask=keys[:, None] < N, other=0.0)   # on the chip while the queries pass
    dk = tl.zeros([BLOCK_N, D], tl.float32)
    dv = tl.zeros([BLOCK_N, D], tl.float32)
    if CAUSAL:
        # Rows before `first` see none of these keys; rows in [first, first + BLOCK_N)
        # see some (the diagonal); rows from first + BLOCK_N on see them all.
        dk, dv = _query_tiles(dk, dv, k, v, Q, DO, L, Delta, DQ, keys, first, first + BLOCK_N, N, qk_scale,
                              sm_scale, D, BLOCK_M, 2, PRECISION, DQ_ATOMIC)
        dk, dv = _query_tiles(dk, dv, k, v, Q, DO, L, Delta, DQ, keys, first + BLOCK_N, N, N, qk_scale,
                              sm_scale, D, BLOCK_M, 0, PRECISION, DQ_ATOMIC)
    else:
        dk, dv = _query_tiles(dk, dv, k, v, Q, DO, L, Delta, DQ, keys, 0, N, N, qk_scale,
                              sm_scale, D, BLOCK_M, 1 if DQ_ATOMIC else 0, PRECISION, DQ_ATOMIC)
    tl.store(DK + at, (dk * sm_scale).to(DK.dtype.element_ty), mask=keys[:, None] < N)
    tl.store(DV + at, dv.to(DV.dtype.element_ty), mask=keys[:, None] < N)


@triton.jit
def _key_tiles_dq(dq, q, do, l2, delta, K, V, rows, lo, hi, N, qk_scale,
                  D: tl.constexpr, BLOCK_N: tl.constexpr, MASK: tl.constexpr, PRECISION: tl.constexpr):
    """Stream key tiles lo, lo + BLOCK_N, … < hi past one query tile; return the new dq.

    MASK as in the forward's _key_tiles (0 none, 1 keys past N, 2 causal).
    Keys past N read k = v = 0, but that is not enough: their score is 0, so
    their P is exp2(−L), which overflows to inf for a row whose scores are all
    far below 0, and inf · 0 is NaN in dS K. So they are masked too.
    """
    for start in range(lo, hi, BLOCK_N):
        start = tl.multiple_of(start, BLOCK_N)
        keys = start + tl.arange(0, BLOCK_N)
        at = keys[:, None] * D + tl.arange(0, D)[None, :]
        k = tl.load(K + at, mask=keys[:, None] < N, other=0.0)
        v = tl.load(V + at, mask=keys[:, None] < N, other=0.0)
        s = tl.dot(q, k.T, input_precision=PRECISION)
        p = tl.exp2(s * qk_scale - l2[:, None])                              # P, recomputed
        if MASK == 1:
            p = tl.where(keys[None, :] < N, p, 0.0)
        if MASK == 2:
            p = tl.where(keys[None, :] <= rows[:, None], p, 0.0)
        dp = tl.dot(do, v.T, input_precision=PRECISION)                      # dP = dO Vᵀ
        ds = p * dp                                                         # dS = P ∘ dP
        dq = tl.dot(ds.to(k.dtype), k, dq, input_precision=PRECISION)       # dQ += dS K  (· 1/√d later)
    return dq


@triton.jit(do_not_specialize=["N"])
def _backward_dq(Q, K, V, DO, L, Delta, DQ, N, qk_scale, sm_scale,
                 D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 CAUSAL: tl.constexpr, PRECISION: tl.constexpr):
    """dQ for BLOCK_M query rows of one head; the key tiles they see stream past."""
    tl.static_assert(BLOCK_M % BLOCK_N == 0)
    tile, bh = tl.program_id(0), tl.program_id(1)
    if CAUSAL:  # the last query tiles see the most keys: start them first
        tile = tl.num_programs(0) - 1 - tile
    base = bh.to(tl.int64) * N * D
    first = tile * BLOCK_M
    rows = first + tl.arange(0, BLOCK_M)
    at = base + rows[:, None] * D + tl.arange(0, D)[None, :]
    q = tl.load(Q + at, mask=rows[:, None] < N, other=0.0)
    do = tl.load(DO + at, mask=rows[:, None] < N, other=0.0)
    l2 = tl.load(L + bh * N + rows, mask=rows < N, other=float("inf")) * LOG2E
    delta = tl.load(Delta + bh * N + rows, mask=rows < N, other=0.0)
    dq = tl.zeros([BLOCK_M, D], tl.float32)
    K, V = K + base, V + base
    if CAUSAL:  # as in the forward: no mask below the diagonal block, the causal mask on it
        dq = _key_tiles_dq(dq, q, do, l2, delta, K, V, rows, 0, first, N, qk_scale, D, BLOCK_N, 0, PRECISION)
        dq = _key_tiles_dq(dq, q, do, l2, delta, K, V, rows, first, tl.minimum(N, first + BLOCK_M), N, qk_scale,
                           D, BLOCK_N, 2, PRECISION)
    else:
        whole = (N // BLOCK_N) * BLOCK_N
        dq = _key_tiles_dq(dq, q, do, l2, delta, K, V, rows, 0, whole, N, qk_scale, D, BLOCK_N, 0, PRECISION)
        dq = _key_tiles_dq(dq, q, do, l2, delta, K, V, rows, whole, N, N, qk_scale, D, BLOCK_N, 1, PRECISION)
    tl.store(DQ + at, (dq * sm_scale).to(DQ.dtype.element_ty), mask=rows[:, None] < N)


def _backward_configs(fixed: str):
    """Candidates for a backward kernel: `fixed` names the block a program owns ("BLOCK_N" for
    dK/dV, "BLOCK_M" for dQ), the other block streams past; pruned per d by _prune_backward."""
    if INTERPRET:
        return [triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4, num_stages=1)]
    shapes = [(own, step, w, s) for own, step, w in ((128, 32, 8), (128, 64, 8), (64, 32, 4), (64, 64, 4),
                                                    (128, 32, 4)) for s in (2, 3)]
    shapes += [(32, 32, 4, 2)]                                                                  # float32
    other = "BLOCK_M" if fixed == "BLOCK_N" else "BLOCK_N"
    return [triton.Config({fixed: own, other: step}, num_warps=w, num_stages=s) for own, step, w, s in shapes]


def _prune_backward(configs, named_args, **kwargs):
    """Float32: the small tile. Half precision: a program holds two (rows, d) float32 tiles in
    registers (dK and dV, or dQ with Q and dO), so 128 rows take 8 warps, except at d = 64 where
    the autotuner may also try 4 (they spill registers there too, at d = 128 far more; the
    compiler's report: docs/BENCHMARKS.md); d ≤ 32 and N < 1,024 take one shape."""
    if INTERPRET:
        return configs
    d, half = kwargs["D"], named_args["Q"].dtype != torch.float32
    if not half:
        return [c for c in configs if max(c.kwargs.values()) == 32]
    own = [c for c in configs if max(c.kwargs.values()) > 32]
    if d <= 32 or kwargs["N"] < 1024:
        return [c for c in own if (max(c.kwargs.values()), c.num_warps, c.num_stages) == (64, 4, 3)][:1]
    if d == 128:
        return [c for c in own if c.num_warps == 8 or max(c.kwargs.values()) == 64][:-2]  # not 64 × 64
    return own


_dkdv = triton.autotune(configs=_backward_configs("BLOCK_N"), key=["N", "D", "CAUSAL"], do_bench=_rank,
                        prune_configs_by={"early_config_prune": _prune_backward})(_backward_dkdv)
# The same kernel with DQ_ATOMIC: the autotuner zeroes DQ before each trial, since the trials add to it.
_dkdv_dq = triton.autotune(configs=_backward_configs("BLOCK_N"), key=["N", "D", "CAUSAL"], do_bench=_rank,
                           reset_to_zero=["DQ"], prune_configs_by={"early_config_prune": _prune_backward}
                           )(_backward_dkdv)
_dq = triton.autotune(configs=_backward_configs("BLOCK_M"), key=["N", "D", "CAUSAL"], do_bench=_rank,
                      prune_configs_by={"early_config_prune": _prune_backward})(_backward_dq)


# --------------------------------------------------------------------------- host

def _scratch(size: int, alignment: int, stream):
    """Global memory for the tensor descriptors each program makes (triton.set_allocator)."""
    return torch.empty(size, dtype=torch.int8, device="cuda")


def _use_tma(q: torch.Tensor) -> bool:
    """Tensor descriptors where the copy engine exists (compute capability 9.0 and up) and in half precision."""
    if q.dtype == torch.float32 or q.device.type != "cuda":
        return False
    return torch.cuda.get_device_capability(q.device)[0] >= 9


def _check(q, k, v):
    if q.dim() != 4 or q.shape != k.shape or q.shape != v.shape:
        raise ValueError(f"q, k and v must share one (B, H, N, d) shape, got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")
    if q.dtype not in (torch.float32, torch.float16, torch.bfloat16) or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(f"float32, float16 or bfloat16 inputs of one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if q.shape[-1] not in (16, 32, 64, 128):
        raise ValueError(f"d must be 16, 32, 64 or 128, got {q.shape[-1]}")


def _forward(q, k, v, causal: bool, tma=None):
    """(o, lse) for contiguous (B, H, N, d) q, k, v: the forward kernel's launch."""
    b, h, n, d = q.shape
    o = torch.empty_like(q)
    lse = torch.empty((b, h, n), device=q.device, dtype=torch.float32)
    if o.numel() == 0:
        return o, lse
    tma = _use_tma(q) if tma is None else tma
    if tma and not INTERPRET:
        triton.set_allocator(_scratch)

    def grid(meta):
        return (triton.cdiv(n, meta["BLOCK_M"]), b * h)

    _flash_forward[grid](q, k, v, o, lse, n, LOG2E.value / math.sqrt(d), D=d, CAUSAL=bool(causal),
                         EVEN=n % 128 == 0, TMA=bool(tma), PRECISION="ieee" if q.dtype == torch.float32 else "tf32")
    return o, lse


#: The backward's two ways timed once per (N, d, causal, dtype): {key: {"two kernels": ms, "atomic dQ": ms}}.
BACKWARD_TIMES = {}


def _backward(do, q, k, v, o, lse, causal: bool, dq_atomic=None):
    """(dq, dk, dv) from the forward's saved q, k, v, o, lse and the output gradient do.

    dq_atomic=False: the D pre-pass, then dK/dV over key tiles and dQ over query tiles, each
    program writing only its own rows (no atomics; S and dP are computed twice).
    dq_atomic=True: the D pre-pass, then one kernel over key tiles that also adds each query
    tile's share of dQ into a float32 (B, H, N, d) buffer with atomic adds (S and dP once, as
    FlashAttention-2's Algorithm 2 and cuDNN do), then that buffer rounded to q's dtype.
    dq_atomic=None: the faster of the two, timed once per shape in half precision from
    N = 1,024 on (the autotuner's idea one level up; BACKWARD_TIMES keeps the times),
    else the two kernels.
    """
    if dq_atomic is None:
        key = (q.shape[2], q.shape[3], bool(causal), str(q.dtype).removeprefix("torch."))
        if INTERPRET or q.dtype == torch.float32 or q.shape[2] < 1024:
            dq_atomic = False
        else:
            if key not in BACKWARD_TIMES:
                BACKWARD_TIMES[key] = {name: _rank(lambda a=atomic: _backward(do, q, k, v, o, lse, causal, a), None)
                                       for name, atomic in (("two kernels", False), ("atomic dQ", True))}
            dq_atomic = BACKWARD_TIMES[key]["atomic dQ"] < BACKWARD_TIMES[key]["two kernels"]
    b, h, n, d = q.shape
    do = do.contiguous()
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    if q.numel() == 0:
        return dq, dk, dv
    delta = torch.empty_like(lse)
    _backward_preprocess[(triton.cdiv(n, 64), b * h)](o, do, delta, n, D=d, BLOCK_M=64)
    args = dict(N=n, qk_scale=LOG2E.value / math.sqrt(d), sm_scale=1 / math.sqrt(d), D=d, CAUSAL=bool(causal),
                PRECISION="ieee" if q.dtype == torch.float32 else "tf32")
    if dq_atomic:
        dq32 = torch.zeros(q.shape, device=q.device, dtype=torch.float32)
        _dkdv_dq[lambda meta: (triton.cdiv(n, meta["BLOCK_N"]), b * h)](q, k, v, do, lse, delta, dk, dv, dq32,
                                                                        DQ_ATOMIC=True, **args)
        return dq32.to(q.dtype), dk, dv
    _dkdv[lambda meta: (triton.cdiv(n, meta["BLOCK_N"]), b * h)](q, k, v, do, lse, delta, dk, dv, dq,
                                                                 DQ_ATOMIC=False, **args)
    _dq[lambda meta: (triton.cdiv(n, meta["BLOCK_M"]), b * h)](q, k, v, do, lse, delta, dq, **args)
    return dq, dk, dv


class FlashAttention(torch.autograd.Function):
    """softmax(q kᵀ/√d) v with our kernels in both directions. The forward saves
    q, k, v, O and the logsumexp L (O(N·d) per head), never P (N×N)."""

    @staticmethod
    def forward(ctx, q, k, v, causal, tma=None, dq_atomic=None):
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        o, lse = _forward(q, k, v, causal, tma)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal, ctx.dq_atomic = causal, dq_atomic
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = _backward(do, q, k, v, o, lse, ctx.causal, ctx.dq_atomic)
        return dq, dk, dv, None, None, None  # no gradient for causal, tma or dq_atomic


def flash_attention(q, k, v, causal=False, return_lse=False, tma=None, dq_atomic=None):
    """Exact attention softmax(q kᵀ/√d) v, fused, for (B, H, N, d) CUDA tensors.

    float32, float16 or bfloat16; d ∈ {16, 32, 64, 128}. With causal=True
    row i sees keys 0..i. Returns o (same shape and dtype), differentiable
    in q, k and v through FlashAttention.backward. With return_lse=True it
    returns (o, lse), lse the float32 (B, H, N) logsumexp of each row of
    scores in natural units, and records no gradient. tma: None picks
    tensor descriptors for the forward on Hopper and newer in half
    precision; True or False forces the choice (benchmarks, tests).
    dq_atomic: True takes the backward's dQ from atomic adds in the dK/dV
    kernel, False from a kernel of its own, None the faster (see _backward).
    Raises ValueError for other shapes or dtypes.
    """
    _check(q, k, v)
    if return_lse:
        with torch.no_grad():
            return _forward(q.contiguous(), k.contiguous(), v.contiguous(), causal, tma)
    return FlashAttention.apply(q, k, v, bool(causal), tma, dq_atomic)
