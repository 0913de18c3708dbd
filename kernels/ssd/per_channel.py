"""Chunked SSD with one decay per (head, state dimension): the GLA / HGRN2 form, for claim A5.

state_t[p, n] = exp(g_t[n]) state_{t-1}[p, n] + dt_t x_t[p] B_t[n];  y_t = state_t C_t + D x_t,
with log-decay g [B, T, H, N] (<= 0, natural log). Same three-launch schedule and tiling as
`chunked.py` (chunk_state -> state_passing -> chunk_scan, BLOCK_M row blocks, tensor-core dots) so
that the two differ only in what a per-channel decay forces:

- the decay no longer factors out of C_i . B_j, so each (row block, column block) pair rescales
  its C and B tiles elementwise ([BLOCK_M, N] exp2 each, against [BLOCK_M, BLOCK_M] for a scalar
  decay) before the tensor-core dot;
- the within-chunk cumulative decay is [T, N] per head instead of [T], and is stored in float32.
Both tiles are rescaled against the last row r of column block j: C_i exp(G_i - G_r) and
B_j exp(G_r - G_j). Off the diagonal both factors are <= 1; on the diagonal block the C factor
can exceed 1 by up to exp(-(decay over one block)), so a block whose total log-decay is below
about -88 per channel overflows float32 (GLA's kernels share the limit and use 16-row sub-blocks).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .._ssm_common import FLOAT_DTYPES, check_tensor
from ._args import check_ssd_args
from ._chunk_kernels import _dot
from .chunked import _check_chunk, dot_dim, dot_precision, upcast_dot


@triton.jit
def _pc_chunk_state_kernel(
    x_ptr, dt_ptr, g_ptr, B_ptr, states_ptr, gcs_ptr,
    T, H, P, N, HEADS_PER_GROUP, CHUNK, NCHUNKS,
    DOT_PREC: tl.constexpr, UPCAST_DOT: tl.constexpr,
    BLOCK_K: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
):
    i_c = tl.program_id(0)
    pid_bh = tl.program_id(1)
    i_b = (pid_bh // H).to(tl.int64)
    i_h = pid_bh % H
    G = H // HEADS_PER_GROUP
    i_g = i_h // HEADS_PER_GROUP
    offs_k = tl.arange(0, BLOCK_K)
    offs_p = tl.arange(0, BLOCK_P)
    offs_n = tl.arange(0, BLOCK_N)
    mask_p = offs_p < P
    mask_n = offs_n < N
    t_start = i_c * CHUNK
    b_run = tl.zeros([BLOCK_N], dtype=tl.float32)
    b_S = tl.zeros([BLOCK_P, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, CHUNK, BLOCK_K):
        offs_t = t_start + k0 + offs_k
        mask_t = (k0 + offs_k < CHUNK) & (offs_t < T)
        m_tn = mask_t[:, None] & mask_n[None, :]
        p_tn = ((i_b * T + offs_t[:, None]) * H + i_h) * N + offs_n[None, :]
        b_g = tl.load(g_ptr + p_tn, mask=m_tn, other=0.0).to(tl.float32) * 1.4426950408889634
        b_gcs = b_run[None, :] + tl.cumsum(b_g, axis=0)
        tl.store(gcs_ptr + p_tn, b_gcs, mask=m_tn)
        b_new = b_run + tl.sum(b_g, axis=0)
        b_dt = tl.load(dt_ptr + (i_b * T + offs_t) * H + i_h, mask=mask_t, other=0.0)
        b_x = tl.load(
            x_ptr + ((i_b * T + offs_t[:, None]) * H + i_h) * P + offs_p[None, :],
            mask=mask_t[:, None] & mask_p[None, :], other=0.0,
        )
        b_B = tl.load(
            B_ptr + ((i_b * T + offs_t[:, None]) * G + i_g) * N + offs_n[None, :],
            mask=m_tn, other=0.0,
        )
        b_w = b_dt.to(tl.float32)[:, None] * tl.exp2(b_new[None, :] - b_gcs)
        b_Bw = (b_B.to(tl.float32) * b_w).to(b_x.dtype)
        b_S = b_S * tl.exp2(b_new - b_run)[None, :]
        b_S += _dot(tl.trans(b_x), b_Bw, DOT_PREC, UPCAST_DOT)
        b_run = b_new
    p_S = (
        states_ptr + ((i_b * NCHUNKS + i_c) * H + i_h) * P * N
        + offs_p[:, None] * N + offs_n[None, :]
    )
    tl.store(p_S, b_S, mask=mask_p[:, None] & mask_n[None, :])


@triton.jit
def _pc_state_passing_kernel(
    states_ptr, gcs_ptr, out_ptr,
    T, H, N, PN, CHUNK, NCHUNKS,
    BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    pid_bh = tl.program_id(1)
    i_b = (pid_bh // H).to(tl.int64)
    i_h = pid_bh % H
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < PN
    offs_n = offs % N
    b_h = tl.zeros([BLOCK], dtype=tl.float32)
    # Same one-chunk-ahead prefetch as the scalar-decay kernel.
    n_s = tl.load(states_ptr + (i_b * NCHUNKS * H + i_h) * PN + offs, mask=mask, other=0.0)
    t_last = tl.minimum(CHUNK, T) - 1
    n_g = tl.load(gcs_ptr + ((i_b * T + t_last) * H + i_h) * N + offs_n, mask=mask, other=0.0)
    for c in range(NCHUNKS):
        b_s = n_s
        b_decay = tl.exp2(n_g)
        c_next = (c + 1) % NCHUNKS
        n_s = tl.load(
            states_ptr + ((i_b * NCHUNKS + c_next) * H + i_h) * PN + offs, mask=mask, other=0.0
        )
        t_last = tl.minimum((c_next + 1) * CHUNK, T) - 1
        p_g = gcs_ptr + ((i_b * T + t_last) * H + i_h) * N + offs_n
        n_g = tl.load(p_g, mask=mask, other=0.0)
        tl.store(
            out_ptr + ((i_b * NCHUNKS + c) * H + i_h) * PN + offs,
            b_h.to(out_ptr.dtype.element_ty), mask=mask,
        )
        b_h = b_decay * b_h + b_s


@triton.jit
def _pc_chunk_scan_kernel(
    x_ptr, dt_ptr, B_ptr, C_ptr, D_ptr, gcs_ptr, hin_ptr, y_ptr,
    T, H, P, N, HEADS_PER_GROUP, CHUNK, NCHUNKS, ROW_BLOCKS,
    HAS_D: tl.constexpr, DOT_PREC: tl.constexpr, UPCAST_DOT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid0 = tl.program_id(0)
    pid_bh = tl.program_id(1)
    i_c = pid0 // ROW_BLOCKS
    i_m = pid0 % ROW_BLOCKS
    i_b = (pid_bh // H).to(tl.int64)
    i_h = pid_bh % H
    G = H // HEADS_PER_GROUP
    i_g = i_h // HEADS_PER_GROUP
    offs_m = tl.arange(0, BLOCK_M)
    offs_p = tl.arange(0, BLOCK_P)
    offs_n = tl.arange(0, BLOCK_N)
    mask_p = offs_p < P
    mask_n = offs_n < N
    t_chunk = i_c * CHUNK
    offs_i = t_chunk + i_m * BLOCK_M + offs_m
    mask_i = (i_m * BLOCK_M + offs_m < CHUNK) & (offs_i < T)
    m_in = mask_i[:, None] & mask_n[None, :]
    p_gi = gcs_ptr + ((i_b * T + offs_i[:, None]) * H + i_h) * N + offs_n[None, :]
    b_gcs_i = tl.load(p_gi, mask=m_in, other=0.0)
    b_C = tl.load(
        C_ptr + ((i_b * T + offs_i[:, None]) * G + i_g) * N + offs_n[None, :], mask=m_in, other=0.0
    ).to(tl.float32)
    p_h = (
        hin_ptr + ((i_b * NCHUNKS + i_c) * H + i_h) * P * N
        + offs_p[:, None] * N + offs_n[None, :]
    )
    b_hin = tl.load(p_h, mask=mask_p[:, None] & mask_n[None, :], other=0.0)
    b_Cd = (b_C * tl.exp2(b_gcs_i)).to(x_ptr.dtype.element_ty)
    acc = _dot(b_Cd, tl.trans(b_hin.to(x_ptr.dtype.element_ty)), DOT_PREC, UPCAST_DOT)
    for j in range(0, i_m + 1):
        offs_j = t_chunk + j * BLOCK_M + offs_m
        mask_j = offs_j < T
        m_jn = mask_j[:, None] & mask_n[None, :]
        t_ref = tl.minimum(t_chunk + j * BLOCK_M + BLOCK_M, T) - 1
        p_ref = gcs_ptr + ((i_b * T + t_ref) * H + i_h) * N + offs_n
        b_ref = tl.load(p_ref, mask=mask_n, other=0.0)
        b_gcs_j = tl.load(
            gcs_ptr + ((i_b * T + offs_j[:, None]) * H + i_h) * N + offs_n[None, :],
            mask=m_jn, other=0.0,
        )
        b_B = tl.load(
            B_ptr + ((i_b * T + offs_j[:, None]) * G + i_g) * N + offs_n[None, :],
            mask=m_jn, other=0.0,
        ).to(tl.float32)
        b_x = tl.load(
            x_ptr + ((i_b * T + offs_j[:, None]) * H + i_h) * P + offs_p[None, :],
            mask=mask_j[:, None] & mask_p[None, :], other=0.0,
        )
        b_dt = tl.load(dt_ptr + (i_b * T + offs_j) * H + i_h, mask=mask_j, other=0.0)
        b_Ct = (b_C * tl.exp2(b_gcs_i - b_ref[None, :])).to(b_x.dtype)
        b_Bt = (b_B * tl.exp2(b_ref[None, :] - b_gcs_j)).to(b_x.dtype)
        b_s = _dot(b_Ct, tl.trans(b_Bt), DOT_PREC, UPCAST_DOT)
        keep = (j * BLOCK_M + offs_m[None, :] <= i_m * BLOCK_M + offs_m[:, None]) & mask_j[None, :]
        b_s = tl.where(keep, b_s * b_dt.to(tl.float32)[None, :], 0.0)
        acc += _dot(b_s.to(b_x.dtype), b_x, DOT_PREC, UPCAST_DOT)
    p_xi = ((i_b * T + offs_i[:, None]) * H + i_h) * P + offs_p[None, :]
    mask_ip = mask_i[:, None] & mask_p[None, :]
    if HAS_D:
        b_xi = tl.load(x_ptr + p_xi, mask=mask_ip, other=0.0).to(tl.float32)
        acc += tl.load(D_ptr + i_h).to(tl.float32) * b_xi
    tl.store(y_ptr + p_xi, acc.to(y_ptr.dtype.element_ty), mask=mask_ip)


def ssd_chunked_per_channel(
    x: torch.Tensor,
    dt: torch.Tensor,
    log_decay: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    Dskip: torch.Tensor | None = None,
    chunk_size: int = 64,
    *,
    block_m: int = 64,
    num_warps: int = 4,
    num_stages: int = 2,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-channel-decay chunked SSD. x [B, T, H, P]; dt [B, T, H] (input scale only);
    log_decay [B, T, H, N] (natural log, <= 0); Bm, Cm [B, T, G, N]; Dskip [H] fp32.
    Returns y [B, T, H, P] in x's dtype. With log_decay = dt*A broadcast over N this computes
    exactly `ssd_chunked`."""
    _check_chunk(chunk_size)
    s = check_ssd_args(x, dt, None, Bm, Cm, Dskip, out)
    check_tensor(
        "log_decay", log_decay, (s.batch, s.steps, s.heads, s.dstate), FLOAT_DTYPES, s.device
    )
    if out is None:
        out = torch.empty_like(x)
    nchunks = triton.cdiv(s.steps, chunk_size)
    bp, bn = dot_dim(s.headdim), dot_dim(s.dstate)
    bk = min(chunk_size, 64)
    bm = min(chunk_size, block_m)
    prec = dot_precision(x.dtype)
    upcast = upcast_dot(x.dtype)
    hpg = s.heads // s.groups
    states = torch.empty(
        s.batch, nchunks, s.heads, s.headdim, s.dstate, dtype=torch.float32, device=s.device
    )
    start_states = torch.empty_like(states, dtype=x.dtype)
    gcs = torch.empty(s.batch, s.steps, s.heads, s.dstate, dtype=torch.float32, device=s.device)
    grid_bh = s.batch * s.heads
    _pc_chunk_state_kernel[(nchunks, grid_bh)](
        x, dt, log_decay, Bm, states, gcs,
        s.steps, s.heads, s.headdim, s.dstate, hpg, chunk_size, nchunks,
        DOT_PREC=prec, UPCAST_DOT=upcast, BLOCK_K=bk, BLOCK_P=bp, BLOCK_N=bn,
        num_warps=num_warps, num_stages=num_stages,
    )
    pn = s.headdim * s.dstate
    sp_block = min(1024, triton.next_power_of_2(pn))
    _pc_state_passing_kernel[(triton.cdiv(pn, sp_block), grid_bh)](
        states, gcs, start_states, s.steps, s.heads, s.dstate, pn, chunk_size, nchunks,
        BLOCK=sp_block, num_warps=4,
    )
    row_blocks = triton.cdiv(chunk_size, bm)
    _pc_chunk_scan_kernel[(nchunks * row_blocks, grid_bh)](
        x, dt, Bm, Cm, Dskip if Dskip is not None else dt, gcs, start_states, out,
        s.steps, s.heads, s.headdim, s.dstate, hpg, chunk_size, nchunks, row_blocks,
        HAS_D=Dskip is not None, DOT_PREC=prec, UPCAST_DOT=upcast,
        BLOCK_M=bm, BLOCK_P=bp, BLOCK_N=bn, num_warps=num_warps, num_stages=num_stages,
    )
    return out
