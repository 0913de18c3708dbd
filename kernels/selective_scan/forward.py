"""Mamba-1 selective scan as fused Triton kernels: forward here, backward in `backward.py`.

Discretisation exp(delta*A), the recurrence, the contraction with C and the D skip run in one
launch. Programs are parallel over (batch, block of channels); each keeps its [BLOCK_D, N] state in
float32 registers and walks time in one of two schedules:

- "sequential": one time step at a time. By default 4 steps per loop iteration (`unroll=4`) with
  the next 4 steps' inputs in flight, u/delta/y moved as [BLOCK_D, 4] tiles (8-byte vectors per
  row), and B, C first copied to [B, T, N] (`transpose_bc`) so a step's B and C are one
  contiguous row. `sp_tile` computes delta' = softplus(delta + bias) and delta'*u on those tiles,
  once per (channel, step), before they are split into the per-step columns (see README).
- "assoc": BLOCK_T steps per iteration, loaded as coalesced [BLOCK_D, BLOCK_T] tiles, scanned with
  `tl.associative_scan` over time and joined to the carried state.

`selective_scan` is differentiable: when an input requires grad it runs through
`SelectiveScanFn`, whose forward also saves the state every `ckpt_every` steps for the backward.
`FORWARD_VARIANTS` names the tuning points a GPU bench sweeps (bench/kernels_scan_bwd.py).
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from .._ssm_common import check_tensor
from .backward import (
    BACKWARD_VARIANTS,
    DEFAULT_CKPT_EVERY,
    check_backward_options,
    selective_scan_bwd,
)
from .common import (
    _decay_input,
    _delta_prep,
    _join4,
    _load_params,
    _load_rows4,
    _load_tile4,
    _split4,
    check_args,
    default_block_d,
    time_major_bc,
)

DEFAULT_SCHEDULE = "sequential"
# state sizes up to which the forward defaults to narrow one-warp programs (see _launch_forward)
SMALL_STATE = 16

# Forward tuning points for a GPU sweep (keyword arguments of `selective_scan`). `base` is the
# kernel as measured in bench/results/ssm_h200.json; `sp_tile` moves softplus(delta + bias) and
# delta*u from the per-step columns (where the compiled layout repeats them on each of the threads
# that hold one channel's N states: 16x at N=16) to the [BLOCK_D, 4] tiles, once per element.
FORWARD_VARIANTS: dict[str, dict[str, Any]] = {
    "base": {"sp_tile": False},
    "sp_tile": {"sp_tile": True},
    "sp_tile_bd_half_w2": {"sp_tile": True, "block_d_scale": 0.5, "num_warps": 2},
    "sp_tile_bd_double_w8": {"sp_tile": True, "block_d_scale": 2.0, "num_warps": 8},
    "sp_tile_w8": {"sp_tile": True, "num_warps": 8},
    "sp_tile_bd_quarter_w1": {"sp_tile": True, "block_d_scale": 0.25, "num_warps": 1},
    "plain_loop": {"unroll": 1, "transpose_bc": False},
}


@triton.jit
def _y_step(b_h, dl, dlu, u, b_B, b_C, b_A2, b_D):
    """One step: returns the new state [BLOCK_D, BLOCK_N] and y [BLOCK_D] (float32)."""
    _, b_h = _decay_input(b_h, dl, dlu, b_A2, b_B)
    b_y = tl.sum(b_h * b_C.to(tl.float32)[None, :], axis=1) + b_D * u.to(tl.float32)
    return b_h, b_y


@triton.jit
def _ss_fwd_kernel(
    u_ptr, delta_ptr, A_ptr, B_ptr, C_ptr, D_ptr, bias_ptr, y_ptr, ckpt_ptr,
    DIM, T, N, NCK,
    s_ub, s_ud, s_ut, s_bb, s_bn, s_bt,
    HAS_D: tl.constexpr, HAS_BIAS: tl.constexpr, SOFTPLUS: tl.constexpr,
    BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr, UNROLL: tl.constexpr,
    SP_TILE: tl.constexpr, CKPT: tl.constexpr,
):
    """Sequential schedule. Strides (s_u* for u, delta and y; s_b* for B and C) let one kernel read
    Mamba's channel-major [B, D, T] / [B, N, T] or time-major copies made by the wrapper.
    CKPT > 0 also stores the state after steps CKPT-1, 2*CKPT-1, ... (< T-1) to
    ckpt [B, NCK, DIM, N] float32 for the backward."""
    pid_d = tl.program_id(0)
    pid_b = tl.program_id(1).to(tl.int64)
    offs_d = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    offs_n = tl.arange(0, BLOCK_N)
    mask_d = offs_d < DIM
    mask_n = offs_n < N
    b_A2, b_D, b_bias = _load_params(A_ptr, D_ptr, bias_ptr, offs_d, offs_n, mask_d, mask_n, N,
                                     HAS_D, HAS_BIAS)
    row = pid_b * s_ub + offs_d.to(tl.int64) * s_ud
    p_u = u_ptr + row
    p_dl = delta_ptr + row
    p_y = y_ptr + row
    p_B = B_ptr + pid_b * s_bb + offs_n * s_bn
    p_C = C_ptr + pid_b * s_bb + offs_n * s_bn
    p_ck = ckpt_ptr + (pid_b * NCK * DIM + offs_d[:, None].to(tl.int64)) * N + offs_n[None, :]
    mask_dn = mask_d[:, None] & mask_n[None, :]
    b_h = tl.zeros([BLOCK_D, BLOCK_N], dtype=tl.float32)
    ty = y_ptr.dtype.element_ty
    if UNROLL == 1:
        # Software prefetch: step t+1's inputs are in flight while step t is computed.
        n_u = tl.load(p_u, mask=mask_d, other=0.0)
        n_dl = tl.load(p_dl, mask=mask_d, other=0.0)
        n_B = tl.load(p_B, mask=mask_n, other=0.0)
        n_C = tl.load(p_C, mask=mask_n, other=0.0)
        for t in range(T):
            c_u, c_dl, c_B, c_C = n_u, n_dl, n_B, n_C
            # Wraps to step 0 on the last iteration: a valid address whose values go unused.
            t_next = (t + 1) % T
            n_u = tl.load(p_u + t_next * s_ut, mask=mask_d, other=0.0)
            n_dl = tl.load(p_dl + t_next * s_ut, mask=mask_d, other=0.0)
            n_B = tl.load(p_B + t_next * s_bt, mask=mask_n, other=0.0)
            n_C = tl.load(p_C + t_next * s_bt, mask=mask_n, other=0.0)
            dl, dlu = _delta_prep(c_dl, c_u, b_bias, HAS_BIAS, SOFTPLUS)
            b_h, b_y = _y_step(b_h, dl, dlu, c_u, c_B, c_C, b_A2, b_D)
            tl.store(p_y + t * s_ut, b_y.to(ty), mask=mask_d)
            # Nested: the constexpr test must prune the branch before `% CKPT` is built.
            if CKPT > 0:  # noqa: SIM102
                if ((t + 1) % CKPT == 0) & (t + 1 < T):
                    tl.store(p_ck + ((t + 1) // CKPT - 1) * DIM * N, b_h, mask=mask_dn)
    else:
        # 4 steps per iteration, the next 4 steps' inputs in flight (16 independent loads). Steps
        # past T read 0; their state updates come after the last stored y and are never used.
        n_u = _load_tile4(p_u, 0, T, s_ut, mask_d)
        n_dl = _load_tile4(p_dl, 0, T, s_ut, mask_d)
        B0, B1, B2, B3 = _load_rows4(p_B, 0, T, s_bt, mask_n)
        C0, C1, C2, C3 = _load_rows4(p_C, 0, T, s_bt, mask_n)
        for t in range(0, T, 4):
            c_u, c_dl = n_u, n_dl
            cB0, cB1, cB2, cB3 = B0, B1, B2, B3
            cC0, cC1, cC2, cC3 = C0, C1, C2, C3
            n_u = _load_tile4(p_u, t + 4, T, s_ut, mask_d)
            n_dl = _load_tile4(p_dl, t + 4, T, s_ut, mask_d)
            B0, B1, B2, B3 = _load_rows4(p_B, t + 4, T, s_bt, mask_n)
            C0, C1, C2, C3 = _load_rows4(p_C, t + 4, T, s_bt, mask_n)
            if SP_TILE:
                t_dl, t_dlu = _delta_prep(c_dl, c_u, b_bias[:, None], HAS_BIAS, SOFTPLUS)
                dl0, dl1, dl2, dl3 = _split4(t_dl, BLOCK_D)
                dlu0, dlu1, dlu2, dlu3 = _split4(t_dlu, BLOCK_D)
                u0, u1, u2, u3 = _split4(c_u, BLOCK_D)
            else:
                u0, u1, u2, u3 = _split4(c_u, BLOCK_D)
                r0, r1, r2, r3 = _split4(c_dl, BLOCK_D)
                dl0, dlu0 = _delta_prep(r0, u0, b_bias, HAS_BIAS, SOFTPLUS)
                dl1, dlu1 = _delta_prep(r1, u1, b_bias, HAS_BIAS, SOFTPLUS)
                dl2, dlu2 = _delta_prep(r2, u2, b_bias, HAS_BIAS, SOFTPLUS)
                dl3, dlu3 = _delta_prep(r3, u3, b_bias, HAS_BIAS, SOFTPLUS)
            b_h, y0 = _y_step(b_h, dl0, dlu0, u0, cB0, cC0, b_A2, b_D)
            b_h, y1 = _y_step(b_h, dl1, dlu1, u1, cB1, cC1, b_A2, b_D)
            b_h, y2 = _y_step(b_h, dl2, dlu2, u2, cB2, cC2, b_A2, b_D)
            b_h, y3 = _y_step(b_h, dl3, dlu3, u3, cB3, cC3, b_A2, b_D)
            offs = t + tl.arange(0, 4)
            tl.store(p_y[:, None] + offs[None, :] * s_ut, _join4(y0, y1, y2, y3, BLOCK_D).to(ty),
                     mask=mask_d[:, None] & (offs < T)[None, :])
            # Nested: the constexpr test must prune the branch before `% CKPT` is built.
            if CKPT > 0:  # noqa: SIM102
                if ((t + 4) % CKPT == 0) & (t + 4 < T):
                    tl.store(p_ck + ((t + 4) // CKPT - 1) * DIM * N, b_h, mask=mask_dn)


@triton.jit
def _scan_combine(a1, b1, a2, b2):
    # (a1, b1) then (a2, b2): h -> a2 (a1 h + b1) + b2.
    return a1 * a2, b1 * a2 + b2


@triton.jit
def _ss_assoc_kernel(
    u_ptr, delta_ptr, A_ptr, B_ptr, C_ptr, D_ptr, bias_ptr, y_ptr,
    DIM, T, N,
    HAS_D: tl.constexpr, HAS_BIAS: tl.constexpr, SOFTPLUS: tl.constexpr,
    BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr,
):
    pid_d = tl.program_id(0)
    pid_b = tl.program_id(1).to(tl.int64)
    offs_d = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    offs_n = tl.arange(0, BLOCK_N)
    offs_tl = tl.arange(0, BLOCK_T)
    mask_d = offs_d < DIM
    mask_n = offs_n < N
    b_A2, b_D, b_bias = _load_params(A_ptr, D_ptr, bias_ptr, offs_d, offs_n, mask_d, mask_n, N,
                                     HAS_D, HAS_BIAS)
    row = (pid_b * DIM + offs_d.to(tl.int64)) * T
    p_B = B_ptr + pid_b * N * T + offs_n * T
    p_C = C_ptr + pid_b * N * T + offs_n * T
    is_last = (offs_tl == BLOCK_T - 1)[None, None, :]
    b_h = tl.zeros([BLOCK_D, BLOCK_N], dtype=tl.float32)
    for t0 in range(0, T, BLOCK_T):
        offs_t = t0 + offs_tl
        mask_t = offs_t < T
        m_dt = mask_d[:, None] & mask_t[None, :]
        m_nt = mask_n[:, None] & mask_t[None, :]
        b_u = tl.load(u_ptr + row[:, None] + offs_t[None, :], mask=m_dt, other=0.0).to(tl.float32)
        b_dl = tl.load(delta_ptr + row[:, None] + offs_t[None, :], mask=m_dt, other=0.0)
        b_dl, b_dlu = _delta_prep(b_dl, b_u, b_bias[:, None], HAS_BIAS, SOFTPLUS)
        # Steps past T get delta = 0: decay 1 and no input, so the last column is the true state.
        b_dl = tl.where(m_dt, b_dl, 0.0)
        b_Bt = tl.load(p_B[:, None] + offs_t[None, :], mask=m_nt, other=0.0).to(tl.float32)
        b_Ct = tl.load(p_C[:, None] + offs_t[None, :], mask=m_nt, other=0.0).to(tl.float32)
        b_a = tl.exp2(b_dl[:, None, :] * b_A2[:, :, None])
        b_x = b_dlu[:, None, :] * b_Bt[None, :, :]
        b_acum, b_hloc = tl.associative_scan((b_a, b_x), axis=2, combine_fn=_scan_combine)
        b_hs = b_hloc + b_acum * b_h[:, :, None]
        b_y = tl.sum(b_hs * b_Ct[None, :, :], axis=1) + b_D[:, None] * b_u
        tl.store(y_ptr + row[:, None] + offs_t[None, :], b_y.to(y_ptr.dtype.element_ty), mask=m_dt)
        b_h = tl.sum(tl.where(is_last, b_hs, 0.0), axis=2)


def _launch_forward(
    u: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, Bm: torch.Tensor, Cm: torch.Tensor,
    Dskip: torch.Tensor | None, delta_bias: torch.Tensor | None, delta_softplus: bool,
    out: torch.Tensor, *, schedule: str, block_d: int | None, block_d_scale: float | None,
    block_t: int, num_warps: int | None, transpose_bc: bool, time_major: bool, unroll: int,
    sp_tile: bool, ckpt_every: int = 0,
) -> tuple[torch.Tensor | None, tuple[torch.Tensor, torch.Tensor] | None]:
    """Run one forward kernel into `out` (arguments already checked). Returns the checkpoints
    ([B, NCK, D, N] float32, or None when ckpt_every == 0) and the [B, T, N] copies of B and C
    when they were made (the backward reuses them)."""
    batch, dim, steps = u.shape
    n = A.shape[1]
    block_n = triton.next_power_of_2(n)
    flags = {"HAS_D": Dskip is not None, "HAS_BIAS": delta_bias is not None,
             "SOFTPLUS": bool(delta_softplus)}
    # Absent optional tensors: any valid pointer; the constexpr flags keep them unread.
    opt = (Dskip if Dskip is not None else A, delta_bias if delta_bias is not None else A)
    if schedule == "assoc":
        bt = triton.next_power_of_2(block_t)
        bd = triton.next_power_of_2(block_d or max(1, min(dim, max(2, 4096 // (block_n * bt)))))
        _ss_assoc_kernel[(triton.cdiv(dim, bd), batch)](
            u, delta, A, Bm, Cm, *opt, out, dim, steps, n,
            **flags, BLOCK_D=bd, BLOCK_N=block_n, BLOCK_T=bt, num_warps=num_warps or 4,
        )
        return None, None
    if block_d_scale is None or num_warps is None:
        # small states with softplus+bias: a quarter of the channels per program and one warp
        # measured fastest on an H200 at N=16 (0.82 vs 0.92 ms at D=2048; at N=64 the wide
        # default wins, 2.60 vs 3.70 ms; bench/results/scan_bwd_h200.json)
        narrow = n <= SMALL_STATE and bool(sp_tile) and block_d is None
        block_d_scale = block_d_scale if block_d_scale is not None else (0.25 if narrow else 1.0)
        num_warps = num_warps if num_warps is not None else (1 if narrow else 4)
    bd = default_block_d(dim, n, block_d)
    if block_d is None and block_d_scale != 1.0:
        bd = max(1, triton.next_power_of_2(int(bd * block_d_scale)))
    bk, ck, b_strides, bc = Bm, Cm, (n * steps, steps, 1), None
    if transpose_bc or time_major:
        bc = bk, ck = time_major_bc(Bm, Cm)
        b_strides = (n * steps, 1, n)
    uk, dk, yk, u_strides = u, delta, out, (dim * steps, steps, 1)
    if time_major:
        uk = u.transpose(1, 2).contiguous()
        dk = delta.transpose(1, 2).contiguous()
        yk = torch.empty_like(uk)
        u_strides = (dim * steps, 1, dim)
    nck = triton.cdiv(steps, ckpt_every) - 1 if ckpt_every else 0
    ckpt = (torch.empty(batch, nck, dim, n, device=u.device, dtype=torch.float32)
            if ckpt_every else None)
    _ss_fwd_kernel[(triton.cdiv(dim, bd), batch)](
        uk, dk, A, bk, ck, *opt, yk, ckpt if ckpt is not None and nck else A,
        dim, steps, n, nck, *u_strides, *b_strides,
        **flags, BLOCK_D=bd, BLOCK_N=block_n, UNROLL=unroll, SP_TILE=bool(sp_tile),
        CKPT=ckpt_every, num_warps=num_warps or 4,
    )
    if time_major:
        out.copy_(yk.transpose(1, 2))
    return ckpt, bc


class SelectiveScanFn(torch.autograd.Function):
    """y = selective_scan(...) with its backward (`backward.selective_scan_bwd`)."""

    @staticmethod
    def forward(ctx, u, delta, A, Bm, Cm, Dskip, delta_bias, delta_softplus, fwd, bwd):
        out = torch.empty_like(u)
        ckpt_every = bwd.get("ckpt_every", DEFAULT_CKPT_EVERY)
        ckpt, bc = _launch_forward(u, delta, A, Bm, Cm, Dskip, delta_bias, delta_softplus, out,
                                   **fwd, ckpt_every=ckpt_every)
        bt, ct = bc if bc is not None else time_major_bc(Bm, Cm)
        ctx.save_for_backward(u, delta, A, bt, ct, Dskip, delta_bias, ckpt)
        ctx.delta_softplus = delta_softplus
        ctx.bwd = {k: v for k, v in bwd.items() if k != "ckpt_every"}
        ctx.ckpt_every = ckpt_every
        ctx.bc_dtypes = (Bm.dtype, Cm.dtype)
        return out

    @staticmethod
    def backward(ctx, dy):
        u, delta, A, bt, ct, Dskip, delta_bias, ckpt = ctx.saved_tensors
        grads = selective_scan_bwd(
            u, delta, A, bt, ct, Dskip, delta_bias, ctx.delta_softplus, dy.contiguous(), ckpt,
            ckpt_every=ctx.ckpt_every, bc_time_major=True, bc_dtypes=ctx.bc_dtypes, **ctx.bwd,
        )
        du, ddelta, dA, dB, dC, dD, dbias = grads
        return du, ddelta, dA, dB, dC, dD, dbias, None, None, None


def selective_scan(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    Dskip: torch.Tensor | None = None,
    delta_bias: torch.Tensor | None = None,
    delta_softplus: bool = False,
    *,
    schedule: str = DEFAULT_SCHEDULE,
    block_d: int | None = None,
    block_d_scale: float | None = None,
    block_t: int = 16,
    num_warps: int | None = None,
    transpose_bc: bool = True,
    time_major: bool = False,
    unroll: int = 4,
    sp_tile: bool | None = None,
    out: torch.Tensor | None = None,
    backward: dict[str, Any] | None = None,
) -> torch.Tensor:
    """Selective scan forward; same math and signature as `selective_scan_reference`.

    u, delta: [B, D, T] (fp32/fp16/bf16); A: [D, N] fp32; Bm, Cm: [B, N, T]; Dskip, delta_bias:
    [D] fp32. Returns y [B, D, T] in u's dtype. `out` (optional, same shape and dtype) receives y:
    tests pass a NaN-filled buffer so unwritten elements show. The state is float32 throughout.

    Differentiable: when grad mode is on and an input requires grad, the call runs through
    `SelectiveScanFn` (sequential schedule only; `out` must then be None) and `backward` holds
    the backward's keyword options (`BACKWARD_VARIANTS`, `ckpt_every`). Otherwise no checkpoint
    is written and the plain forward kernel runs.

    Sequential schedule only: `transpose_bc` copies B and C to [B, T, N] first (B*N*T elements,
    small) so each step reads one contiguous row instead of N strided elements; `time_major` also
    copies u and delta to [B, T, D] and y back (3 extra passes over the activations), making every
    per-step access coalesced. The copies are part of the call and of its measured time.
    `unroll=4` runs 4 steps per loop iteration with the next 4 steps' loads in flight and moves
    u, delta and y as [BLOCK_D, 4] tiles; `sp_tile` (with unroll=4) prepares softplus(delta +
    bias) and delta*u on those tiles (default: when there is a bias or softplus, whose per-step
    cost it cuts; without them it only adds a layout conversion). `block_d_scale` scales the
    default channel block.
    """
    check_args(u, delta, A, Bm, Cm, Dskip, delta_bias)
    if schedule not in ("sequential", "assoc"):
        raise ValueError(f"expected schedule 'sequential' or 'assoc', got {schedule!r}")
    if unroll not in (1, 4):
        raise ValueError(f"expected unroll 1 or 4, got {unroll}")
    fwd = {"schedule": schedule, "block_d": block_d, "block_d_scale": block_d_scale,
           "block_t": block_t, "num_warps": num_warps, "transpose_bc": transpose_bc,
           "time_major": time_major, "unroll": unroll,
           "sp_tile": (delta_softplus or delta_bias is not None) if sp_tile is None else sp_tile}
    inputs = (u, delta, A, Bm, Cm, Dskip, delta_bias)
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in inputs):
        if schedule != "sequential":
            raise ValueError(f"expected schedule 'sequential' when gradients are required, "
                             f"got {schedule!r}")
        if out is not None:
            raise ValueError("expected out=None when gradients are required, got a tensor")
        check_backward_options(backward or {})
        return SelectiveScanFn.apply(*inputs, bool(delta_softplus), fwd, dict(backward or {}))
    if out is None:
        out = torch.empty_like(u)
    else:
        check_tensor("out", out, tuple(u.shape), (u.dtype,), u.device)
    _launch_forward(*inputs, bool(delta_softplus), out, **fwd)
    return out


__all__ = ["BACKWARD_VARIANTS", "FORWARD_VARIANTS", "SelectiveScanFn", "selective_scan"]
