"""Launch setup shared by the SSD wrappers: dot tiling and precision, and the chunked schedule's
buffers and stage launches.

Imported by `chunked.py` (forward and its autograd Function), `backward.py`, `quadratic.py` and
`per_channel.py`; it imports none of them, so the wrappers form no import circle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import torch
import triton

from .._ssm_common import interpreting
from ._args import SSDShape, check_ssd_args
from ._chunk_kernels import (
    _chunk_bmm_kernel,
    _chunk_scan_kernel,
    _chunk_state_kernel,
    _state_passing_kernel,
)


def dot_precision(dtype: torch.dtype) -> str:
    """fp32 inputs get exact fp32 dots (the tests compare against float64); 16-bit inputs use
    tensor cores natively and ignore the setting."""
    return "ieee" if dtype == torch.float32 else "tf32"


def upcast_dot(dtype: torch.dtype) -> bool:
    """True when dots must run on float32 copies: bf16 under Triton's CPU interpreter, whose
    `tl.dot` multiplies bf16 bit patterns as integers (triton 3.9)."""
    return dtype == torch.bfloat16 and interpreting()


def dot_dim(n: int) -> int:
    """Tile size for a `tl.dot` axis: a power of two, at least 16 (the MMA minimum)."""
    return max(16, triton.next_power_of_2(n))


class Tiling(NamedTuple):
    """What every SSD launch passes besides its tensors: the P and N tiles (`block_p`,
    `block_n`), the dot precision and bf16-upcast switch of x's dtype, and heads per group."""

    block_p: int
    block_n: int
    dot_prec: str
    upcast: bool
    heads_per_group: int

    @classmethod
    def of(cls, s: SSDShape, dtype: torch.dtype) -> Tiling:
        return cls(dot_dim(s.headdim), dot_dim(s.dstate), dot_precision(dtype), upcast_dot(dtype),
                   s.heads // s.groups)


@dataclass
class ChunkedRun:
    """Buffers and the stage launches of one chunked SSD forward.

    `stages` maps stage name -> zero-argument callable, in execution order; running them all
    leaves y in `out`. Chunk end states are float32 [B, nchunks, H, P, N], start states the same
    shape in x's dtype; cs is float32 [B, H, T] (log2 units); cb is float32 [B, nchunks, G, Q, Q].
    """

    stages: dict[str, Callable[[], None]]
    out: torch.Tensor
    states: torch.Tensor
    start_states: torch.Tensor
    cs: torch.Tensor
    cb: torch.Tensor

    def __call__(self) -> torch.Tensor:
        for launch in self.stages.values():
            launch()
        return self.out


def chunked_run(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor | None,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    Dskip: torch.Tensor | None,
    chunk_size: int,
    *,
    log_decay: torch.Tensor | None = None,
    block_m: int = 64,
    num_warps: int = 4,
    num_stages: int = 2,
    out: torch.Tensor | None = None,
) -> ChunkedRun:
    """The launches of the chunked schedule, scalar decay (A) or per-channel (log_decay, A None;
    no chunk_bmm stage then, since scores cannot be shared across heads)."""
    per_channel = log_decay is not None
    s = check_ssd_args(x, dt, A, Bm, Cm, Dskip, out, log_decay=log_decay, chunk_size=chunk_size)
    if out is None:
        out = torch.empty_like(x)
    nchunks = triton.cdiv(s.steps, chunk_size)
    bp, bn, prec, upcast, hpg = Tiling.of(s, x.dtype)
    bk = min(chunk_size, 64)
    bm = min(chunk_size, block_m)
    states = torch.empty(
        s.batch, nchunks, s.heads, s.headdim, s.dstate, dtype=torch.float32, device=s.device
    )
    start_states = torch.empty_like(states, dtype=x.dtype)
    if per_channel:
        # The in-chunk cumulative decay per channel, [B, T, H, N] float32.
        cs = torch.empty(s.batch, s.steps, s.heads, s.dstate, dtype=torch.float32,
                         device=s.device)
        cb = cs[:0]
        decay = log_decay
    else:
        cs = torch.empty(s.batch, s.heads, s.steps, dtype=torch.float32, device=s.device)
        cb = torch.empty(s.batch, nchunks, s.groups, chunk_size, chunk_size,
                         dtype=torch.float32, device=s.device)
        decay = A
    pn = s.headdim * s.dstate
    sp_block = min(1024, triton.next_power_of_2(pn))
    row_blocks = triton.cdiv(chunk_size, bm)

    def chunk_bmm() -> None:
        _chunk_bmm_kernel[(s.batch * s.groups, nchunks * row_blocks)](
            Bm, Cm, cb, s.steps, s.groups, s.dstate, chunk_size, nchunks, row_blocks,
            DOT_PREC=prec, UPCAST_DOT=upcast, BLOCK_M=bm, BLOCK_N=bn,
            num_warps=num_warps, num_stages=num_stages,
        )

    def chunk_state() -> None:
        _chunk_state_kernel[(s.batch * s.heads, nchunks)](
            x, dt, decay, Bm, states, cs,
            s.steps, s.heads, s.headdim, s.dstate, hpg, chunk_size, nchunks,
            COMPUTE_STATE=True, DOT_PREC=prec, UPCAST_DOT=upcast,
            BLOCK_K=bk, BLOCK_P=bp, BLOCK_N=bn, PER_CHANNEL=per_channel,
            num_warps=num_warps, num_stages=num_stages,
        )

    def state_passing() -> None:
        _state_passing_kernel[(triton.cdiv(pn, sp_block), s.batch * s.heads)](
            states, cs, start_states, states, states,
            s.steps, s.heads, s.dstate, pn, chunk_size, nchunks,
            BLOCK=sp_block, PER_CHANNEL=per_channel, num_warps=4,
        )

    def chunk_scan() -> None:
        _chunk_scan_kernel[(s.batch * s.heads, nchunks * row_blocks)](
            x, dt, Bm, Cm, Dskip if Dskip is not None else dt, cs, start_states, cb, out,
            s.steps, s.heads, s.headdim, s.dstate, hpg, chunk_size, nchunks, row_blocks,
            HAS_STATE=True, HAS_CB=not per_channel, HAS_D=Dskip is not None, DOT_PREC=prec,
            UPCAST_DOT=upcast, BLOCK_M=bm, BLOCK_P=bp, BLOCK_N=bn, PER_CHANNEL=per_channel,
            SPREAD_MAX=10.0 if x.dtype == torch.float16 else 100.0,
            num_warps=num_warps, num_stages=num_stages,
        )

    stages = {} if per_channel else {"chunk_bmm": chunk_bmm}
    stages |= {"chunk_state": chunk_state, "state_passing": state_passing,
               "chunk_scan": chunk_scan}
    return ChunkedRun(stages, out, states, start_states, cs, cb)
