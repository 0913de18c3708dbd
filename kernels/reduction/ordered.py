"""Fixed-order float sum: bitwise deterministic across runs (claims D1, D3).

Pass 1 writes one fp32 partial per BLOCK of x (the same in-block tree as the atomic version) to a
buffer, indexed by program id, so scheduling order cannot matter. Pass 2, one program, folds the
partials into an accumulator vector of FINAL_BLOCK lanes in index order (lane i adds partials
i, i + FINAL_BLOCK, ... in that order) and reduces the vector with a fixed tree.

What the result depends on (the launch config that defines it): n, `block`, `num_warps` of pass 1,
FINAL_BLOCK and the compiled reduction trees (Triton version and GPU architecture). For a fixed
config it is bitwise identical on every run and every launch; between configs it may differ in the
last bits. The same config on another GPU model should agree (IEEE fp32 adds, no contraction),
which is CCCL's `gpu_to_gpu` aim, but that is not tested here (it needs two GPU models).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._checks import check_input
from ._partial import block_sum

BLOCK = 8192
NUM_WARPS = 8
FINAL_BLOCK = 1024


@triton.jit
def _partials_kernel(x_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    tl.store(partial_ptr + tl.program_id(0), block_sum(x_ptr, n, BLOCK))


@triton.jit
def _fixed_order_kernel(partial_ptr, out_ptr, num_partials, FINAL_BLOCK: tl.constexpr):
    offs = tl.arange(0, FINAL_BLOCK)
    acc = tl.zeros((FINAL_BLOCK,), dtype=tl.float32)
    for start in range(0, num_partials, FINAL_BLOCK):
        idx = start + offs
        acc += tl.load(partial_ptr + idx, mask=idx < num_partials, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


def ordered_sum(x: torch.Tensor, *, block: int = BLOCK, num_warps: int = NUM_WARPS) -> torch.Tensor:
    """0-dim fp32 sum of every element of x (fp32/fp16/bf16, contiguous), in a fixed order."""
    check_input("ordered_sum", x, block)
    n = x.numel()
    num_partials = triton.cdiv(n, block)
    partials = torch.empty(num_partials, dtype=torch.float32, device=x.device)
    out = torch.empty((), dtype=torch.float32, device=x.device)
    _partials_kernel[(num_partials,)](x, partials, n, BLOCK=block, num_warps=num_warps)
    _fixed_order_kernel[(1,)](partials, out, num_partials, FINAL_BLOCK=FINAL_BLOCK, num_warps=4)
    return out
