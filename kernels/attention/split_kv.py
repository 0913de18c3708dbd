"""Split-KV (flash-decoding) attention decode in Triton: one new query token per sequence against
a KV cache, GQA-aware, CUDA-graph-capturable.

    o[b, h] = sum_s softmax_s(q[b, h] . k_cache[b, s, g] * scale) v_cache[b, s, g],
    s in [max(0, len[b] - W), len[b]),  g = h // (Hq / Hkv)

Layout: q, o [B, Hq, D]; k_cache, v_cache [B, L, Hkv, D], the cache preallocated at its capacity
L and filled token by token (the layout of kernels/decode/attention.py); lengths [B] int32/int64
on the device: how many cached tokens each sequence has, the new token's k, v included.

Schedule: the attended span of every sequence is cut into NUM_SPLITS equal chunks (rounded up to
BLOCK_N); one program per (sequence, KV head, chunk) reads its chunk of K and V once for all
R = Hq / Hkv query heads of that group (the R rows, padded to 16, are the M side of the dots), and
writes a partial output with its log-sum-exp. A second kernel combines the chunks per head. With
NUM_SPLITS = 1 the first kernel writes o itself and no combine runs.

Graph capture: NUM_SPLITS and the buffers depend only on the shapes (B, L, Hkv, D, window) and
the SM count, never on the lengths, which the kernels read on the device: no .item(), no host
sync, no data-dependent allocation or grid. Chunks past a sequence's span are empty programs that
write a zero partial with log-sum-exp -inf. Lengths are clamped to [0, L] on the device, so a bad
length cannot read outside the cache; a length of 0 gives o = 0.

A ring-buffer window cache (capacity W, token p stored at slot p mod W) needs no window here:
softmax does not depend on the order of the keys, so pass window=None and lengths = min(len, W).
"""

from __future__ import annotations

import functools
import math
import os

import torch
import triton
import triton.language as tl

DTYPES = (torch.float16, torch.bfloat16, torch.float32)
LENGTH_DTYPES = (torch.int32, torch.int64)
MAX_HEAD_DIM = 256
MAX_GROUP = 128
LOG2E = 1.4426950408889634
# Auto split count: about this many programs per SM, so that the last wave of equal-sized chunks
# leaves few SMs idle; and never chunks shorter than MIN_BLOCKS_PER_SPLIT key blocks, below which
# a program's fixed cost (q load, partial write, combine read) outweighs its share of KV reads.
PROGRAMS_PER_SM = 8
MIN_BLOCKS_PER_SPLIT = 4
MAX_SPLITS = 256
COMBINE_BLOCK_S = 16


def interpreting() -> bool:
    """True when Triton runs kernels through its CPU interpreter (TRITON_INTERPRET=1)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def check_runnable_device(t: torch.Tensor) -> None:
    if t.device.type != "cuda" and not interpreting():
        raise ValueError(f"expected CUDA tensors (or TRITON_INTERPRET=1 for CPU tensors), got "
                         f"{t.device}")


@functools.lru_cache(maxsize=8)
def _num_sms(device: torch.device) -> int:
    if device.type != "cuda":
        return 4
    return torch.cuda.get_device_properties(device).multi_processor_count


def default_block_n(head_dim: int) -> int:
    """Keys per block: 64 rows of K and V at D = 128 (32 KB a stage in bf16), 128 at D <= 64."""
    if interpreting():
        return 16
    return 128 if head_dim <= 64 else 64


def auto_splits(batch: int, hkv: int, span: int, block_n: int, num_sms: int) -> int:
    """Chunks per sequence for a span of at most `span` keys (host ints only: graph-safe)."""
    if span < 1:
        return 1
    want = triton.cdiv(PROGRAMS_PER_SM * num_sms, batch * hkv)
    longest = triton.cdiv(triton.cdiv(span, block_n), MIN_BLOCKS_PER_SPLIT)
    return max(1, min(want, longest, MAX_SPLITS))


@triton.jit
def _dot(a, b, DOT_PREC: tl.constexpr, UPCAST: tl.constexpr):
    # see window.py: the CPU interpreter mishandles bf16 dots, so they run on exact fp32 copies
    if UPCAST:
        return tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    else:
        return tl.dot(a, b, input_precision=DOT_PREC)


@triton.jit
def head_dim_mask(row_ok, offs_d, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr):
    """row_ok [N, 1], and'ed with d < HEAD_DIM only when the head dim is padded: a mask that
    varies along D would keep the loads from being vectorised (16 bytes a thread)."""
    # a constexpr condition: only the taken side is compiled
    return row_ok if BLOCK_D == HEAD_DIM else row_ok & (offs_d[None, :] < HEAD_DIM)


@triton.jit
def _split_kv_kernel(
    q_ptr, k_ptr, v_ptr, len_ptr, o_ptr, po_ptr, plse_ptr,
    L, HKV, REP, WINDOW, qk_scale,
    stride_qb, stride_qh,
    stride_kb, stride_kt, stride_kh,
    stride_vb, stride_vt, stride_vh,
    stride_ob, stride_oh,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_R: tl.constexpr,
    BLOCK_N: tl.constexpr, NUM_SPLITS: tl.constexpr,
    HAS_LENGTHS: tl.constexpr,
    DOT_PREC: tl.constexpr, UPCAST: tl.constexpr,
):
    pid_bg = tl.program_id(0)
    split = tl.program_id(1)
    b = pid_bg // HKV
    g = pid_bg % HKV
    if HAS_LENGTHS:
        seq = tl.load(len_ptr + b).to(tl.int32)
        seq = tl.minimum(tl.maximum(seq, 0), L)
    else:
        seq = L
    # WINDOW is min(W, L), or L without a window: start is then 0, as seq <= L
    start = tl.maximum(seq - WINDOW, 0)
    chunk = tl.cdiv(tl.cdiv(seq - start, NUM_SPLITS), BLOCK_N) * BLOCK_N
    lo = start + split * chunk
    hi = tl.minimum(lo + chunk, seq)

    offs_r = tl.arange(0, BLOCK_R)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    r_ok = offs_r[:, None] < REP
    rd_ok = head_dim_mask(r_ok, offs_d, HEAD_DIM, BLOCK_D)
    heads = g * REP + offs_r
    p_q = (q_ptr + b.to(tl.int64) * stride_qb + heads[:, None].to(tl.int64) * stride_qh
           + offs_d[None, :])
    b_q = tl.load(p_q, mask=rd_ok, other=0.0)
    p_k = (k_ptr + b.to(tl.int64) * stride_kb + g.to(tl.int64) * stride_kh
           + (lo + offs_n)[:, None].to(tl.int64) * stride_kt + offs_d[None, :])
    p_v = (v_ptr + b.to(tl.int64) * stride_vb + g.to(tl.int64) * stride_vh
           + (lo + offs_n)[:, None].to(tl.int64) * stride_vt + offs_d[None, :])

    acc = tl.zeros([BLOCK_R, BLOCK_D], dtype=tl.float32)
    l_i = tl.zeros([BLOCK_R], dtype=tl.float32)
    m_i = tl.full([BLOCK_R], float("-inf"), dtype=tl.float32)
    for start_n in range(lo, hi, BLOCK_N):
        n_ok = (start_n + offs_n) < hi
        kv_ok = head_dim_mask(n_ok[:, None], offs_d, HEAD_DIM, BLOCK_D)
        b_k = tl.load(p_k, mask=kv_ok, other=0.0)
        b_v = tl.load(p_v, mask=kv_ok, other=0.0)
        b_s = _dot(b_q, tl.trans(b_k), DOT_PREC, UPCAST)
        b_s = tl.where(n_ok[None, :], b_s, float("-inf"))
        # every block holds at least one key (start_n < hi), so m_new is finite; the scale (> 0)
        # goes into the max and into one FFMA per score
        m_new = tl.maximum(m_i, tl.max(b_s, 1) * qk_scale)
        b_p = tl.exp2(b_s * qk_scale - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(b_p, 1)
        acc = acc * alpha[:, None] + _dot(b_p.to(b_v.dtype), b_v, DOT_PREC, UPCAST)
        m_i = m_new
        p_k += BLOCK_N * stride_kt
        p_v += BLOCK_N * stride_vt

    empty = l_i == 0.0
    b_o = acc / tl.where(empty, 1.0, l_i)[:, None]
    if NUM_SPLITS == 1:
        p_o = (o_ptr + b.to(tl.int64) * stride_ob + heads[:, None].to(tl.int64) * stride_oh
               + offs_d[None, :])
        tl.store(p_o, b_o.to(o_ptr.dtype.element_ty), mask=rd_ok)
    else:
        # partials [B, Hq, NUM_SPLITS, BLOCK_D] fp32 and their log2-sum-exp [B, Hq, NUM_SPLITS]
        row = (b.to(tl.int64) * HKV * REP + heads.to(tl.int64)) * NUM_SPLITS + split
        p_po = po_ptr + row[:, None] * BLOCK_D + offs_d[None, :]
        tl.store(p_po, b_o, mask=r_ok)
        lse = tl.where(empty, float("-inf"), m_i + tl.log2(tl.where(empty, 1.0, l_i)))
        tl.store(plse_ptr + row, lse, mask=offs_r < REP)


@triton.jit
def _combine_kernel(
    po_ptr, plse_ptr, o_ptr, HQ, stride_ob, stride_oh,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, NUM_SPLITS: tl.constexpr,
    BLOCK_S: tl.constexpr,
):
    pid = tl.program_id(0)
    b = pid // HQ
    h = pid % HQ
    base = pid.to(tl.int64) * NUM_SPLITS
    offs_s = tl.arange(0, BLOCK_S)
    offs_d = tl.arange(0, BLOCK_D)
    # pass 1: the largest log-sum-exp over the chunks (empty chunks carry -inf)
    m = tl.full([BLOCK_S], float("-inf"), dtype=tl.float32)
    for s0 in range(0, NUM_SPLITS, BLOCK_S):
        s_ok = s0 + offs_s < NUM_SPLITS
        m = tl.maximum(m, tl.load(plse_ptr + base + s0 + offs_s, mask=s_ok, other=float("-inf")))
    m_all = tl.max(m, 0)
    m_use = tl.where(m_all == float("-inf"), 0.0, m_all)
    # pass 2: o = sum_s 2^(lse_s - max) o_s / sum_s 2^(lse_s - max)
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    den = tl.zeros([BLOCK_S], dtype=tl.float32)
    for s0 in range(0, NUM_SPLITS, BLOCK_S):
        s_ok = s0 + offs_s < NUM_SPLITS
        lse = tl.load(plse_ptr + base + s0 + offs_s, mask=s_ok, other=float("-inf"))
        w = tl.exp2(lse - m_use)
        p_po = po_ptr + (base + s0 + offs_s)[:, None] * BLOCK_D + offs_d[None, :]
        part = tl.load(p_po, mask=s_ok[:, None], other=0.0)
        acc += tl.sum(w[:, None] * part, 0)
        den += w
    total = tl.sum(den, 0)
    b_o = acc / tl.where(total == 0.0, 1.0, total)
    p_o = o_ptr + b.to(tl.int64) * stride_ob + h.to(tl.int64) * stride_oh + offs_d
    tl.store(p_o, b_o.to(o_ptr.dtype.element_ty), mask=offs_d < HEAD_DIM)


def check_scale(scale: float | None, head_dim: int) -> float:
    """1 / sqrt(D) by default; the kernels fold the scale into the row max, so it must be > 0."""
    if scale is None:
        return 1.0 / math.sqrt(head_dim)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not (
            math.isfinite(scale) and scale > 0):
        raise ValueError(f"expected scale a finite number > 0, got {scale!r}")
    return float(scale)


def _check(q: object, k_cache: object, v_cache: object, lengths: object,
           window: int | None) -> None:
    if not isinstance(q, torch.Tensor) or q.dim() != 3:
        raise ValueError(f"expected q of shape [B, Hq, D], got {getattr(q, 'shape', type(q))}")
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise ValueError(f"expected {name} of shape [B, L, Hkv, D], got "
                             f"{getattr(t, 'shape', type(t))}")
    B, Hq, D = q.shape
    if k_cache.shape != v_cache.shape:
        raise ValueError(f"expected k_cache and v_cache of one shape, got {tuple(k_cache.shape)} "
                         f"and {tuple(v_cache.shape)}")
    _, L, Hkv, Dk = k_cache.shape
    if k_cache.shape[0] != B or Dk != D or Hkv < 1 or Hq % Hkv:
        raise ValueError(f"expected caches [B={B}, L, Hkv dividing Hq={Hq}, D={D}], got "
                         f"{tuple(k_cache.shape)}")
    if min(B, Hq, D, L) < 1 or D > MAX_HEAD_DIM or Hq // Hkv > MAX_GROUP:
        raise ValueError(f"expected B, Hq, L >= 1, D <= {MAX_HEAD_DIM} and Hq / Hkv <= "
                         f"{MAX_GROUP}, got q {tuple(q.shape)}, caches {tuple(k_cache.shape)}")
    if q.dtype not in DTYPES or not (q.dtype == k_cache.dtype == v_cache.dtype):
        raise ValueError(f"expected q and caches of one dtype among fp16, bf16, fp32, got "
                         f"{q.dtype}/{k_cache.dtype}/{v_cache.dtype}")
    if not (q.device == k_cache.device == v_cache.device):
        raise ValueError(f"expected q and caches on one device, got {q.device}/"
                         f"{k_cache.device}/{v_cache.device}")
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        if t.stride(-1) != 1:
            raise ValueError(f"expected {name} with a contiguous last dimension, got strides "
                             f"{t.stride()}")
    if lengths is not None and (
            not isinstance(lengths, torch.Tensor) or lengths.shape != (B,)
            or lengths.dtype not in LENGTH_DTYPES or lengths.device != q.device):
        got = ((tuple(lengths.shape), lengths.dtype, lengths.device)
               if isinstance(lengths, torch.Tensor) else type(lengths).__name__)
        raise ValueError(f"expected lengths of shape ({B},), int32 or int64, on {q.device}, "
                         f"got {got}")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int)
                               or window < 1):
        raise ValueError(f"expected window an int >= 1 or None, got {window!r}")
    check_runnable_device(q)


def split_kv_decode(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
    lengths: torch.Tensor | None = None, *, window: int | None = None,
    scale: float | None = None, out: torch.Tensor | None = None,
    num_splits: int | None = None, block_n: int | None = None,
) -> torch.Tensor:
    """o [B, Hq, D]: one query per sequence over its cached keys [max(0, len - window), len).

    q: [B, Hq, D]; k_cache, v_cache: [B, L, Hkv, D] (Hkv dividing Hq; last dimension contiguous,
    other strides free); lengths: [B] int32/int64 on q's device, or None for len = L everywhere;
    window: None (every cached token) or W >= 1. `scale` (> 0) defaults to 1 / sqrt(D). `out`
    [B, Hq, D] (q's dtype, last dimension contiguous) is written in place. `num_splits`
    (default: from B, Hkv, the longest possible span and the SM count) and `block_n` (keys per
    block) depend on nothing the device holds, so the call can be captured in a CUDA graph and
    replayed as the lengths change.
    """
    _check(q, k_cache, v_cache, lengths, window)
    B, Hq, D = q.shape
    L, Hkv = k_cache.shape[1], k_cache.shape[2]
    if out is None:
        out = torch.empty_like(q, memory_format=torch.contiguous_format)
    elif (not isinstance(out, torch.Tensor) or out.shape != q.shape or out.dtype != q.dtype
          or out.device != q.device or out.stride(-1) != 1):
        got = (tuple(out.shape), out.dtype, out.device) if isinstance(out, torch.Tensor) else out
        raise ValueError(f"expected out of shape {tuple(q.shape)}, {q.dtype} on {q.device} with a "
                         f"contiguous last dimension, got {got}")
    block_n = default_block_n(D) if block_n is None else block_n
    if block_n not in (16, 32, 64, 128):
        raise ValueError(f"expected block_n of 16, 32, 64 or 128, got {block_n}")
    span = L if window is None else min(window, L)
    if num_splits is None:
        num_splits = auto_splits(B, Hkv, span, block_n, _num_sms(q.device))
    elif isinstance(num_splits, bool) or not isinstance(num_splits, int) or not (
            1 <= num_splits <= MAX_SPLITS):
        raise ValueError(f"expected num_splits an int in 1..{MAX_SPLITS}, got {num_splits!r}")
    block_d = max(16, triton.next_power_of_2(D))
    rep = Hq // Hkv
    if num_splits > 1:
        partial = torch.empty(B, Hq, num_splits, block_d, dtype=torch.float32, device=q.device)
        lse = torch.empty(B, Hq, num_splits, dtype=torch.float32, device=q.device)
    else:
        partial = lse = out  # not touched by the one-split kernel
    scale = check_scale(scale, D)
    _split_kv_kernel[(B * Hkv, num_splits)](
        q, k_cache, v_cache, lengths if lengths is not None else out, out, partial, lse,
        L, Hkv, rep, span, scale * LOG2E,
        q.stride(0), q.stride(1),
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        v_cache.stride(0), v_cache.stride(1), v_cache.stride(2),
        out.stride(0), out.stride(1),
        HEAD_DIM=D, BLOCK_D=block_d, BLOCK_R=max(16, triton.next_power_of_2(rep)),
        BLOCK_N=block_n, NUM_SPLITS=num_splits, HAS_LENGTHS=lengths is not None,
        DOT_PREC="ieee" if q.dtype == torch.float32 else "tf32",
        UPCAST=interpreting() and q.dtype == torch.bfloat16,
        num_warps=4, num_stages=1 if interpreting() else 3,
    )
    if num_splits > 1:
        _combine_kernel[(B * Hq,)](
            partial, lse, out, Hq, out.stride(0), out.stride(1),
            HEAD_DIM=D, BLOCK_D=block_d, NUM_SPLITS=num_splits, BLOCK_S=COMBINE_BLOCK_S,
            num_warps=4, num_stages=1,
        )
    return out


def splits_for(q: torch.Tensor, k_cache: torch.Tensor, *, window: int | None = None,
               block_n: int | None = None) -> int:
    """The split count `split_kv_decode` picks by default for these shapes (for bench records)."""
    L, Hkv = k_cache.shape[1], k_cache.shape[2]
    span = L if window is None else min(window, L)
    block_n = default_block_n(q.shape[2]) if block_n is None else block_n
    return auto_splits(q.shape[0], Hkv, span, block_n, _num_sms(q.device))
