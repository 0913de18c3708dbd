"""Absorbed MLA decode step: one new token per sequence against a latent cache, graph-capturable.

    o = mla_decode_step(q_nope, q_rope, cache, lengths, w_uk, w_uv)

Three launches, none of them data-dependent in shape: (1) the query absorption q_latent[b, h] =
q_nope[b, h] @ W_UK[h] as one batched matmul (torch.bmm over the H heads), (2) the split kernel
(`_kernels._mla_split_kernel`, grid (NUM_SPLITS, B)), which reads each cached latent once for all
heads, (3) the combine kernel, which merges the splits and applies W_UV[h] (the absorbed value
projection). `lengths` stays on the device and is read by the kernels; the grid, the split
count and every buffer depend only on shapes, so the step can be captured in a CUDA graph and
replayed with new lengths and cache contents (no .item(), no host sync).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import triton

from ._args import FLOAT_DTYPES, INDEX_DTYPES, check, interpreting, kernel_device, sm_count
from ._kernels import _mla_combine_kernel, _mla_split_kernel


@dataclass(frozen=True)
class MLAConfig:
    """Launch parameters of the split kernel (the bench sweeps them; `default_config` picks).

    block_n: cached tokens per loop step; heads_as_n: the transposed products (see _kernels);
    programs_per_sm: split programs per multiprocessor the split count aims at; block_v: V columns
    per combine program."""

    block_n: int = 32
    num_warps: int = 8
    num_stages: int = 2
    heads_as_n: bool = True
    programs_per_sm: int = 1
    block_v: int | None = None


def default_config(device: torch.device) -> MLAConfig:
    """On Hopper: 64-token blocks, 4 warps, 2 stages, transposed products: the fastest of the
    36 launch configs `bench/kernels_decode_mla_moe.py --wide` swept on an H200 at B=1 128K,
    B=1 1M and B=8 1M (2026-12-04, bench/results/decode_mla_wide_h200*.json: 0.62-0.70 of the
    HBM floor at 1M where the earlier 32-token, 8-warp, 3-stage default reached 0.33-0.34).
    Elsewhere the dataclass defaults (2 stages fit an A100's 163 KB of shared memory)."""
    if device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 9:
        return MLAConfig(block_n=64, num_warps=4, num_stages=2, heads_as_n=True)
    return MLAConfig()


def default_splits(batch: int, capacity: int, config: MLAConfig, device: torch.device) -> int:
    """Splits per sequence so that B x splits fills the multiprocessors once (the split kernel
    holds an [H, R] fp32 accumulator: one program per multiprocessor), capped so that a split
    has at least one token block of the cache's capacity."""
    want = max(1, (sm_count(device) * config.programs_per_sm) // batch)
    return max(1, min(want, triton.cdiv(capacity, config.block_n)))


def mla_decode_step(
    q_nope: torch.Tensor,
    q_rope: torch.Tensor,
    cache: torch.Tensor,
    lengths: torch.Tensor,
    w_uk: torch.Tensor,
    w_uv: torch.Tensor,
    *,
    sm_scale: float | None = None,
    num_splits: int | None = None,
    config: MLAConfig | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Attention output o [B, H, V] of one query token per sequence (before the output projection).

    q_nope: [B, H, NOPE], q_rope: [B, H, ROPE] (rotary already applied), one float dtype;
    cache: [B, CAP, R + ROPE] in that dtype: per token the compressed KV latent c (first R) and
    the shared rope key (last ROPE); lengths: [B] int32/int64 on the device, the cached tokens of
    each sequence (clamped to [0, CAP] on the device; 0 gives o = 0); w_uk: [H, NOPE, R] (the
    key up-projection, k_nope[h] = W_UK[h] @ c); w_uv: [H, R, V] (the value up-projection,
    v[h] = c @ W_UV[h]). Scores are scaled by sm_scale (default 1/sqrt(NOPE + ROPE)).
    `out` ([B, H, V], q's dtype) receives o when given.
    """
    device = kernel_device(q_nope, "q_nope")
    if not isinstance(q_nope, torch.Tensor) or q_nope.dim() != 3:
        raise ValueError(f"expected q_nope of shape [B, H, NOPE], got {tuple(q_nope.shape)}")
    batch, heads, nope = q_nope.shape
    dtype = q_nope.dtype
    check("q_nope", q_nope, [batch, heads, nope], FLOAT_DTYPES, device)
    check("q_rope", q_rope, [batch, heads, None], (dtype,), device)
    rope = q_rope.shape[2]
    check("w_uk", w_uk, [heads, nope, None], (dtype,), device)
    rank = w_uk.shape[2]
    check("cache", cache, [batch, None, rank + rope], (dtype,), device)
    check("w_uv", w_uv, [heads, rank, None], (dtype,), device)
    v_dim = w_uv.shape[2]
    check("lengths", lengths, [batch], INDEX_DTYPES, device)
    capacity = cache.shape[1]
    if min(batch, heads, nope, rope, rank, v_dim, capacity) < 1:
        raise ValueError(f"expected non-empty sizes, got B={batch} H={heads} NOPE={nope} "
                         f"ROPE={rope} R={rank} V={v_dim} CAP={capacity}")
    if out is not None:
        check("out", out, [batch, heads, v_dim], (dtype,), device)
    cfg = config or default_config(device)
    splits = default_splits(batch, capacity, cfg, device) if num_splits is None else num_splits
    if splits < 1:
        raise ValueError(f"expected num_splits >= 1, got {splits}")
    scale = sm_scale if sm_scale is not None else 1.0 / math.sqrt(nope + rope)

    # [H, B, R]: the absorbed query, one matmul per head; the kernel reads it through strides.
    q_latent = torch.bmm(q_nope.transpose(0, 1), w_uk)
    o_part = torch.empty(batch, heads, splits, rank, device=device, dtype=torch.float32)
    lse = torch.empty(batch, heads, splits, device=device, dtype=torch.float32)
    o = torch.empty(batch, heads, v_dim, device=device, dtype=dtype) if out is None else out

    block_h = max(16, triton.next_power_of_2(heads))
    _mla_split_kernel[(splits, batch)](
        q_latent, q_rope, cache, lengths, o_part, lse,
        heads, capacity, splits, scale * math.log2(math.e),
        q_latent.stride(1), q_latent.stride(0), q_rope.stride(0), q_rope.stride(1),
        cache.stride(0), cache.stride(1),
        R=rank, ROPE=rope, BLOCK_H=block_h, BLOCK_R=max(16, triton.next_power_of_2(rank)),
        BLOCK_ROPE=max(16, triton.next_power_of_2(rope)), BLOCK_N=cfg.block_n,
        HEADS_AS_N=cfg.heads_as_n, PRECISION="ieee" if dtype == torch.float32 else "tf32",
        UPCAST=interpreting() and dtype != torch.float32,
        num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )
    block_v = cfg.block_v or _combine_block_v(batch, heads, v_dim, device)
    _mla_combine_kernel[(heads, batch, triton.cdiv(v_dim, block_v))](
        o_part, lse, w_uv, o, heads, splits, o.stride(0), o.stride(1),
        R=rank, V=v_dim, BLOCK_S=32, BLOCK_K=64, BLOCK_V=block_v, num_warps=4,
    )
    return o


def _combine_block_v(batch: int, heads: int, v_dim: int, device: torch.device) -> int:
    """V columns per combine program: narrow enough that B x H x V-blocks covers the GPU (the
    partials each program merges again come from L2), never under 16."""
    block = triton.next_power_of_2(v_dim)
    while block > 16 and batch * heads * triton.cdiv(v_dim, block) < sm_count(device):
        block //= 2
    return block
