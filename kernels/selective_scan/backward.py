"""Mamba-1 selective scan backward as one Triton kernel (plus torch sums of per-program partials).

Forward (per channel d, state n, step t): delta'_t = softplus(delta_t + bias) (each optional),
a_t = exp(delta'_t A), h_t = a_t h_{t-1} + delta'_t u_t B_t, y_t = sum_n C_t h_t + D u_t.
Backward, walking time in reverse with dh_t = C_t dy_t + a_{t+1} dh_{t+1}, g_t = dh_t a_t h_{t-1}:
    ddelta'_t = sum_n (A g_t + dh_t u_t B_t)        du_t = D dy_t + delta'_t sum_n dh_t B_t
    dA += sum_{b,t} delta'_t g_t                     dD += sum_{b,t} dy_t u_t
    dB_t = sum_d dh_t delta'_t u_t                   dC_t = sum_d dy_t h_t
    ddelta_t = ddelta'_t softplus'(delta_t + bias)   dbias += sum_{b,t} ddelta_t

The reverse walk needs h_{t-1} at every step. It is never rebuilt backwards by division (a_t
underflows to 0 for large delta'*|A|). The forward stores the state every `ckpt_every` steps
(K; [B, T/K - 1, D, N] float32); the backward takes the chunks last to first and per chunk
 1. recomputes the chunk's states from its checkpoint, storing every 4th one into a per-program
    scratch of K/4 states ([BLOCK_D, N] each; 64 KiB at K=64 and 1024 state elements: L2-resident),
 2. walks the chunk's 4-step groups last to first: reloads the group's first state, recomputes the
    4 states and decays in registers, and runs the 4 reverse steps.
So each state element costs 2 exp2 per step in the backward (one per recompute) and the scratch
moves 8 bytes per element every 4 steps. dB and dC (sums over channels) are written per program
([B, D/BLOCK_D, T, N] float32) and summed by torch (or, with `atomic_bc`, added atomically into
one [B, T, N]); dA, dD, dbias per batch row ([B, D, N], [B, D]) and summed over the batch: by
default deterministic, no atomics.
"""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

from .._ssm_common import check_tensor
from .common import (
    _decay_input,
    _delta_prep,
    _join4,
    _load_params,
    _load_rows4,
    _load_tile4,
    _softplus_grad,
    _split4,
    check_args,
    default_block_d,
    time_major_bc,
)

# Steps between saved states. The scratch of one program is K/4 states; at K=64 and 1024 state
# elements per program that is 64 KiB, so the scratch of all resident programs stays in L2.
DEFAULT_CKPT_EVERY = 64

# Default tiling, the fastest of BACKWARD_VARIANTS on an H200 at every measured shape (B=8,
# T=4096, D in {2048, 4096}, N in {16, 64}, with and without softplus+bias; 0.55-0.75x the time
# of the old 1024-element, 4-warp default): a quarter of the channels per program and one warp,
# so the per-step sums over channels stay inside the warp (bench/results/scan_bwd_h200.json).
DEFAULT_BWD_BLOCK_D_SCALE = 0.25
DEFAULT_BWD_NUM_WARPS = 1

# Backward tuning points for a GPU sweep (keyword arguments of `selective_scan_bwd`, or the
# `backward=` dict of `selective_scan`). `ckpt_every` also sets what the forward saves.
BACKWARD_VARIANTS: dict[str, dict[str, Any]] = {
    "base": {},
    "wide_w4": {"block_d_scale": 1.0, "num_warps": 4},
    "ckpt32": {"ckpt_every": 32},
    "ckpt128": {"ckpt_every": 128},
    "bd_half_w2": {"block_d_scale": 0.5, "num_warps": 2},
    "bd_half_w4": {"block_d_scale": 0.5, "num_warps": 4},
    "bd_double_w8": {"block_d_scale": 2.0, "num_warps": 8},
    "w8": {"block_d_scale": 1.0, "num_warps": 8},
    # One warp per program: the per-step sums over channels (dB, dC) and over states (du,
    # ddelta) stay inside the warp (no shared-memory round trip and barrier per step), at the
    # price of 4x more dB/dC partial rows.
    "bd_quarter_w1": {"block_d_scale": 0.25, "num_warps": 1},  # the default since the H200 run
    # dB, dC added atomically (not bitwise reproducible) instead of per-program partials: at
    # N=64 the partials are 2 x 2 x B T N D/BLOCK_D x 4 bytes, most of the backward's traffic.
    "atomic_bc": {"atomic_bc": True},
}


@triton.jit
def _prep4(p_u, p_dl, t0, T, mask_d, b_bias, BLOCK_D: tl.constexpr,
           HAS_BIAS: tl.constexpr, SOFTPLUS: tl.constexpr):
    """Steps t0..t0+3: raw u and delta tiles [BLOCK_D, 4], and the columns of delta' and
    delta'*u computed once per (channel, step) on the tiles."""
    t_u = _load_tile4(p_u, t0, T, 1, mask_d)
    t_dl = _load_tile4(p_dl, t0, T, 1, mask_d)
    dl, dlu = _delta_prep(t_dl, t_u, b_bias[:, None], HAS_BIAS, SOFTPLUS)
    dl0, dl1, dl2, dl3 = _split4(dl, BLOCK_D)
    dlu0, dlu1, dlu2, dlu3 = _split4(dlu, BLOCK_D)
    return t_u, t_dl, dl0, dl1, dl2, dl3, dlu0, dlu1, dlu2, dlu3


@triton.jit
def _bwd_step(r, a, h_prev, h, dy, dl, dlu, u, b_B, b_C, b_A2, dA_acc):
    """Reverse step t. r = a_{t+1} dh_{t+1} [BLOCK_D, BLOCK_N]; a, h_prev, h: a_t, h_{t-1}, h_t.
    Returns r for step t-1, dA_acc, ddelta'_t and delta'_t sum_n dh B ([BLOCK_D]), dB_t and dC_t
    summed over this program's channels ([BLOCK_N])."""
    dh = r + dy[:, None] * b_C.to(tl.float32)[None, :]
    g = dh * a * h_prev
    dA_acc += dl[:, None] * g
    s_b = tl.sum(dh * b_B.to(tl.float32)[None, :], axis=1)
    # b_A2 = A log2(e): sum_n A g = ln(2) sum_n A2 g.
    ddl = tl.sum(g * b_A2, axis=1) * 0.6931471805599453 + u * s_b
    d_b = tl.sum(dh * dlu[:, None], axis=0)
    d_c = tl.sum(h * dy[:, None], axis=0)
    return a * dh, dA_acc, ddl, dl * s_b, d_b, d_c


@triton.jit
def _store_rows4(p_row, t0, T, N, mask_n, r0, r1, r2, r3, ATOMIC: tl.constexpr):
    """Rows t0..t0+3 ([BLOCK_N] each, stride N) stored, or added atomically; steps past T
    skipped."""
    zero_n = tl.zeros(r0.shape, dtype=tl.int32)
    if ATOMIC:
        tl.atomic_add(p_row + t0 * N, r0, mask=mask_n & (zero_n + t0 < T), sem="relaxed")
        tl.atomic_add(p_row + (t0 + 1) * N, r1, mask=mask_n & (zero_n + t0 + 1 < T),
                      sem="relaxed")
        tl.atomic_add(p_row + (t0 + 2) * N, r2, mask=mask_n & (zero_n + t0 + 2 < T),
                      sem="relaxed")
        tl.atomic_add(p_row + (t0 + 3) * N, r3, mask=mask_n & (zero_n + t0 + 3 < T),
                      sem="relaxed")
    else:
        tl.store(p_row + t0 * N, r0, mask=mask_n & (zero_n + t0 < T))
        tl.store(p_row + (t0 + 1) * N, r1, mask=mask_n & (zero_n + t0 + 1 < T))
        tl.store(p_row + (t0 + 2) * N, r2, mask=mask_n & (zero_n + t0 + 2 < T))
        tl.store(p_row + (t0 + 3) * N, r3, mask=mask_n & (zero_n + t0 + 3 < T))


@triton.jit
def _ss_bwd_kernel(
    u_ptr, delta_ptr, A_ptr, B_ptr, C_ptr, D_ptr, bias_ptr, dy_ptr, ckpt_ptr, scratch_ptr,
    du_ptr, ddelta_ptr, dA_ptr, dB_ptr, dC_ptr, dD_ptr, dbias_ptr,
    DIM, T, N, NCK,
    HAS_D: tl.constexpr, HAS_BIAS: tl.constexpr, SOFTPLUS: tl.constexpr,
    BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr, CHUNK: tl.constexpr,
    ATOMIC_BC: tl.constexpr,
):
    """u, delta, dy, du, ddelta: [B, DIM, T]; B, C: [B, T, N] (time-major copies); ckpt:
    [B, NCK, DIM, N]; scratch: [programs, CHUNK/4, BLOCK_D, BLOCK_N]; dB, dC partials:
    [B, programs along DIM, T, N], or with ATOMIC_BC one zeroed [B, 1, T, N] row that every
    program adds into; dA [B, DIM, N], dD and dbias [B, DIM] partials."""
    pid_d = tl.program_id(0)
    pid_b = tl.program_id(1).to(tl.int64)
    prog = pid_b * tl.num_programs(0) + pid_d
    offs_d = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    offs_n = tl.arange(0, BLOCK_N)
    mask_d = offs_d < DIM
    mask_n = offs_n < N
    mask_dn = mask_d[:, None] & mask_n[None, :]
    b_A2, b_D, b_bias = _load_params(A_ptr, D_ptr, bias_ptr, offs_d, offs_n, mask_d, mask_n, N,
                                     HAS_D, HAS_BIAS)
    row = (pid_b * DIM + offs_d.to(tl.int64)) * T
    p_u = u_ptr + row
    p_dl = delta_ptr + row
    p_dy = dy_ptr + row
    p_B = B_ptr + pid_b * T * N + offs_n
    p_C = C_ptr + pid_b * T * N + offs_n
    # dB/dC row: this program's partial, or (atomic) the batch row all programs add into.
    p_part = (pid_b if ATOMIC_BC else prog) * T * N + offs_n
    p_ck = ckpt_ptr + (pid_b * NCK * DIM + offs_d[:, None].to(tl.int64)) * N + offs_n[None, :]
    state = BLOCK_D * BLOCK_N
    p_scr = (scratch_ptr + prog * (CHUNK // 4) * state
             + tl.arange(0, BLOCK_D)[:, None] * BLOCK_N + offs_n[None, :])
    dA_acc = tl.zeros([BLOCK_D, BLOCK_N], dtype=tl.float32)
    dD_acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    dbias_acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    r = tl.zeros([BLOCK_D, BLOCK_N], dtype=tl.float32)
    n_chunks = tl.cdiv(T, CHUNK)
    for ci in range(n_chunks):
        c = n_chunks - 1 - ci
        t_c = c * CHUNK
        # Chunk 0 starts from the zero state; chunk c > 0 from the state saved after step t_c-1.
        # (A tensor-valued test: the interpreter rejects a Python bool in a mask.)
        has_ck = (tl.zeros([BLOCK_D, BLOCK_N], dtype=tl.int32) + c) > 0
        h = tl.load(p_ck + (c - 1) * DIM * N, mask=mask_dn & has_ck, other=0.0)
        n_sub = tl.cdiv(tl.minimum(T - t_c, CHUNK), 4)
        # Phase 1: the chunk forward from its checkpoint; the state before each 4-step group.
        for j in range(n_sub - 1):
            tl.store(p_scr + j * state, h)
            t0 = t_c + 4 * j
            _, _, dl0, dl1, dl2, dl3, dlu0, dlu1, dlu2, dlu3 = _prep4(
                p_u, p_dl, t0, T, mask_d, b_bias, BLOCK_D, HAS_BIAS, SOFTPLUS)
            B0, B1, B2, B3 = _load_rows4(p_B, t0, T, N, mask_n)
            _, h = _decay_input(h, dl0, dlu0, b_A2, B0)
            _, h = _decay_input(h, dl1, dlu1, b_A2, B1)
            _, h = _decay_input(h, dl2, dlu2, b_A2, B2)
            _, h = _decay_input(h, dl3, dlu3, b_A2, B3)
        tl.store(p_scr + (n_sub - 1) * state, h)
        # The scratch is written and read by different threads of the program.
        tl.debug_barrier()
        # Phase 2: 4-step groups last to first, states recomputed in registers, then reversed.
        for jj in range(n_sub):
            j = n_sub - 1 - jj
            t0 = t_c + 4 * j
            h_in = tl.load(p_scr + j * state)
            t_u, t_dl, dl0, dl1, dl2, dl3, dlu0, dlu1, dlu2, dlu3 = _prep4(
                p_u, p_dl, t0, T, mask_d, b_bias, BLOCK_D, HAS_BIAS, SOFTPLUS)
            t_dy = _load_tile4(p_dy, t0, T, 1, mask_d).to(tl.float32)
            t_uf = t_u.to(tl.float32)
            u0, u1, u2, u3 = _split4(t_uf, BLOCK_D)
            dy0, dy1, dy2, dy3 = _split4(t_dy, BLOCK_D)
            B0, B1, B2, B3 = _load_rows4(p_B, t0, T, N, mask_n)
            C0, C1, C2, C3 = _load_rows4(p_C, t0, T, N, mask_n)
            a0, h0 = _decay_input(h_in, dl0, dlu0, b_A2, B0)
            a1, h1 = _decay_input(h0, dl1, dlu1, b_A2, B1)
            a2, h2 = _decay_input(h1, dl2, dlu2, b_A2, B2)
            a3, h3 = _decay_input(h2, dl3, dlu3, b_A2, B3)
            # Steps past T have dy = 0, C = 0 and r = 0 (none after them): they add nothing.
            r, dA_acc, g3, e3, dB3, dC3 = _bwd_step(r, a3, h2, h3, dy3, dl3, dlu3, u3, B3, C3,
                                                    b_A2, dA_acc)
            r, dA_acc, g2, e2, dB2, dC2 = _bwd_step(r, a2, h1, h2, dy2, dl2, dlu2, u2, B2, C2,
                                                    b_A2, dA_acc)
            r, dA_acc, g1, e1, dB1, dC1 = _bwd_step(r, a1, h0, h1, dy1, dl1, dlu1, u1, B1, C1,
                                                    b_A2, dA_acc)
            r, dA_acc, g0, e0, dB0, dC0 = _bwd_step(r, a0, h_in, h0, dy0, dl0, dlu0, u0, B0, C0,
                                                    b_A2, dA_acc)
            t_ddl = _join4(g0, g1, g2, g3, BLOCK_D)
            if SOFTPLUS:
                x = t_dl.to(tl.float32)
                if HAS_BIAS:
                    x = x + b_bias[:, None]
                t_ddl = t_ddl * _softplus_grad(x)
            t_du = _join4(e0, e1, e2, e3, BLOCK_D) + b_D[:, None] * t_dy
            dbias_acc += tl.sum(t_ddl, axis=1)
            dD_acc += tl.sum(t_dy * t_uf, axis=1)
            offs = t0 + tl.arange(0, 4)
            m_dt = mask_d[:, None] & (offs < T)[None, :]
            p_dt = row[:, None] + offs[None, :]
            tl.store(du_ptr + p_dt, t_du.to(du_ptr.dtype.element_ty), mask=m_dt)
            tl.store(ddelta_ptr + p_dt, t_ddl.to(ddelta_ptr.dtype.element_ty), mask=m_dt)
            _store_rows4(dB_ptr + p_part, t0, T, N, mask_n, dB0, dB1, dB2, dB3, ATOMIC_BC)
            _store_rows4(dC_ptr + p_part, t0, T, N, mask_n, dC0, dC1, dC2, dC3, ATOMIC_BC)
        # The next chunk's phase 1 overwrites scratch that other threads may still be reading.
        tl.debug_barrier()
    p_bd = pid_b * DIM + offs_d
    tl.store(dA_ptr + p_bd[:, None] * N + offs_n[None, :], dA_acc, mask=mask_dn)
    tl.store(dD_ptr + p_bd, dD_acc, mask=mask_d)
    tl.store(dbias_ptr + p_bd, dbias_acc, mask=mask_d)


BACKWARD_OPTIONS = ("ckpt_every", "block_d", "block_d_scale", "num_warps", "atomic_bc")


def check_backward_options(options: dict[str, Any]) -> None:
    """Fail at the forward call, not at backward time, on options the backward cannot take."""
    unknown = sorted(set(options) - set(BACKWARD_OPTIONS))
    if unknown:
        raise ValueError(f"expected backward options among {BACKWARD_OPTIONS}, got {unknown}")
    k = options.get("ckpt_every", DEFAULT_CKPT_EVERY)
    if not isinstance(k, int) or k <= 0 or k % 4:
        raise ValueError(f"expected ckpt_every a positive multiple of 4, got {k}")


def ckpt_shape(batch: int, dim: int, steps: int, dstate: int, ckpt_every: int) -> tuple:
    """Shape of the forward's saved states: one per chunk boundary strictly inside T."""
    return (batch, triton.cdiv(steps, ckpt_every) - 1, dim, dstate)


def selective_scan_bwd(
    u: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, Bm: torch.Tensor, Cm: torch.Tensor,
    Dskip: torch.Tensor | None, delta_bias: torch.Tensor | None, delta_softplus: bool,
    dy: torch.Tensor, ckpt: torch.Tensor, *,
    ckpt_every: int = DEFAULT_CKPT_EVERY,
    bc_time_major: bool = False,
    bc_dtypes: tuple[torch.dtype, torch.dtype] | None = None,
    block_d: int | None = None,
    block_d_scale: float = DEFAULT_BWD_BLOCK_D_SCALE,
    num_warps: int | None = DEFAULT_BWD_NUM_WARPS,
    atomic_bc: bool = False,
    nan_fill: bool = False,
) -> tuple[torch.Tensor | None, ...]:
    """Gradients (du, ddelta, dA, dB, dC, dD, ddelta_bias) of sum(y * dy) for the scan's inputs.

    Same inputs as `selective_scan`, plus dy [B, D, T] (u's dtype) and `ckpt`, the states the
    forward saved every `ckpt_every` steps ([B, ceil(T/K) - 1, D, N] float32; see
    `scan._launch_forward`). `bc_time_major`: Bm, Cm are given as [B, T, N] copies (the autograd
    path reuses the forward's), and `bc_dtypes` names the dtypes of dB, dC then. du and ddelta
    come in u's and delta's dtypes, dB and dC in B's and C's, dA, dD, ddelta_bias in float32;
    dD and ddelta_bias are None when Dskip / delta_bias are. `nan_fill` fills every output and
    intermediate buffer with NaN first, so tests see any element the kernel leaves unwritten.
    `atomic_bc` adds every program's dB and dC rows atomically into one float32 [B, T, N] each
    instead of writing per-program partials that torch then sums: D/BLOCK_D times less memory
    traffic, but the order of the additions, and so the last bits of dB and dC, varies from run
    to run (the default is deterministic).
    """
    check_backward_options({"ckpt_every": ckpt_every})
    if bc_time_major:
        bt, ct = Bm, Cm
        batch, dim, steps = u.shape
        n = A.shape[1]
        b_dtype, c_dtype = bc_dtypes or (Bm.dtype, Cm.dtype)
    else:
        batch, dim, steps, n = check_args(u, delta, A, Bm, Cm, Dskip, delta_bias)
        bt, ct = time_major_bc(Bm, Cm)
        b_dtype, c_dtype = Bm.dtype, Cm.dtype
    check_tensor("dy", dy, (batch, dim, steps), (u.dtype,), u.device)
    check_tensor("ckpt", ckpt, ckpt_shape(batch, dim, steps, n, ckpt_every), (torch.float32,),
                 u.device)
    block_n = triton.next_power_of_2(n)
    bd = default_block_d(dim, n, block_d)
    if block_d is None and block_d_scale != 1.0:
        bd = max(1, triton.next_power_of_2(int(bd * block_d_scale)))
    n_db = triton.cdiv(dim, bd)
    fill = float("nan") if nan_fill else None

    def buf(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        if fill is None:
            return torch.empty(*shape, device=u.device, dtype=dtype)
        return torch.full(shape, fill, device=u.device, dtype=dtype)

    du, ddelta = buf(batch, dim, steps, dtype=u.dtype), buf(batch, dim, steps, dtype=delta.dtype)
    if atomic_bc:
        dB_part = torch.zeros(batch, 1, steps, n, device=u.device, dtype=torch.float32)
        dC_part = torch.zeros_like(dB_part)
    else:
        dB_part, dC_part = buf(batch, n_db, steps, n), buf(batch, n_db, steps, n)
    dA_part, dD_part, dbias_part = buf(batch, dim, n), buf(batch, dim), buf(batch, dim)
    scratch = buf(batch * n_db, ckpt_every // 4, bd, block_n)
    opt = (Dskip if Dskip is not None else A, delta_bias if delta_bias is not None else A)
    _ss_bwd_kernel[(n_db, batch)](
        u, delta, A, bt, ct, *opt, dy, ckpt if ckpt.numel() else A, scratch,
        du, ddelta, dA_part, dB_part, dC_part, dD_part, dbias_part,
        dim, steps, n, ckpt.shape[1],
        HAS_D=Dskip is not None, HAS_BIAS=delta_bias is not None,
        SOFTPLUS=bool(delta_softplus), BLOCK_D=bd, BLOCK_N=block_n, CHUNK=ckpt_every,
        ATOMIC_BC=bool(atomic_bc),
        num_warps=num_warps or 4,
    )
    dB = dB_part.sum(1).transpose(1, 2).to(b_dtype).contiguous()
    dC = dC_part.sum(1).transpose(1, 2).to(c_dtype).contiguous()
    return (du, ddelta, dA_part.sum(0), dB, dC,
            dD_part.sum(0) if Dskip is not None else None,
            dbias_part.sum(0) if delta_bias is not None else None)
