"""Pieces shared by the selective-scan forward and backward kernels: argument checks and the
per-(channel, step) and per-program helpers, written once.

Layout (Mamba's `selective_scan_fn`): u, delta [B, D, T]; A [D, N] fp32; Bm, Cm [B, N, T];
Dskip, delta_bias [D] fp32.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .._ssm_common import FLOAT_DTYPES, _softplus, check_device, check_tensor

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


def check_args(
    u: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, Bm: torch.Tensor, Cm: torch.Tensor,
    Dskip: torch.Tensor | None, delta_bias: torch.Tensor | None,
) -> tuple[int, int, int, int]:
    """Validate the scan's inputs (shapes, dtypes, device, contiguity); returns (B, D, T, N)."""
    device = check_device(check_tensor("u", u, (None, None, None), FLOAT_DTYPES))
    batch, dim, steps = u.shape
    check_tensor("delta", delta, (batch, dim, steps), FLOAT_DTYPES, device)
    check_tensor("A", A, (dim, None), (torch.float32,), device)
    n = A.shape[1]
    check_tensor("Bm", Bm, (batch, n, steps), FLOAT_DTYPES, device)
    check_tensor("Cm", Cm, (batch, n, steps), FLOAT_DTYPES, device)
    if Dskip is not None:
        check_tensor("Dskip", Dskip, (dim,), (torch.float32,), device)
    if delta_bias is not None:
        check_tensor("delta_bias", delta_bias, (dim,), (torch.float32,), device)
    return batch, dim, steps, n


def default_block_d(dim: int, dstate: int, block_d: int | None) -> int:
    """Channels per program: about 1024 state elements per program by default (64 channels at
    N=16, 16 at N=64), the fastest forward block on the H200 (bench/results/ssm_h200.json)."""
    block_n = triton.next_power_of_2(dstate)
    return triton.next_power_of_2(block_d or max(1, min(dim, max(4, 1024 // block_n))))


def time_major_bc(Bm: torch.Tensor, Cm: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """B and C copied to [B, T, N] (B*N*T elements each, ~1% of the traffic) so that one step's
    B and C are one contiguous row."""
    return Bm.transpose(1, 2).contiguous(), Cm.transpose(1, 2).contiguous()


@triton.jit
def _softplus_grad(x):
    # d softplus / dx = sigmoid(x) below torch's threshold of 20, 1 above it.
    e = tl.exp(tl.minimum(x, 20.0))
    return tl.where(x <= 20.0, e / (1.0 + e), 1.0)


@triton.jit
def _delta_prep(dl_raw, u, bias, HAS_BIAS: tl.constexpr, SOFTPLUS: tl.constexpr):
    """delta' = softplus(delta + bias) and delta' * u (float32), elementwise over any block."""
    dl = dl_raw.to(tl.float32)
    if HAS_BIAS:
        dl = dl + bias
    if SOFTPLUS:
        dl = _softplus(dl)
    return dl, dl * u.to(tl.float32)


@triton.jit
def _load_params(
    A_ptr, D_ptr, bias_ptr, offs_d, offs_n, mask_d, mask_n, N,
    HAS_D: tl.constexpr, HAS_BIAS: tl.constexpr,
):
    """A pre-scaled by log2(e) (so a decay is one exp2) [BLOCK_D, BLOCK_N], and D, bias
    [BLOCK_D] (zeros when absent), float32."""
    b_A2 = tl.load(
        A_ptr + offs_d[:, None] * N + offs_n[None, :],
        mask=mask_d[:, None] & mask_n[None, :], other=0.0,
    ).to(tl.float32) * 1.4426950408889634
    b_D = tl.zeros(offs_d.shape, dtype=tl.float32)
    b_bias = tl.zeros(offs_d.shape, dtype=tl.float32)
    if HAS_D:
        b_D = tl.load(D_ptr + offs_d, mask=mask_d, other=0.0).to(tl.float32)
    if HAS_BIAS:
        b_bias = tl.load(bias_ptr + offs_d, mask=mask_d, other=0.0).to(tl.float32)
    return b_A2, b_D, b_bias


@triton.jit
def _load_tile4(p_row, t, T, s_t, mask_d):
    """Steps t..t+3 of BLOCK_D rows as one [BLOCK_D, 4] tile (an 8-byte bf16 vector per row when
    the time stride is 1); steps past T read 0."""
    offs = t + tl.arange(0, 4)
    return tl.load(p_row[:, None] + offs[None, :] * s_t,
                   mask=mask_d[:, None] & (offs < T)[None, :], other=0.0)


@triton.jit
def _split4(tile, BLOCK_D: tl.constexpr):
    """The 4 columns of a [BLOCK_D, 4] tile, in order."""
    even, odd = tl.split(tl.reshape(tile, [BLOCK_D, 2, 2]))
    c0, c2 = tl.split(even)
    c1, c3 = tl.split(odd)
    return c0, c1, c2, c3


@triton.jit
def _join4(c0, c1, c2, c3, BLOCK_D: tl.constexpr):
    """Inverse of `_split4`: 4 [BLOCK_D] columns back into a [BLOCK_D, 4] tile."""
    return tl.reshape(tl.join(tl.join(c0, c2), tl.join(c1, c3)), [BLOCK_D, 4])


@triton.jit
def _load_rows4(p_row, t, T, s_t, mask_n):
    """Rows t..t+3 of B or C ([BLOCK_N] each); steps past T read 0."""
    zero_n = tl.zeros(mask_n.shape, dtype=tl.int32)
    r0 = tl.load(p_row + t * s_t, mask=mask_n & (zero_n + t < T), other=0.0)
    r1 = tl.load(p_row + (t + 1) * s_t, mask=mask_n & (zero_n + t + 1 < T), other=0.0)
    r2 = tl.load(p_row + (t + 2) * s_t, mask=mask_n & (zero_n + t + 2 < T), other=0.0)
    r3 = tl.load(p_row + (t + 3) * s_t, mask=mask_n & (zero_n + t + 3 < T), other=0.0)
    return r0, r1, r2, r3


@triton.jit
def _decay_input(h, dl, dlu, b_A2, b_B):
    """One step of the recurrence: returns (decay a = exp(delta' A) [BLOCK_D, BLOCK_N], new h)."""
    a = tl.exp2(dl[:, None] * b_A2)
    return a, a * h + dlu[:, None] * b_B.to(tl.float32)[None, :]
