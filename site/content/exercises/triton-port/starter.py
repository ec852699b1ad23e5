"""FlashAttention in Triton, forward and backward: your starting point for exercise 3.

    flash_attention(q, k, v, causal=False) -> o          (differentiable)

q, k, v: CUDA tensors of shape (B, H, N, d), float32, float16 or bfloat16,
d one of 16, 32, 64, 128. o has the same shape and dtype.

The loads, the tile loops, the stores and the host code are in place. What
is missing is what the lesson and exercises 1 and 2 were about:

  Port      the online softmax update inside the forward loop (m, l, acc),
            and the division by l at the end;   (tests: -k "forward and not causal")
  Compose   causal attention (mask the scores, stop at the diagonal), then
            half precision and the benchmark;   (tests: -k forward)
  Backward  D = rowsum(dO ∘ O), then dK, dV and dQ from P recomputed with
            the saved logsumexp L, never stored. (tests: all)

Run  python3 -m pytest test_flash_triton.py -q  after each change.
"""
import math

import torch
import triton
import triton.language as tl

# A @triton.jit function may read a global only if it is a tl.constexpr; the host reads .value.
LOG2E = tl.constexpr(1.4426950408889634)  # log2(e): exp(x) = exp2(x * LOG2E)
LN2 = tl.constexpr(0.6931471805599453)    # ln(2): back from base 2 to natural units


@triton.jit
def _flash_forward(Q, K, V, O, L,     # Q, K, V, O: (B·H, N, D) contiguous; L: (B·H, N) float32
                   N, qk_scale,       # sequence length, log2(e)/sqrt(D)
                   D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   CAUSAL: tl.constexpr, PRECISION: tl.constexpr):
    tile = tl.program_id(0)                    # which query tile
    bh = tl.program_id(1)                      # which (batch, head)
    base = bh.to(tl.int64) * N * D             # this head's row 0
    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)   # (BLOCK_M,) query rows of this tile
    cols = tl.arange(0, BLOCK_N)                    # (BLOCK_N,) key offsets within a key tile
    dims = tl.arange(0, D)                          # (D,)

    # The query tile: loaded once, kept on the chip. Rows past N read zeros.
    q = tl.load(Q + base + rows[:, None] * D + dims[None, :], mask=rows[:, None] < N, other=0.0)

    m = tl.full([BLOCK_M], float("-inf"), tl.float32)   # running max (base-2 units)
    l = tl.zeros([BLOCK_M], tl.float32)                 # running sum of exp2(s - m)
    acc = tl.zeros([BLOCK_M, D], tl.float32)            # running sum of exp2(s - m) * v

    end = N  # TODO (Compose): with CAUSAL, no key at or past (tile + 1) * BLOCK_M is visible to this tile
    for start in range(0, end, BLOCK_N):
        keys = start + cols
        # K tile and V tile, (BLOCK_N, D) each; keys past N read zeros.
        k = tl.load(K + base + keys[:, None] * D + dims[None, :], mask=keys[:, None] < N, other=0.0)
        v = tl.load(V + base + keys[:, None] * D + dims[None, :], mask=keys[:, None] < N, other=0.0)  # noqa: F841
        s = tl.dot(q, k.T, input_precision=PRECISION) * qk_scale  # (BLOCK_M, BLOCK_N) float32, base-2 units
        s = tl.where(keys[None, :] < N, s, float("-inf"))        # keys past N are not there
        # TODO (Compose): with CAUSAL, also give -inf to every key past its row (keys > rows).

        # TODO (Port): the online softmax update, one key tile at a time, in base 2:
        #   m_new = the larger of m and this tile's row maxima      (tl.maximum, tl.max(..., axis=1))
        #   alpha = exp2(m - m_new): what the old l and acc are worth now
        #   p     = exp2(s - m_new[:, None])
        #   l     = l * alpha + the row sums of p
        #   acc   = acc * alpha[:, None] + p @ v     (tl.dot(p.to(v.dtype), v, input_precision=PRECISION))
        #   m     = m_new

    o = acc  # TODO (Port): divide each row by its l
    tl.store(O + base + rows[:, None] * D + dims[None, :], o.to(O.dtype.element_ty), mask=rows[:, None] < N)
    # logsumexp in natural units: ln(sum exp(s)) = (m + log2 l) * ln 2. The backward pass needs it.
    tl.store(L + bh * N + rows, (m + tl.log2(l)) * LN2, mask=rows < N)


@triton.jit
def _backward_preprocess(O, DO, Delta, N, D: tl.constexpr, BLOCK_M: tl.constexpr):
    """D for BLOCK_M rows of one head, one float32 per row (FlashAttention-2, Algorithm 2, line 4)."""
    bh = tl.program_id(1)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    at = bh.to(tl.int64) * N * D + rows[:, None] * D + tl.arange(0, D)[None, :]
    o = tl.load(O + at, mask=rows[:, None] < N, other=0.0).to(tl.float32)    # noqa: F841
    do = tl.load(DO + at, mask=rows[:, None] < N, other=0.0).to(tl.float32)  # noqa: F841
    delta = tl.zeros([BLOCK_M], tl.float32)  # TODO (Backward): D = rowsum(dO ∘ O), each row's sum of do * o
    tl.store(Delta + bh * N + rows, delta, mask=rows < N)


@triton.jit
def _backward_dkdv(Q, K, V, DO, L, Delta, DK, DV,   # (B·H, N, D) contiguous; L, Delta: (B·H, N) float32
                   N, qk_scale, sm_scale,          # sequence length, log2(e)/sqrt(D), 1/sqrt(D)
                   D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   CAUSAL: tl.constexpr, PRECISION: tl.constexpr):
    """dK and dV for BLOCK_N keys of one head; the query tiles stream past."""
    tile, bh = tl.program_id(0), tl.program_id(1)
    base = bh.to(tl.int64) * N * D
    keys = tile * BLOCK_N + tl.arange(0, BLOCK_N)
    dims = tl.arange(0, D)
    k = tl.load(K + base + keys[:, None] * D + dims[None, :], mask=keys[:, None] < N, other=0.0)
    v = tl.load(V + base + keys[:, None] * D + dims[None, :], mask=keys[:, None] < N, other=0.0)  # noqa: F841
    dk = tl.zeros([BLOCK_N, D], tl.float32)
    dv = tl.zeros([BLOCK_N, D], tl.float32)
    for start in range(0, N, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        q = tl.load(Q + base + rows[:, None] * D + dims[None, :], mask=rows[:, None] < N, other=0.0)
        do = tl.load(DO + base + rows[:, None] * D + dims[None, :], mask=rows[:, None] < N, other=0.0)  # noqa: F841
        # L in base 2; rows past N read +inf, so exp2(s - L) is exactly 0 for them.
        l2 = tl.load(L + bh * N + rows, mask=rows < N, other=float("inf")) * LOG2E  # noqa: F841
        delta = tl.load(Delta + bh * N + rows, mask=rows < N, other=0.0)            # noqa: F841
        s_t = tl.dot(k, q.T, input_precision=PRECISION) * qk_scale  # noqa: F841  (BLOCK_N, BLOCK_M): Sᵀ, base 2
        # TODO (Backward): the same tile of P, transposed (keys along rows), recomputed:
        #   p_t  = exp2(s_t - l2[None, :]); with CAUSAL, 0 where a row comes before its key
        #   dv  += p_t @ do                       (tl.dot(p_t.to(do.dtype), do, dv, input_precision=PRECISION))
        #   dp_t = v @ do.T                        dPᵀ = V dOᵀ
        #   ds_t = p_t * (dp_t - delta[None, :])   dSᵀ = Pᵀ ∘ (dPᵀ − D)
        #   dk  += ds_t @ q                        (cast ds_t to q.dtype)
    tl.store(DK + base + keys[:, None] * D + dims[None, :], (dk * sm_scale).to(DK.dtype.element_ty),
             mask=keys[:, None] < N)
    tl.store(DV + base + keys[:, None] * D + dims[None, :], dv.to(DV.dtype.element_ty), mask=keys[:, None] < N)


@triton.jit
def _backward_dq(Q, K, V, DO, L, Delta, DQ, N, qk_scale, sm_scale,
                 D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 CAUSAL: tl.constexpr, PRECISION: tl.constexpr):
    """dQ for BLOCK_M query rows of one head; the key tiles stream past."""
    tile, bh = tl.program_id(0), tl.program_id(1)
    base = bh.to(tl.int64) * N * D
    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, D)
    q = tl.load(Q + base + rows[:, None] * D + dims[None, :], mask=rows[:, None] < N, other=0.0)
    do = tl.load(DO + base + rows[:, None] * D + dims[None, :], mask=rows[:, None] < N, other=0.0)  # noqa: F841
    l2 = tl.load(L + bh * N + rows, mask=rows < N, other=float("inf")) * LOG2E  # noqa: F841
    delta = tl.load(Delta + bh * N + rows, mask=rows < N, other=0.0)            # noqa: F841
    dq = tl.zeros([BLOCK_M, D], tl.float32)
    for start in range(0, N, BLOCK_N):
        keys = start + tl.arange(0, BLOCK_N)
        # keys past N read k = v = 0; their score is 0, and their P must be made 0 (below)
        k = tl.load(K + base + keys[:, None] * D + dims[None, :], mask=keys[:, None] < N, other=0.0)
        v = tl.load(V + base + keys[:, None] * D + dims[None, :], mask=keys[:, None] < N, other=0.0)  # noqa: F841
        s = tl.dot(q, k.T, input_precision=PRECISION) * qk_scale  # noqa: F841
        # TODO (Backward): p = exp2(s - l2[:, None]), then 0 for keys past N (their exp2(-L) can
        #   overflow, and inf * 0 is NaN) and, with CAUSAL, for keys past the row;
        #   dp = do @ v.T;  ds = p * (dp - delta[:, None]);  dq += ds @ k
    tl.store(DQ + base + rows[:, None] * D + dims[None, :], (dq * sm_scale).to(DQ.dtype.element_ty),
             mask=rows[:, None] < N)


def _blocks(d: int, dtype: torch.dtype) -> tuple:
    """(BLOCK_M, BLOCK_N, num_warps, num_stages) of the forward, to fit an H100/H200's shared memory."""
    if dtype != torch.float32:
        return (128, 64, 4 if d <= 64 else 8, 3)
    return (64, 32, 4, 2) if d <= 64 else (32, 32, 4, 2)


def _precision(dtype: torch.dtype) -> str:
    return "ieee" if dtype == torch.float32 else "tf32"  # tf32 is ignored for half-precision inputs


def _forward(q, k, v, causal: bool):
    """(o, lse) for contiguous (B, H, N, d) q, k, v."""
    b, h, n, d = q.shape
    o = torch.empty_like(q)
    lse = torch.empty((b, h, n), device=q.device, dtype=torch.float32)
    if o.numel() == 0:
        return o, lse
    bm, bn, warps, stages = _blocks(d, q.dtype)
    _flash_forward[(triton.cdiv(n, bm), b * h)](q, k, v, o, lse, n, LOG2E.value / math.sqrt(d),
                                                D=d, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=bool(causal),
                                                PRECISION=_precision(q.dtype), num_warps=warps, num_stages=stages)
    return o, lse


def _backward(do, q, k, v, o, lse, causal: bool):
    """(dq, dk, dv) from the forward's saved tensors and the output gradient do."""
    b, h, n, d = q.shape
    do = do.contiguous()
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    if q.numel() == 0:
        return dq, dk, dv
    delta = torch.empty_like(lse)
    _backward_preprocess[(triton.cdiv(n, 64), b * h)](o, do, delta, n, D=d, BLOCK_M=64)
    block = 32 if q.dtype == torch.float32 else 64
    args = dict(N=n, qk_scale=LOG2E.value / math.sqrt(d), sm_scale=1 / math.sqrt(d), D=d, BLOCK_M=block, BLOCK_N=block,
                CAUSAL=bool(causal), PRECISION=_precision(q.dtype), num_warps=4, num_stages=2)
    _backward_dkdv[(triton.cdiv(n, block), b * h)](q, k, v, do, lse, delta, dk, dv, **args)
    _backward_dq[(triton.cdiv(n, block), b * h)](q, k, v, do, lse, delta, dq, **args)
    return dq, dk, dv


class FlashAttention(torch.autograd.Function):
    """Our kernels in both directions. The forward saves q, k, v, O and L, never P."""

    @staticmethod
    def forward(ctx, q, k, v, causal):
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        o, lse = _forward(q, k, v, causal)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal = causal
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = _backward(do, q, k, v, o, lse, ctx.causal)
        return dq, dk, dv, None  # no gradient for `causal`


def flash_attention(q, k, v, causal=False, return_lse=False):
    """Exact attention softmax(q kᵀ/√d) v, fused, for (B, H, N, d) CUDA tensors.

    float32, float16 or bfloat16; d ∈ {16, 32, 64, 128}. With causal=True
    row i sees keys 0..i. Returns o (same shape and dtype), differentiable
    in q, k and v; with return_lse=True, (o, lse) with lse the float32
    (B, H, N) logsumexp per row, and no gradient.
    Raises ValueError for other shapes or dtypes.
    """
    if q.dim() != 4 or q.shape != k.shape or q.shape != v.shape:
        raise ValueError(f"q, k and v must share one (B, H, N, d) shape, got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")
    if q.dtype not in (torch.float32, torch.float16, torch.bfloat16) or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(f"float32, float16 or bfloat16 inputs of one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if q.shape[-1] not in (16, 32, 64, 128):
        raise ValueError(f"d must be 16, 32, 64 or 128, got {q.shape[-1]}")
    if return_lse:
        with torch.no_grad():
            return _forward(q.contiguous(), k.contiguous(), v.contiguous(), causal)
    return FlashAttention.apply(q, k, v, bool(causal))
