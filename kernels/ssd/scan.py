"""SSD forward in the scan schedule: the chunked kernel's math run as a recurrence over time.

One program per (batch, head, block of the head dimension P) keeps its [BLOCK_P, N] slice of the
state in float32 registers and walks the sequence one step at a time: a scalar decay exp(dt A), a
rank-1 update dt x B^T, and the contraction with C. No tensor cores: this is the schedule claims
A1/A2 compare against `chunked.ssd_chunked`. Per-step loads are contiguous (x, B, C are time-major)
and the next step's inputs are loaded before the current step's arithmetic, so the load latency
overlaps the update.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._args import check_ssd_args


@triton.jit
def _ssd_scan_kernel(
    x_ptr, dt_ptr, A_ptr, B_ptr, C_ptr, D_ptr, y_ptr,
    T, H, P, N, HEADS_PER_GROUP,
    HAS_D: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid_p = tl.program_id(0)
    pid_bh = tl.program_id(1)
    i_b = (pid_bh // H).to(tl.int64)
    i_h = pid_bh % H
    G = H // HEADS_PER_GROUP
    i_g = i_h // HEADS_PER_GROUP
    offs_p = pid_p * BLOCK_P + tl.arange(0, BLOCK_P)
    offs_n = tl.arange(0, BLOCK_N)
    mask_p = offs_p < P
    mask_n = offs_n < N
    b_a = tl.load(A_ptr + i_h).to(tl.float32) * 1.4426950408889634
    if HAS_D:
        b_D = tl.load(D_ptr + i_h).to(tl.float32)
    p_x = x_ptr + i_b * T * H * P + i_h * P + offs_p
    p_y = y_ptr + i_b * T * H * P + i_h * P + offs_p
    p_dt = dt_ptr + i_b * T * H + i_h
    p_B = B_ptr + i_b * T * G * N + i_g * N + offs_n
    p_C = C_ptr + i_b * T * G * N + i_g * N + offs_n
    b_h = tl.zeros([BLOCK_P, BLOCK_N], dtype=tl.float32)
    # Software prefetch: step t+1's inputs are in flight while step t is computed.
    n_x = tl.load(p_x, mask=mask_p, other=0.0)
    n_dt = tl.load(p_dt)
    n_B = tl.load(p_B, mask=mask_n, other=0.0)
    n_C = tl.load(p_C, mask=mask_n, other=0.0)
    for t in range(T):
        b_x = n_x.to(tl.float32)
        b_dt = n_dt.to(tl.float32)
        b_B = n_B.to(tl.float32)
        b_C = n_C.to(tl.float32)
        # Wraps to step 0 on the last iteration: a valid address whose values go unused.
        t_next = (t + 1) % T
        n_x = tl.load(p_x + t_next * H * P, mask=mask_p, other=0.0)
        n_dt = tl.load(p_dt + t_next * H)
        n_B = tl.load(p_B + t_next * G * N, mask=mask_n, other=0.0)
        n_C = tl.load(p_C + t_next * G * N, mask=mask_n, other=0.0)
        b_h = b_h * tl.exp2(b_dt * b_a) + (b_dt * b_x)[:, None] * b_B[None, :]
        b_y = tl.sum(b_h * b_C[None, :], axis=1)
        if HAS_D:
            b_y += b_D * b_x
        tl.store(p_y + t * H * P, b_y.to(y_ptr.dtype.element_ty), mask=mask_p)


def ssd_scan(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    Dskip: torch.Tensor | None = None,
    *,
    block_p: int | None = None,
    num_warps: int = 1,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """SSD by recurrence over time. x [B, T, H, P]; dt [B, T, H] (>0, already softplus'ed);
    A [H] fp32 (<0); Bm, Cm [B, T, G, N]; Dskip [H] fp32. Returns y [B, T, H, P] (x's dtype).

    `out` (optional) receives y; tests pass a NaN-filled buffer so unwritten elements show.
    Default tiling (measured on the H200): one warp per program, BLOCK_P = 16 rows of the state
    unless that leaves fewer than 1024 programs, then 8, then 4.
    """
    s = check_ssd_args(x, dt, A, Bm, Cm, Dskip, out)
    if out is None:
        out = torch.empty_like(x)
    if block_p is None:
        block_p = 4
        for cand in (16, 8):
            if s.batch * s.heads * triton.cdiv(s.headdim, cand) >= 1024:
                block_p = cand
                break
    bp = min(triton.next_power_of_2(block_p), triton.next_power_of_2(s.headdim))
    grid = (triton.cdiv(s.headdim, bp), s.batch * s.heads)
    _ssd_scan_kernel[grid](
        x, dt, A, Bm, Cm, Dskip if Dskip is not None else A, out,
        s.steps, s.heads, s.headdim, s.dstate, s.heads // s.groups,
        HAS_D=Dskip is not None, BLOCK_P=bp, BLOCK_N=triton.next_power_of_2(s.dstate),
        num_warps=num_warps,
    )
    return out
