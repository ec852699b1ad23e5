"""FlashAttention forward in Triton: your starting point for exercise 3.

    flash_attention(q, k, v, causal=False) -> o

q, k, v: CUDA tensors of shape (B, H, N, d), float32 or float16, d one of
16, 32, 64, 128. o has the same shape and dtype.

The loads, the key-tile loop and the store are in place. What is missing is
what the lesson and exercise 1 were about:

  Port     the online softmax update inside the loop (m, l, acc), and the
           division by l at the end;                        (tests: -k "not causal")
  Compose  causal attention (mask the scores, stop at the diagonal), then
           float16 and the benchmark.                       (tests: all)

Run  python3 -m pytest test_flash_triton.py -q  after each change.
"""
import math

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634  # log2(e): exp(x) = exp2(x * LOG2E)


@triton.jit
def _flash_forward(Q, K, V, O, L,              # pointers; Q, K, V, O are (B, H, N, D), L is (B, H, N)
                   stride_b, stride_h, stride_n,  # element strides of Q, K, V and O (the last is 1)
                   H, N, qk_scale,             # heads, sequence length, log2(e)/sqrt(D)
                   D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   CAUSAL: tl.constexpr, PRECISION: tl.constexpr):
    tile = tl.program_id(0)                    # which query tile
    bh = tl.program_id(1)                      # which (batch, head)
    base = (bh // H) * stride_b + (bh % H) * stride_h
    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)   # (BLOCK_M,) query rows of this tile
    cols = tl.arange(0, BLOCK_N)                    # (BLOCK_N,) key offsets within a key tile
    dims = tl.arange(0, D)                          # (D,)

    # The query tile: loaded once, kept in registers. Rows past N read zeros.
    q = tl.load(Q + base + rows[:, None] * stride_n + dims[None, :], mask=rows[:, None] < N, other=0.0)

    m = tl.full([BLOCK_M], float("-inf"), tl.float32)   # running max (base-2 units)
    l = tl.zeros([BLOCK_M], tl.float32)                 # running sum of exp2(s - m)
    acc = tl.zeros([BLOCK_M, D], tl.float32)            # running sum of exp2(s - m) * v

    end = N  # TODO (Compose): with CAUSAL, no key at or past (tile + 1) * BLOCK_M is visible to this tile
    for start in range(0, end, BLOCK_N):
        keys = start + cols
        # K^T tile (D, BLOCK_N) and V tile (BLOCK_N, D); keys past N read zeros.
        kt = tl.load(K + base + keys[None, :] * stride_n + dims[:, None], mask=keys[None, :] < N, other=0.0)
        v = tl.load(V + base + keys[:, None] * stride_n + dims[None, :], mask=keys[:, None] < N, other=0.0)  # noqa: F841
        s = tl.dot(q, kt, input_precision=PRECISION) * qk_scale  # (BLOCK_M, BLOCK_N) float32, base-2 units
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
    tl.store(O + base + rows[:, None] * stride_n + dims[None, :], o.to(O.dtype.element_ty),
             mask=rows[:, None] < N)
    # logsumexp in natural units: ln(sum exp(s)) = (m + log2 l) * ln 2
    tl.store(L + bh * N + rows, (m + tl.log2(l)) * 0.6931471805599453, mask=rows < N)


def _blocks(d: int, dtype: torch.dtype) -> tuple:
    """(BLOCK_M, BLOCK_N, num_warps, num_stages) that fit an H100/H200's shared memory."""
    if dtype == torch.float16:
        return (128, 64, 4 if d <= 64 else 8, 3)
    return (64, 32, 4, 2) if d <= 64 else (32, 32, 4, 2)


def flash_attention(q, k, v, causal=False, return_lse=False, block_m=None, block_n=None):
    """Exact attention softmax(q kᵀ/√d) v, fused, for (B, H, N, d) CUDA tensors.

    float32 or float16; d ∈ {16, 32, 64, 128}. With causal=True row i sees
    keys 0..i. Returns o (same shape and dtype), and with return_lse=True
    also the logsumexp per row as float32 (B, H, N).
    Raises ValueError for other shapes or dtypes.
    """
    if q.dim() != 4 or q.shape != k.shape or q.shape != v.shape:
        raise ValueError(f"q, k and v must share one (B, H, N, d) shape, got {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")
    if q.dtype not in (torch.float32, torch.float16) or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError(f"float32 or float16 inputs of one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    b, h, n, d = q.shape
    if d not in (16, 32, 64, 128):
        raise ValueError(f"d must be 16, 32, 64 or 128, got {d}")
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    o = torch.empty_like(q)
    lse = torch.empty((b, h, n), device=q.device, dtype=torch.float32)
    bm, bn, warps, stages = _blocks(d, q.dtype)
    bm, bn = block_m or bm, block_n or bn
    if bm % bn:
        raise ValueError(f"block_m ({bm}) must be a multiple of block_n ({bn})")
    grid = (triton.cdiv(n, bm), b * h)
    _flash_forward[grid](q, k, v, o, lse, q.stride(0), q.stride(1), q.stride(2),
                         h, n, LOG2E / math.sqrt(d),
                         D=d, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=bool(causal),
                         PRECISION="ieee" if q.dtype == torch.float32 else "tf32",
                         num_warps=warps, num_stages=stages)
    return (o, lse) if return_lse else o
