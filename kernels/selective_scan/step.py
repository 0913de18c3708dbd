"""Mamba-1 selective state update for one token (decode), as one Triton kernel.

Programs are parallel over (block of channels, batch). Each loads its [BLOCK_D, N] slice of the
float32 state, applies dt' = softplus(dt + bias), h = exp(dt' A) h + dt' x B, writes h back in
place and y = C . h + D x. The step is memory-bound: the state is read and written once
(README: decode step).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .._ssm_common import (
    FLOAT_DTYPES,
    _softplus,
    check_device,
    check_optional,
    check_state,
    check_tensor,
)


@triton.jit
def _mamba1_step_kernel(
    state_ptr, x_ptr, dt_ptr, A_ptr, B_ptr, C_ptr, D_ptr, bias_ptr, y_ptr,
    DIM, N,
    HAS_D: tl.constexpr, HAS_BIAS: tl.constexpr, SOFTPLUS: tl.constexpr,
    BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid_d = tl.program_id(0)
    pid_b = tl.program_id(1).to(tl.int64)
    offs_d = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    offs_n = tl.arange(0, BLOCK_N)
    mask_d = offs_d < DIM
    mask_n = offs_n < N
    mask = mask_d[:, None] & mask_n[None, :]
    row = pid_b * DIM + offs_d
    p_state = state_ptr + row[:, None] * N + offs_n[None, :]
    h = tl.load(p_state, mask=mask, other=0.0)
    x = tl.load(x_ptr + row, mask=mask_d, other=0.0).to(tl.float32)
    dt = tl.load(dt_ptr + row, mask=mask_d, other=0.0).to(tl.float32)
    if HAS_BIAS:
        dt += tl.load(bias_ptr + offs_d, mask=mask_d, other=0.0).to(tl.float32)
    if SOFTPLUS:
        dt = _softplus(dt)
    A = tl.load(A_ptr + offs_d[:, None] * N + offs_n[None, :], mask=mask, other=0.0)
    Bv = tl.load(B_ptr + pid_b * N + offs_n, mask=mask_n, other=0.0).to(tl.float32)
    Cv = tl.load(C_ptr + pid_b * N + offs_n, mask=mask_n, other=0.0).to(tl.float32)
    h = tl.exp(dt[:, None] * A.to(tl.float32)) * h + (dt * x)[:, None] * Bv[None, :]
    tl.store(p_state, h, mask=mask)
    y = tl.sum(h * Cv[None, :], axis=1)
    if HAS_D:
        y += tl.load(D_ptr + offs_d, mask=mask_d, other=0.0).to(tl.float32) * x
    tl.store(y_ptr + row, y.to(y_ptr.dtype.element_ty), mask=mask_d)


def mamba1_step(
    state: torch.Tensor,
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    D: torch.Tensor | None = None,
    dt_bias: torch.Tensor | None = None,
    dt_softplus: bool = True,
    block_d: int | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """One decode step; `state` is updated in place and y returned.

    state: [B, DIM, N] float32, contiguous; x, dt: [B, DIM] (fp32/fp16/bf16); A: [DIM, N];
    Bm, Cm: [B, N]; D, dt_bias: [DIM] or None.
    `out` (x's shape and dtype) receives y when given. Returns y [B, DIM] in x's dtype.
    """
    if not isinstance(x, torch.Tensor) or x.dim() != 2:
        raise ValueError(f"expected x of shape [B, DIM], got {getattr(x, 'shape', type(x))}")
    batch, dim = x.shape
    device = check_device(x)
    check_tensor("x", x, [batch, dim], FLOAT_DTYPES, device)
    check_tensor("A", A, [dim, None], FLOAT_DTYPES, device)
    n = A.shape[1]
    check_state(state, [batch, dim, n], device)
    check_tensor("dt", dt, [batch, dim], FLOAT_DTYPES, device)
    check_tensor("Bm", Bm, [batch, n], FLOAT_DTYPES, device)
    check_tensor("Cm", Cm, [batch, n], FLOAT_DTYPES, device)
    check_optional("D", D, [dim], device)
    check_optional("dt_bias", dt_bias, [dim], device)
    if block_d is not None and (block_d < 1 or block_d & (block_d - 1)):
        raise ValueError(f"expected block_d a power of two, got {block_d}")
    if out is not None:
        check_tensor("out", out, list(x.shape), (x.dtype,), device)
    y = torch.empty_like(x) if out is None else out
    block_n = triton.next_power_of_2(n)
    # ~2K state elements per program keeps registers in bounds at N=16 and N=128 alike
    bd = block_d or max(1, min(triton.next_power_of_2(dim), 2048 // block_n))
    grid = (triton.cdiv(dim, bd), batch)
    _mamba1_step_kernel[grid](
        state, x, dt, A, Bm, Cm, D if D is not None else x, dt_bias if dt_bias is not None else x,
        y, dim, n,
        HAS_D=D is not None, HAS_BIAS=dt_bias is not None, SOFTPLUS=dt_softplus,
        BLOCK_D=bd, BLOCK_N=block_n,
    )
    return y
