"""Atomic-add float sum: non-deterministic by design (claims D1, D3).

Each program reduces one BLOCK of x to an fp32 partial in a fixed in-block tree, then adds it into
one fp32 output with `tl.atomic_add`. Float addition is not associative and the order in which
the programs' atomics reach the L2 varies from run to run, so the last bits of the result vary:
this is CCCL's `not_guaranteed` level. The output is zeroed by a memset first (part of the cost).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._checks import check_input
from ._partial import block_sum

BLOCK = 8192
NUM_WARPS = 8


@triton.jit
def _atomic_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    partial = block_sum(x_ptr, n, BLOCK)
    tl.atomic_add(out_ptr, partial, sem="relaxed")


def atomic_sum(x: torch.Tensor, *, block: int = BLOCK, num_warps: int = NUM_WARPS) -> torch.Tensor:
    """0-dim fp32 sum of every element of x (fp32/fp16/bf16, contiguous), via float atomics.

    `block` elements per program; ceil(n / block) atomics land on one address.
    """
    check_input("atomic_sum", x, block)
    n = x.numel()
    out = torch.zeros((), dtype=torch.float32, device=x.device)
    _atomic_sum_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block, num_warps=num_warps)
    return out
