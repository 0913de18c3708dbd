"""The Mamba layers' short causal depthwise convolution with its SiLU, one pass over the channels.

y[b, c, t] = silu(sum_j w[c, j] * x[b, c, t - k + 1 + j]) (x taken as 0 before t = 0), for
x [B, C, L] in any strides: Mamba-1 hands it the x half of its channels-first input projection
(a slice, rows of L), Mamba-2 the x/B/C part of its time-major projection (channels contiguous).
torch's depthwise `conv1d` needs the slice copied first and, at k = 4, runs a generic kernel:
5.5 ms for Samba's [1, 4096, 131072] on an H200 (torch.profiler, bench/serving_layer_profile.py),
about ten times the ~0.5 ms its 2 GB of traffic take at the copy bandwidth. This kernel reads
each input element once from memory (the k - 1 overlapping columns of a tile come from cache)
and writes y once, in the layout `out` has.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# a [BLOCK_C, BLOCK_T] tile per program: 32 channels coalesce a channels-contiguous input,
# 64 steps a time-contiguous one (Triton specialises a stride of 1 at compile time)
BLOCK_C, BLOCK_T = 32, 64


@triton.jit
def _causal_conv_silu(x_ptr, w_ptr, y_ptr, C, L, s_xb, s_xc, s_xt, s_yb, s_yc, s_yt,
                      K: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_T: tl.constexpr):
    pid_t, pid_c, b = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    offs_c = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    offs_t = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)
    in_c = offs_c < C
    acc = tl.zeros([BLOCK_C, BLOCK_T], dtype=tl.float32)
    for j in tl.static_range(K):
        t = offs_t - (K - 1) + j
        mask = in_c[:, None] & (t[None, :] >= 0) & (t[None, :] < L)
        xv = tl.load(x_ptr + b * s_xb + offs_c[:, None] * s_xc + t[None, :] * s_xt, mask=mask,
                     other=0.0)
        wv = tl.load(w_ptr + offs_c * K + j, mask=in_c, other=0.0)
        acc += xv.to(tl.float32) * wv.to(tl.float32)[:, None]
    y = acc * tl.sigmoid(acc)
    mask = in_c[:, None] & (offs_t[None, :] < L)
    tl.store(y_ptr + b * s_yb + offs_c[:, None] * s_yc + offs_t[None, :] * s_yt,
             y.to(y_ptr.dtype.element_ty), mask=mask)


def causal_conv_silu(x: torch.Tensor, w: torch.Tensor,
                     out: torch.Tensor | None = None) -> torch.Tensor:
    """silu(causal depthwise conv) of x [B, C, L] (any strides) with w [C, 1, k] or [C, k];
    returns `out` (same shape and dtype as x, any strides; a new contiguous one when None)."""
    if x.dim() != 3:
        raise ValueError(f"expected x [B, C, L], got shape {tuple(x.shape)}")
    b, c, length = x.shape
    w2 = w.reshape(c, -1).contiguous()
    if out is None:
        out = torch.empty(b, c, length, device=x.device, dtype=x.dtype)
    elif out.shape != x.shape or out.dtype != x.dtype:
        raise ValueError(f"expected out {tuple(x.shape)} {x.dtype}, got {tuple(out.shape)} "
                         f"{out.dtype}")
    grid = (triton.cdiv(length, BLOCK_T), triton.cdiv(c, BLOCK_C), b)
    _causal_conv_silu[grid](x, w2, out, c, length, *x.stride(), *out.stride(), K=w2.shape[1],
                            BLOCK_C=BLOCK_C, BLOCK_T=BLOCK_T, num_warps=4)
    return out
