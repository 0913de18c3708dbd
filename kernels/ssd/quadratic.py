"""SSD forward in the quadratic ("attention-like") form as a tensor-core kernel.

y_i = sum_{j<=i} (C_i . B_j) exp(cs_i - cs_j) dt_j x_j + D x_i over the WHOLE sequence, with
cs the cumsum of dt*A from the first step. It is `_chunk_scan_kernel` with one chunk spanning the
sequence and no carried state: flash-attention-like tiling over row blocks i and column blocks
j <= i, the decay mask applied to each C B^T tile in registers. Work is O(T^2 N); this schedule
exists for the short-sequence crossover (claim B3). The cumsum is global, so for very long
sequences with strong decay the float32 difference cs_i - cs_j loses digits; the form is meant
for short T.
"""

from __future__ import annotations

import torch
import triton

from ._args import check_ssd_args
from ._chunk_kernels import _chunk_scan_kernel, _chunk_state_kernel
from ._launch import Tiling


def ssd_quadratic(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    Dskip: torch.Tensor | None = None,
    *,
    block_m: int = 64,
    num_warps: int = 4,
    num_stages: int = 2,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Quadratic-form SSD. Same inputs and output as `ssd_chunked` / `ssd_scan`."""
    s = check_ssd_args(x, dt, A, Bm, Cm, Dskip, out)
    if out is None:
        out = torch.empty_like(x)
    bp, bn, prec, upcast, hpg = Tiling.of(s, x.dtype)
    bm = max(16, min(block_m, triton.next_power_of_2(s.steps)))
    cs = torch.empty(s.batch, s.heads, s.steps, dtype=torch.float32, device=s.device)
    # One "chunk" spanning the sequence: the state kernel only writes the global cumsum here.
    _chunk_state_kernel[(s.batch * s.heads, 1)](
        x, dt, A, Bm, cs, cs,
        s.steps, s.heads, s.headdim, s.dstate, hpg, s.steps, 1,
        COMPUTE_STATE=False, DOT_PREC="ieee", UPCAST_DOT=False, BLOCK_K=256, BLOCK_P=bp, BLOCK_N=bn,
        num_warps=4,
    )
    row_blocks = triton.cdiv(s.steps, bm)
    _chunk_scan_kernel[(s.batch * s.heads, row_blocks)](
        x, dt, Bm, Cm, Dskip if Dskip is not None else A, cs, cs, cs, out,
        s.steps, s.heads, s.headdim, s.dstate, hpg, s.steps, 1, row_blocks,
        HAS_STATE=False, HAS_CB=False, HAS_D=Dskip is not None, DOT_PREC=prec,
        UPCAST_DOT=upcast,
        BLOCK_M=bm, BLOCK_P=bp, BLOCK_N=bn, num_warps=num_warps, num_stages=num_stages,
    )
    return out
