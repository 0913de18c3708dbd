"""FLOP and byte counts of one `forward.fp32_chain` call over n fp32 elements."""

from __future__ import annotations

# FLOPs per chain step and element: one FMA (2), or multiply + exp2 + FMA (4, exp2 counted as one)
FLOPS_PER_STEP = {"fma": 2, "exp": 4}


def flops(n: int, iters: int, mode: str = "fma") -> int:
    """FLOPS_PER_STEP[mode] per step per element."""
    return FLOPS_PER_STEP[mode] * iters * n


def bytes_moved(n: int) -> int:
    """One fp32 read and one fp32 write per element."""
    return 8 * n
