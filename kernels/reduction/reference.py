"""Ground truth for the reductions: the sum in float64 (exact enough to bound fp32 errors), and
the float64 scatter-add `scatter.py` is checked against."""

from __future__ import annotations

import torch


def sum_reference(x: torch.Tensor) -> torch.Tensor:
    """0-dim float64 sum of every element of x."""
    return x.double().sum()


def sum_error_bound(x: torch.Tensor, block: int) -> float:
    """A bound on |fp32 blocked sum - exact sum|: (depth of the adds) * 2^-24 * sum |x|.

    Every element goes through at most log2(block) in-block tree adds plus the combining adds
    (log2 of the partial count for a tree, the partial count itself for a serial chain, which is
    what atomics are); each add contributes at most one fp32 rounding of 2^-24 relative.
    """
    n = x.numel()
    partials = -(-n // block)
    depth = block.bit_length() + partials + 1
    return depth * 2.0**-24 * x.double().abs().sum().item()


def scatter_add_reference(src: torch.Tensor, index: torch.Tensor, bins: int) -> torch.Tensor:
    """float64 [bins] = zeros.index_add_(0, index, src) for src [n], index [n] in [0, bins)."""
    return torch.zeros(bins, dtype=torch.float64, device=src.device).index_add_(
        0, index, src.double())
