"""Chunked SSD backward: the six launches of `ssd_chunked_backward` and their tiling (`BwdConfig`).

The autograd Function that calls this (`chunked.SSDChunkedFn`, `chunked.ssd_chunked_fn`) lives in
the forward's module; this module never imports it (shared launch setup: `_launch.py`).

Launch order (kernels in `_bwd_kernels.py` and, with REVERSE, `_chunk_kernels.py`):
1. dstate        (tensor cores) dH_c = sum_i exp(cs_i) dy_i C_i^T per (chunk, head);
2. state_passing (no matmul)    the reverse recurrence g_c = dH_c + exp(cs_last) g_{c+1}, writing
                                g_{c+1} (dL/dS_c) and exp(cs_last) <g_{c+1}, h_c> partials;
3. dx            (tensor cores) dx and x . dxr per head;
4. dcb           (tensor cores) dCB per group, R per head, the state part of dC;
5. dbc           (tensor cores) dB and dC per group;
6. ddt           (no matmul)    reverse cumsum of dcs in each chunk: ddt, dA partials;
then two small sums (dA over batch and chunks, dD over batch and row blocks).

What the forward keeps for this (`chunked.ssd_chunked_fn`): the inputs, plus what its own launches
already wrote: cs (float32 [B, H, T]), the per-group C.B tiles (float32 [B, nc, G, Q, Q]) and the
chunk start states (x's dtype, [B, nc, H, P, N]); nothing is recomputed. At B*T = 32K tokens,
H = 32, P = 64, N = 128, G = 1, Q = 256, bf16: 4.2 + 33.6 + 67.1 MB (`cost.saved_bytes`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton

from ._args import check_ssd_args
from ._bwd_kernels import _bwd_dbc_kernel, _bwd_dcb_kernel, _bwd_ddt_kernel, _bwd_dx_kernel
from ._chunk_kernels import _chunk_state_kernel, _state_passing_kernel
from ._launch import Tiling


@dataclass(frozen=True)
class BwdConfig:
    """Tiling of the backward launches. head_split None picks the smallest split of each group's
    heads over programs that gives the per-group kernel at least 1024 programs."""

    block_m: int = 64
    num_warps: int = 4
    num_stages: int = 2
    head_split: int | None = None
    # R's intra-chunk part in the dx kernel (one more dot per tile there) so that the dCB kernel
    # runs its off-diagonal tiles as plain dots with the decay folded into the operands.
    r_in_dx: bool = False


def _buffer(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """An uninitialised buffer; the tests patch this to fill with NaN so that an element no kernel
    writes (or one read before it is written) shows in the gradients."""
    return torch.empty(shape, dtype=dtype, device=device)


def check_head_split(want: int | None, heads_per_group: int, programs: int) -> int:
    """`want` checked against the heads per group, or (None) the smallest power-of-two split
    giving `programs` x split at least 1024 programs."""
    if want is not None:
        if want < 1 or heads_per_group % want:
            raise ValueError(
                f"expected head_split dividing the {heads_per_group} heads per group, got {want}"
            )
        return want
    split = 1
    while split * programs < 1024 and heads_per_group % (split * 2) == 0:
        split *= 2
    return split


def ssd_chunked_backward(
    dy: torch.Tensor,
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    Dskip: torch.Tensor | None,
    cs: torch.Tensor,
    cb: torch.Tensor,
    start_states: torch.Tensor,
    chunk_size: int,
    cfg: BwdConfig = BwdConfig(),
) -> tuple[torch.Tensor, ...]:
    """Gradients (dx, ddt, dA, dB, dC, dD) of `ssd_chunked` given dy [B, T, H, P] and what its
    forward wrote: cs [B, H, T] fp32, cb [B, nc, G, Q, Q] fp32, start_states [B, nc, H, P, N].
    dD is None without Dskip. dx, ddt, dB, dC come in their input's dtype, dA and dD in fp32."""
    s = check_ssd_args(x, dt, A, Bm, Cm, Dskip, dy, chunk_size=chunk_size)
    nchunks = triton.cdiv(s.steps, chunk_size)
    bp, bn, prec, upcast, hpg = Tiling.of(s, x.dtype)
    bm = min(chunk_size, cfg.block_m)
    bk = min(chunk_size, 64)
    row_blocks = triton.cdiv(chunk_size, bm)
    bh = s.batch * s.heads
    dev = s.device
    f32 = torch.float32
    tune = {"num_warps": cfg.num_warps, "num_stages": cfg.num_stages}

    dh = _buffer((s.batch, nchunks, s.heads, s.headdim, s.dstate), f32, dev)
    _chunk_state_kernel[(bh, nchunks)](
        dy, dt, A, Cm, dh, cs,
        s.steps, s.heads, s.headdim, s.dstate, hpg, chunk_size, nchunks,
        COMPUTE_STATE=True, DOT_PREC=prec, UPCAST_DOT=upcast,
        BLOCK_K=bk, BLOCK_P=bp, BLOCK_N=bn, REVERSE=True, **tune,
    )
    pn = s.headdim * s.dstate
    sp_block = min(1024, triton.next_power_of_2(pn))
    n_sp = triton.cdiv(pn, sp_block)
    ds = _buffer(dh.shape, x.dtype, dev)
    lpart = _buffer((bh, nchunks, n_sp), f32, dev)
    _state_passing_kernel[(n_sp, bh)](
        dh, cs, ds, start_states, lpart, s.steps, s.heads, s.dstate, pn, chunk_size, nchunks,
        BLOCK=sp_block, REVERSE=True, num_warps=4,
    )
    del dh

    dx = _buffer(x.shape, x.dtype, dev)
    dxr = _buffer((s.batch, s.heads, s.steps), f32, dev)
    xv = _buffer((s.batch, s.heads, s.steps), f32, dev)
    dd_part = _buffer((bh, nchunks * row_blocks), f32, dev)
    rpart = _buffer((s.batch, s.heads, s.steps, row_blocks) if cfg.r_in_dx else (1,), f32, dev)
    _bwd_dx_kernel[(bh, nchunks * row_blocks)](
        x, dt, Bm, Dskip if Dskip is not None else A, cs, ds, cb, dy,
        dx, dxr, xv, dd_part, rpart,
        s.steps, s.heads, s.headdim, s.dstate, hpg, chunk_size, nchunks, row_blocks,
        HAS_D=Dskip is not None, DOT_PREC=prec, UPCAST_DOT=upcast,
        BLOCK_M=bm, BLOCK_P=bp, BLOCK_N=bn, R_IN_DX=cfg.r_in_dx, **tune,
    )

    split = check_head_split(cfg.head_split, hpg, s.batch * s.groups * nchunks * row_blocks)
    hpp = hpg // split
    # dCB partials are rounded to x's dtype (the dbc dots take them in that dtype anyway).
    dcb = _buffer((s.batch, nchunks, split, s.groups, chunk_size, chunk_size), x.dtype, dev)
    dcp = _buffer((s.batch, s.steps, split, s.groups, s.dstate), f32, dev)
    r = _buffer((s.batch, s.heads, s.steps), f32, dev)
    _bwd_dcb_kernel[(s.batch * s.groups * split, nchunks * row_blocks)](
        x, dt, Cm, cs, start_states, cb, dy,
        dcb, dcp, r,
        s.steps, s.heads, s.headdim, s.dstate, hpg, chunk_size, nchunks, row_blocks, split, hpp,
        DOT_PREC=prec, UPCAST_DOT=upcast, BLOCK_M=bm, BLOCK_P=bp, BLOCK_N=bn,
        BLOCK_H=triton.next_power_of_2(hpp), R_IN_DX=cfg.r_in_dx, **tune,
    )
    dB = _buffer(Bm.shape, Bm.dtype, dev)
    dC = _buffer(Cm.shape, Cm.dtype, dev)
    _bwd_dbc_kernel[(s.batch * s.groups, nchunks * row_blocks)](
        x, dt, Bm, Cm, cs, ds, dcb, dcp,
        dB, dC,
        s.steps, s.heads, s.headdim, s.dstate, hpg, chunk_size, nchunks, row_blocks, split,
        DOT_PREC=prec, UPCAST_DOT=upcast, BLOCK_M=bm, BLOCK_P=bp, BLOCK_N=bn, **tune,
    )
    del dcb, dcp

    ddt = _buffer(dt.shape, dt.dtype, dev)
    da_part = _buffer((s.batch, s.heads, nchunks), f32, dev)
    _bwd_ddt_kernel[(bh, nchunks)](
        dt, A, dxr, xv, r, lpart, rpart, ddt, da_part,
        s.steps, s.heads, chunk_size, nchunks, n_sp, row_blocks, bm,
        BLOCK_Q=chunk_size, BLOCK_L=triton.next_power_of_2(n_sp),
        BLOCK_RB=triton.next_power_of_2(row_blocks), R_IN_DX=cfg.r_in_dx, num_warps=4,
    )
    dA = da_part.sum(dim=(0, 2))
    dD = dd_part.view(s.batch, s.heads, -1).sum(dim=(0, 2)) if Dskip is not None else None
    return dx, ddt, dA, dB, dC, dD
