"""Causal sliding-window attention prefill in Triton: FlashAttention-2 schedule, skipping masked
blocks.

    o[b, t, h] = sum_s softmax_s(q[b, t, h] . k[b, s, g] * scale) v[b, s, g],
    s in (t - W, t],  g = h // (Hq / Hkv)

Layout: q, o [B, T, Hq, D]; k, v [B, T, Hkv, D], the house layout of kernels/attention (the SSD
kernels' x is [B, T, H, P]) and what a fused QKV projection gives as views of one [B, T,
Hq + 2 Hkv, D] tensor. Any strides are taken as long as the last dimension is contiguous, so those
views run without a copy.

Schedule: one program per (query block of BLOCK_M rows, query head). Query rows [m0, m0 + BLOCK_M)
see keys [m0 - W + 1, m0 + BLOCK_M - 1]; the program walks only the key blocks of BLOCK_N that
meet that range, so the work is O(T * W), not O(T^2). The range splits into a left edge (blocks
the window boundary cuts), a middle of blocks every row sees whole (no mask, no bounds check) and
the diagonal (blocks the causal boundary or the sequence end cuts); only the two edges build a
mask. Online softmax in the log2 domain, fp32 accumulators, p rounded to the input dtype for the
second dot (as FlashAttention-2). GQA: the program reads the K/V rows of KV head h // R; K and V
are never repeated or copied, and no mask tensor exists anywhere.

Forward only: the serving experiments time prefill and decode, which need no gradient; a backward
is out of scope here (no autograd Function is defined, so calling backward through it fails).

The decode step over the window (one new token against a cache) is `window_decode_step`, the
split-KV kernel of `split_kv.py` restricted to the last W cached tokens.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .split_kv import (
    check_runnable_device,
    check_scale,
    head_dim_mask,
    interpreting,
    split_kv_decode,
)

DTYPES = (torch.float16, torch.bfloat16, torch.float32)
MAX_HEAD_DIM = 256
LOG2E = 1.4426950408889634


def _configs() -> list[triton.Config]:
    if interpreting():
        # one small config: odd test sizes then cross every block edge
        return [triton.Config({"BLOCK_M": 16, "BLOCK_N": 16}, num_warps=4, num_stages=1)]
    # Hopper (H100/H200) shapes of the FlashAttention-2 Triton schedule, kept few on purpose:
    # every config costs a compile in every fresh process. 128-row query blocks keep the two dots
    # on the tensor cores' large tiles; 64-row ones double the program count for short T.
    shapes = [(128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 3), (128, 64, 4, 4),
              (64, 64, 4, 3), (64, 128, 4, 2)]
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w, num_stages=s)
            for m, n, w, s in shapes]


@triton.jit
def _dot(a, b, DOT_PREC: tl.constexpr, UPCAST: tl.constexpr):
    # Triton's CPU interpreter multiplies bf16 operands as raw bits (triton 3.9): under
    # TRITON_INTERPRET=1 bf16 dots run on exact fp32 copies; compiled kernels never take it.
    if UPCAST:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    else:
        return tl.dot(a, b, input_precision=DOT_PREC)


@triton.jit
def _attend(
    acc, l_i, m_i, b_q, p_k, p_v, lo, hi, offs_m, offs_n, offs_d, T, WINDOW, qk_scale,
    stride_kt, stride_vt,
    HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, MASKED: tl.constexpr,
    DOT_PREC: tl.constexpr, UPCAST: tl.constexpr,
):
    """Fold key blocks [lo, hi) into the running (acc, l_i, m_i) of one query block.

    MASKED=False is for blocks every query row sees whole: no mask and no bounds check."""
    p_k += lo.to(tl.int64) * stride_kt
    p_v += lo.to(tl.int64) * stride_vt
    for start_n in range(lo, hi, BLOCK_N):
        offs_k = start_n + offs_n
        if MASKED:
            kv_ok = head_dim_mask(offs_k[:, None] < T, offs_d, HEAD_DIM, BLOCK_D)
            b_k = tl.load(p_k, mask=kv_ok, other=0.0)
            b_v = tl.load(p_v, mask=kv_ok, other=0.0)
        elif BLOCK_D == HEAD_DIM:
            b_k = tl.load(p_k)
            b_v = tl.load(p_v)
        else:
            b_k = tl.load(p_k, mask=offs_d[None, :] < HEAD_DIM, other=0.0)
            b_v = tl.load(p_v, mask=offs_d[None, :] < HEAD_DIM, other=0.0)
        # raw scores; the scale (> 0) goes into the row max and into one FFMA per score below
        b_s = _dot(b_q, tl.trans(b_k), DOT_PREC, UPCAST)
        if MASKED:
            seen = ((offs_k[None, :] <= offs_m[:, None])
                    & (offs_k[None, :] > offs_m[:, None] - WINDOW)
                    & (offs_k[None, :] < T))
            b_s = tl.where(seen, b_s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(b_s, 1) * qk_scale)
            # a row that has seen no key yet keeps m = -inf: subtract 0 instead, so that its
            # p and alpha are exp2(-inf) = 0, not exp2(-inf + inf) = NaN
            m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
        else:
            m_new = tl.maximum(m_i, tl.max(b_s, 1) * qk_scale)
            m_use = m_new
        b_p = tl.exp2(b_s * qk_scale - m_use[:, None])
        alpha = tl.exp2(m_i - m_use)
        l_i = l_i * alpha + tl.sum(b_p, 1)
        acc = acc * alpha[:, None] + _dot(b_p.to(b_v.dtype), b_v, DOT_PREC, UPCAST)
        m_i = m_new
        p_k += BLOCK_N * stride_kt
        p_v += BLOCK_N * stride_vt
    return acc, l_i, m_i


@triton.jit
def _window_fwd_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr,
    T, HQ, REP, WINDOW, T_BUCKET, qk_scale,
    stride_qb, stride_qt, stride_qh,
    stride_kb, stride_kt, stride_kh,
    stride_vb, stride_vt, stride_vh,
    stride_ob, stride_ot, stride_oh,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
    DOT_PREC: tl.constexpr, UPCAST: tl.constexpr,
):
    # axis 0 walks the heads first, so the REP query heads of one KV head run side by side and
    # share its K/V blocks in L2
    pid_bh = tl.program_id(0)
    pid_m = tl.program_id(1)
    b = pid_bh // HQ
    h = pid_bh % HQ
    g = h // REP
    m0 = pid_m * BLOCK_M
    offs_m = m0 + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    row_ok = head_dim_mask(offs_m[:, None] < T, offs_d, HEAD_DIM, BLOCK_D)

    q_base = q_ptr + b.to(tl.int64) * stride_qb + h.to(tl.int64) * stride_qh
    p_q = q_base + offs_m[:, None].to(tl.int64) * stride_qt + offs_d[None, :]
    b_q = tl.load(p_q, mask=row_ok, other=0.0)
    p_k = (k_ptr + b.to(tl.int64) * stride_kb + g.to(tl.int64) * stride_kh
           + offs_n[:, None].to(tl.int64) * stride_kt + offs_d[None, :])
    p_v = (v_ptr + b.to(tl.int64) * stride_vb + g.to(tl.int64) * stride_vh
           + offs_n[:, None].to(tl.int64) * stride_vt + offs_d[None, :])

    # Key ranges, all multiples of BLOCK_N: [lo, full_lo) left edge, [full_lo, full_hi) whole
    # blocks, [full_hi, hi) diagonal. A block is whole when it ends at or before the first row
    # (n0 + BLOCK_N - 1 <= m0) and starts inside the last row's window (n0 >= m0 + BLOCK_M - W).
    lo = tl.maximum(m0 - WINDOW + 1, 0) // BLOCK_N * BLOCK_N
    full_hi = (m0 + 1) // BLOCK_N * BLOCK_N
    full_lo = tl.cdiv(tl.maximum(m0 + BLOCK_M - WINDOW, 0), BLOCK_N) * BLOCK_N
    full_lo = tl.minimum(tl.maximum(full_lo, lo), full_hi)
    hi = tl.minimum(m0 + BLOCK_M, T)

    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    acc, l_i, m_i = _attend(acc, l_i, m_i, b_q, p_k, p_v, lo, full_lo, offs_m, offs_n, offs_d,
                            T, WINDOW, qk_scale, stride_kt, stride_vt, HEAD_DIM, BLOCK_N,
                            BLOCK_D, True, DOT_PREC, UPCAST)
    acc, l_i, m_i = _attend(acc, l_i, m_i, b_q, p_k, p_v, full_lo, full_hi, offs_m, offs_n,
                            offs_d, T, WINDOW, qk_scale, stride_kt, stride_vt, HEAD_DIM, BLOCK_N,
                            BLOCK_D, False, DOT_PREC, UPCAST)
    acc, l_i, m_i = _attend(acc, l_i, m_i, b_q, p_k, p_v, full_hi, hi, offs_m, offs_n, offs_d,
                            T, WINDOW, qk_scale, stride_kt, stride_vt, HEAD_DIM, BLOCK_N,
                            BLOCK_D, True, DOT_PREC, UPCAST)
    # every stored row saw at least its own key, so l_i >= 1 there; padded rows are not stored
    b_o = acc / tl.maximum(l_i, 1e-30)[:, None]
    p_o = (o_ptr + b.to(tl.int64) * stride_ob + h.to(tl.int64) * stride_oh
           + offs_m[:, None].to(tl.int64) * stride_ot + offs_d[None, :])
    tl.store(p_o, b_o.to(o_ptr.dtype.element_ty), mask=row_ok)


_window_fwd_autotuned = triton.autotune(
    configs=_configs(), key=["HEAD_DIM", "REP", "WINDOW", "T_BUCKET"]
)(_window_fwd_kernel)


def _check_qkv(q: object, k: object, v: object, window: int | None) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            shape = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            what = "[B, T, Hq, D]" if name == "q" else "[B, T, Hkv, D]"
            raise ValueError(f"expected {name} of shape {what}, got {shape}")
    B, T, Hq, D = q.shape
    if k.shape != v.shape or k.shape[0] != B or k.shape[1] != T or k.shape[3] != D:
        raise ValueError(
            f"expected k and v of shape [B={B}, T={T}, Hkv, D={D}], got {tuple(k.shape)} and "
            f"{tuple(v.shape)}"
        )
    if k.shape[2] < 1 or Hq % k.shape[2]:
        raise ValueError(f"expected Hkv dividing Hq={Hq}, got Hkv={k.shape[2]}")
    if min(B, T, Hq, D) < 1 or D > MAX_HEAD_DIM:
        raise ValueError(f"expected B, T, Hq >= 1 and 1 <= D <= {MAX_HEAD_DIM}, got "
                         f"{tuple(q.shape)}")
    if q.dtype not in DTYPES or not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"expected q, k, v of one dtype among fp16, bf16, fp32, got "
                         f"{q.dtype}/{k.dtype}/{v.dtype}")
    if not (q.device == k.device == v.device):
        raise ValueError(f"expected q, k, v on one device, got {q.device}/{k.device}/{v.device}")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.stride(3) != 1:
            raise ValueError(f"expected {name} with a contiguous last dimension, got strides "
                             f"{t.stride()}")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int)
                               or window < 1):
        raise ValueError(f"expected window an int >= 1 or None, got {window!r}")
    check_runnable_device(q)


def window_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, window: int | None,
    scale: float | None = None, out: torch.Tensor | None = None,
    blocks: tuple[int, int] | None = None,
) -> torch.Tensor:
    """o [B, T, Hq, D]: causal attention of each query over its last `window` keys (itself
    included); `window=None` is full causal attention.

    q: [B, T, Hq, D]; k, v: [B, T, Hkv, D] with Hkv dividing Hq (query head h reads KV head
    h // (Hq / Hkv)); one dtype (bf16, fp16 or fp32) and device; last dimension contiguous, other
    strides free. `scale` (> 0) defaults to 1 / sqrt(D). `out` ([B, T, Hq, D], q's dtype, last
    dimension contiguous) is written in place and returned. `blocks=(BLOCK_M, BLOCK_N)` skips the
    autotuner and launches that tile (tests use it to cross other block edges).
    """
    _check_qkv(q, k, v, window)
    B, T, Hq, D = q.shape
    Hkv = k.shape[2]
    if out is None:
        out = torch.empty_like(q, memory_format=torch.contiguous_format)
    elif (not isinstance(out, torch.Tensor) or out.shape != q.shape or out.dtype != q.dtype
          or out.device != q.device or out.stride(3) != 1):
        got = (tuple(out.shape), out.dtype, out.device) if isinstance(out, torch.Tensor) else out
        raise ValueError(f"expected out of shape {tuple(q.shape)}, {q.dtype} on {q.device} with a "
                         f"contiguous last dimension, got {got}")
    scale = check_scale(scale, D)
    # a window of T or more is full causal attention: one compiled case for all of them
    w = T if window is None else min(window, T)
    upcast = interpreting() and q.dtype == torch.bfloat16
    args = (
        q, k, v, out, T, Hq, Hq // Hkv, w, triton.next_power_of_2(T), scale * LOG2E,
        q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
        v.stride(0), v.stride(1), v.stride(2), out.stride(0), out.stride(1), out.stride(2),
    )
    consts = {"HEAD_DIM": D, "BLOCK_D": max(16, triton.next_power_of_2(D)),
              "DOT_PREC": "ieee" if q.dtype == torch.float32 else "tf32", "UPCAST": upcast}
    if blocks is not None:
        block_m, block_n = blocks
        if block_m not in (16, 32, 64, 128) or block_n not in (16, 32, 64, 128):
            raise ValueError(f"expected blocks of 16, 32, 64 or 128, got {blocks}")
        _window_fwd_kernel[(B * Hq, triton.cdiv(T, block_m))](
            *args, **consts, BLOCK_M=block_m, BLOCK_N=block_n, num_warps=4,
            num_stages=1 if interpreting() else 3,
        )
    else:
        def grid(meta: dict) -> tuple[int, int]:
            return (B * Hq, triton.cdiv(T, meta["BLOCK_M"]))

        _window_fwd_autotuned[grid](*args, **consts)
    return out


def best_config() -> str | None:
    """The autotuner's pick for the last shape it tuned (for benchmark records)."""
    config = getattr(_window_fwd_autotuned, "best_config", None)
    return None if config is None else str(config)


def window_decode_step(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
    lengths: torch.Tensor | None, *, window: int, scale: float | None = None,
    out: torch.Tensor | None = None, num_splits: int | None = None,
) -> torch.Tensor:
    """o [B, Hq, D]: the decode step of `window_attention`, one new query per sequence over the
    last `window` of its `lengths[b]` cached tokens (the new token's k, v already written at
    position lengths[b] - 1). Shapes and the graph-capture contract as `split_kv_decode`."""
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError(f"expected window an int >= 1, got {window!r}")
    return split_kv_decode(q, k_cache, v_cache, lengths, window=window, scale=scale, out=out,
                           num_splits=num_splits)
