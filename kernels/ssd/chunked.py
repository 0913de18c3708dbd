"""SSD forward in the chunked (Mamba-2) schedule: matmuls on tensor cores inside chunks, a short
recurrence across chunks.

Four launches (see `_chunk_kernels.py`):
1. chunk_bmm     (tensor cores) C_i . B_j inside each chunk, once per GROUP (shared by its heads);
2. chunk_state   (tensor cores) segment cumsum of dt*A and each chunk's own end state, in parallel;
3. state_passing (no matmul)    the recurrence across chunks, writing each chunk's start state;
4. chunk_scan    (tensor cores) decay-masked scores times x, plus the start state's contribution
                                and D x.
Mamba's separate cumsum kernel is folded into (2). The start states are stored in x's dtype: (4)
rounds them to it for its tensor-core dot anyway. `ssd_chunked_stages` exposes the launches
separately so `flopkb verify` can measure the share of time spent in matmul stages (claim B1).

The autograd Function (`SSDChunkedFn`, `ssd_chunked_fn`) lives here too: its backward launches
come from `backward.py`, which never imports this module (shared launch setup: `_launch.py`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ._args import check_chunk_size, check_ssd_args
from ._launch import ChunkedRun, chunked_run
from .backward import BwdConfig, check_head_split, ssd_chunked_backward

MATMUL_STAGES = ("chunk_bmm", "chunk_state", "chunk_scan")

# Named forward+backward configurations for a GPU sweep (bench/kernels_ssd_bwd.py). Each maps to
# `ssd_chunked_fn` keywords; every one is plain tl.dot tiling (no TMA, no warp specialisation) and
# compiles for sm_80 / sm_89 too; only q256_bm128_w8 needs more shared memory (112.5 KB in the dx
# kernel) than an Ada GPU gives one block.
VARIANTS: dict[str, dict[str, Any]] = {
    # Hopper default: the forward's best chunk (256) and tiles, backward 64-row blocks, 4 warps.
    "q256": {"chunk_size": 256},
    # Shorter chunk: half the intra-chunk (Q^2) work, twice the state traffic.
    "q128": {"chunk_size": 128},
    # Larger backward row blocks with 8 warps: fewer, fatter programs and MMA tiles.
    "q256_bm128_w8": {"chunk_size": 256, "bwd": BwdConfig(block_m=128, num_warps=8)},
    # One more software-pipeline stage in the backward loops (more shared memory per program).
    "q256_s3": {"chunk_size": 256, "bwd": BwdConfig(num_stages=3)},
    # The per-group kernel's heads in 1 / 4 programs: parallelism vs partial-sum traffic.
    "q256_split1": {"chunk_size": 256, "bwd": BwdConfig(head_split=1)},
    "q256_split4": {"chunk_size": 256, "bwd": BwdConfig(head_split=4)},
    # Backward with 8 warps at 64-row blocks.
    "q256_w8": {"chunk_size": 256, "bwd": BwdConfig(num_warps=8)},
    # R in the dx kernel: +1 dot per tile there, no [64, 64] elementwise work per head in dCB.
    "q256_rdx": {"chunk_size": 256, "bwd": BwdConfig(r_in_dx=True)},
    "q256_rdx_w8": {"chunk_size": 256, "bwd": BwdConfig(r_in_dx=True, num_warps=8)},
}


@dataclass(frozen=True)
class FwdConfig:
    """Tiling of the forward launches (the `block_m`, `num_warps`, `num_stages` keywords)."""

    block_m: int = 64
    num_warps: int = 4
    num_stages: int = 2


def ssd_chunked_stages(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    Dskip: torch.Tensor | None = None,
    chunk_size: int = 64,
    *,
    block_m: int = 64,
    num_warps: int = 4,
    num_stages: int = 2,
    out: torch.Tensor | None = None,
) -> ChunkedRun:
    """Allocate buffers and return the four launches of `ssd_chunked` (same arguments)."""
    return chunked_run(
        x, dt, A, Bm, Cm, Dskip, chunk_size,
        block_m=block_m, num_warps=num_warps, num_stages=num_stages, out=out,
    )


def ssd_chunked(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
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
    """Chunked SSD forward. x [B, T, H, P]; dt [B, T, H] (>0); A [H] fp32 (<0);
    Bm, Cm [B, T, G, N]; Dskip [H] fp32; chunk_size in 16..256 (powers of two).
    Returns y [B, T, H, P] in x's dtype; `out` (optional) receives it.

    When grad mode is on and an input requires grad, this runs as `ssd_chunked_fn` (the bundled
    Triton backward, default backward tiling); otherwise nothing is saved."""
    tune = {"block_m": block_m, "num_warps": num_warps, "num_stages": num_stages}
    if torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in (x, dt, A, Bm, Cm, Dskip)
    ):
        if out is not None:
            raise ValueError("expected out=None when an input requires grad, got an out buffer")
        return ssd_chunked_fn(x, dt, A, Bm, Cm, Dskip, chunk_size, **tune)
    return chunked_run(x, dt, A, Bm, Cm, Dskip, chunk_size, out=out, **tune)()


class SSDChunkedFn(torch.autograd.Function):
    """y = ssd_chunked(x, dt, A, Bm, Cm, Dskip) with the bundled Triton backward."""

    @staticmethod
    def forward(ctx, x, dt, A, Bm, Cm, Dskip, chunk_size, fwd, bwd):  # type: ignore[override]
        shape = check_ssd_args(x, dt, A, Bm, Cm, Dskip, None)
        # A bad backward tiling fails here, before the forward's work, not in backward().
        check_head_split(bwd.head_split, shape.heads // shape.groups, 1)
        run = chunked_run(x, dt, A, Bm, Cm, Dskip, chunk_size, **vars(fwd))
        y = run()
        ctx.save_for_backward(x, dt, A, Bm, Cm, Dskip, run.cs, run.cb, run.start_states)
        ctx.chunk_size = chunk_size
        ctx.bwd = bwd
        return y

    @staticmethod
    def backward(ctx, dy):  # type: ignore[override]
        x, dt, A, Bm, Cm, Dskip, cs, cb, start_states = ctx.saved_tensors
        grads = ssd_chunked_backward(
            dy.contiguous(), x, dt, A, Bm, Cm, Dskip, cs, cb, start_states, ctx.chunk_size,
            ctx.bwd,
        )
        needed = ctx.needs_input_grad
        out = [g if needed[k] else None for k, g in enumerate(grads)]
        return (*out, None, None, None)


def ssd_chunked_fn(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    Dskip: torch.Tensor | None = None,
    chunk_size: int = 64,
    *,
    block_m: int = 64,
    num_warps: int = 4,
    num_stages: int = 2,
    bwd: BwdConfig | None = None,
) -> torch.Tensor:
    """`ssd_chunked` (same arguments and result) as an autograd op: `y.backward(dy)` fills the
    gradients of x, dt, A, Bm, Cm and Dskip with the bundled backward kernels; `bwd` tiles those."""
    check_chunk_size(chunk_size)
    fwd = FwdConfig(block_m, num_warps, num_stages)
    return SSDChunkedFn.apply(x, dt, A, Bm, Cm, Dskip, chunk_size, fwd, bwd or BwdConfig())
