"""Mamba-2 (SSD) state update for one token (decode), as one Triton kernel.

Programs are parallel over (block of head channels P, batch x head). Head h of H reads group
g = h // (H / G) of B and C. Each loads its [BLOCK_P, N] slice of the float32 state, applies
dt' = softplus(dt + bias) (one scalar per head), H = exp(dt' A_h) H + dt' x B^T, writes H back in
place and y = H C + D_h x. Memory-bound: the state is read and written once (README: decode
step).
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
def _mamba2_step_kernel(
    state_ptr, x_ptr, dt_ptr, A_ptr, B_ptr, C_ptr, D_ptr, bias_ptr, y_ptr,
    H, P, N, G, REP,
    HAS_D: tl.constexpr, HAS_BIAS: tl.constexpr, SOFTPLUS: tl.constexpr,
    BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid_p = tl.program_id(0)
    pid_bh = tl.program_id(1).to(tl.int64)
    b = pid_bh // H
    head = pid_bh % H
    g = head // REP
    offs_p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    offs_n = tl.arange(0, BLOCK_N)
    mask_p = offs_p < P
    mask_n = offs_n < N
    mask = mask_p[:, None] & mask_n[None, :]
    row = pid_bh * P + offs_p
    p_state = state_ptr + row[:, None] * N + offs_n[None, :]
    st = tl.load(p_state, mask=mask, other=0.0)
    x = tl.load(x_ptr + row, mask=mask_p, other=0.0).to(tl.float32)
    dt = tl.load(dt_ptr + pid_bh).to(tl.float32)
    if HAS_BIAS:
        dt += tl.load(bias_ptr + head).to(tl.float32)
    if SOFTPLUS:
        dt = _softplus(dt)
    decay = tl.exp(dt * tl.load(A_ptr + head).to(tl.float32))
    bc = (b * G + g) * N + offs_n
    Bv = tl.load(B_ptr + bc, mask=mask_n, other=0.0).to(tl.float32)
    Cv = tl.load(C_ptr + bc, mask=mask_n, other=0.0).to(tl.float32)
    st = decay * st + (dt * x)[:, None] * Bv[None, :]
    tl.store(p_state, st, mask=mask)
    y = tl.sum(st * Cv[None, :], axis=1)
    if HAS_D:
        y += tl.load(D_ptr + head).to(tl.float32) * x
    tl.store(y_ptr + row, y.to(y_ptr.dtype.element_ty), mask=mask_p)


def mamba2_step(
    state: torch.Tensor,
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    D: torch.Tensor | None = None,
    dt_bias: torch.Tensor | None = None,
    dt_softplus: bool = True,
    block_p: int | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """One decode step; `state` is updated in place and y returned.

    state: [B, H, P, N] float32, contiguous; x: [B, H, P] (fp32/fp16/bf16); dt: [B, H];
    A, D, dt_bias: [H] (D, dt_bias may be None); Bm, Cm: [B, G, N] with G dividing H.

    `out` (x's shape and dtype) receives y when given. Returns y [B, H, P] in x's dtype.
    """
    if not isinstance(x, torch.Tensor) or x.dim() != 3:
        raise ValueError(f"expected x of shape [B, H, P], got {getattr(x, 'shape', type(x))}")
    batch, heads, p = x.shape
    device = check_device(x)
    check_tensor("x", x, [batch, heads, p], FLOAT_DTYPES, device)
    check_tensor("Bm", Bm, [batch, None, None], FLOAT_DTYPES, device)
    groups, n = Bm.shape[1], Bm.shape[2]
    if heads % groups:
        raise ValueError(f"expected groups dividing heads, got {groups} groups for {heads} heads")
    check_tensor("Cm", Cm, [batch, groups, n], FLOAT_DTYPES, device)
    check_state(state, [batch, heads, p, n], device)
    check_tensor("dt", dt, [batch, heads], FLOAT_DTYPES, device)
    check_tensor("A", A, [heads], FLOAT_DTYPES, device)
    check_optional("D", D, [heads], device)
    check_optional("dt_bias", dt_bias, [heads], device)
    if block_p is not None and (block_p < 1 or block_p & (block_p - 1)):
        raise ValueError(f"expected block_p a power of two, got {block_p}")
    if out is not None:
        check_tensor("out", out, list(x.shape), (x.dtype,), device)
    y = torch.empty_like(x) if out is None else out
    block_n = triton.next_power_of_2(n)
    bp = block_p or max(1, min(triton.next_power_of_2(p), 4096 // block_n))
    grid = (triton.cdiv(p, bp), batch * heads)
    _mamba2_step_kernel[grid](
        state, x, dt, A, Bm, Cm, D if D is not None else x, dt_bias if dt_bias is not None else x,
        y, heads, p, n, groups, heads // groups,
        HAS_D=D is not None, HAS_BIAS=dt_bias is not None, SOFTPLUS=dt_softplus,
        BLOCK_P=bp, BLOCK_N=block_n,
    )
    return y
