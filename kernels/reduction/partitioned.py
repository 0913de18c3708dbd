"""Fixed-order float sum over an even-share partition sized from an SM count (claim D2).

CUB's run_to_run reduce (cub/device/dispatch/dispatch_reduce.cuh, CCCL 3.6) launches
`grid = min(tiles, sm_occupancy * sm_count * subscription_factor)` blocks and hands each block a
contiguous, near-equal run of tiles (GridEvenShare: the first `tiles % grid` blocks take one tile
more); a second pass folds the block partials in index order. The tree is fixed for one part, so
the bits repeat run to run, but the block boundaries move with the SM count: on another part the
same input is cut elsewhere and rounds differently. `partitioned_sum(x, parts)` is our
fixed-order sum with exactly that partition, so one GPU can run the partition another part's SM
count implies (a simulation of the other part's combining order, not of its arithmetic units).

Pass 1: program p adds its tiles into a TILE-lane fp32 vector in tile order, then reduces the
vector with a fixed tree; pass 2 is `ordered.py`'s fixed-order fold of the partials.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._checks import check_input
from .ordered import FINAL_BLOCK, _fixed_order_kernel

TILE = 4096
NUM_WARPS = 8
# CUB's constants behind the grid: subscription_factor (cub/util_arch.cuh) and the occupancy of a
# 256-thread reduce block on a 2048-thread SM (8 blocks; the real figure depends on registers).
SUBSCRIPTION = 5
BLOCKS_PER_SM = 8


def grid_for(n: int, sm_count: int, *, tile: int = TILE,
             blocks_per_sm: float = BLOCKS_PER_SM) -> int:
    """How many even shares CUB's run_to_run grid would use for n elements on `sm_count` SMs.

    `blocks_per_sm` is the reduce kernel's occupancy (a fraction shrinks every grid alike, which
    small test inputs need)."""
    if n < 1 or sm_count < 1 or blocks_per_sm <= 0:
        raise ValueError(f"expected n >= 1, sm_count >= 1 and blocks_per_sm > 0, got n={n}, "
                         f"sm_count={sm_count}, blocks_per_sm={blocks_per_sm}")
    return max(1, min(triton.cdiv(n, tile), int(blocks_per_sm * sm_count * SUBSCRIPTION)))


def shares(n: int, parts: int, *, tile: int = TILE) -> list[tuple[int, int]]:
    """[start, end) element ranges of the `parts` even shares (GridEvenShare's rule)."""
    tiles = triton.cdiv(n, tile)
    if not 1 <= parts <= tiles:
        raise ValueError(f"expected 1 <= parts <= {tiles} tiles, got {parts}")
    normal, big = divmod(tiles, parts)
    out, start = [], 0
    for p in range(parts):
        count = normal + (1 if p < big else 0)
        end = min(n, (start // tile + count) * tile)
        out.append((start, end))
        start = end
    return out


@triton.jit
def _share_kernel(x_ptr, partial_ptr, n, big, normal, TILE: tl.constexpr):
    pid = tl.program_id(0)
    # shares 0 .. big-1 hold normal + 1 tiles, the rest `normal` tiles
    first = tl.where(pid < big, pid * (normal + 1), big * (normal + 1) + (pid - big) * normal)
    count = tl.where(pid < big, normal + 1, normal)
    acc = tl.zeros((TILE,), dtype=tl.float32)
    for t in range(0, count):
        offs = (first + t).to(tl.int64) * TILE + tl.arange(0, TILE)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(partial_ptr + pid, tl.sum(acc, axis=0))


def partitioned_sum(x: torch.Tensor, parts: int, *, tile: int = TILE,
                    num_warps: int = NUM_WARPS) -> torch.Tensor:
    """0-dim fp32 sum of x (fp32/fp16/bf16, contiguous) over `parts` contiguous even shares.

    Bitwise repeatable for fixed (n, parts, tile); `parts` in [1, ceil(n / tile)].
    """
    check_input("partitioned_sum", x, tile)
    n = x.numel()
    tiles = triton.cdiv(n, tile)
    if not 1 <= parts <= tiles:
        raise ValueError(f"partitioned_sum: expected 1 <= parts <= {tiles}, got {parts}")
    normal, big = divmod(tiles, parts)
    partials = torch.empty(parts, dtype=torch.float32, device=x.device)
    out = torch.empty((), dtype=torch.float32, device=x.device)
    _share_kernel[(parts,)](x, partials, n, big, normal, TILE=tile, num_warps=num_warps)
    _fixed_order_kernel[(1,)](partials, out, parts, FINAL_BLOCK=FINAL_BLOCK, num_warps=4)
    return out
