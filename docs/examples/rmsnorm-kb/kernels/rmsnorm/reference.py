"""PyTorch forms of RMSNorm: the fp32 ground truth, and the unfused sequence the claim compares
the fused kernel with (each operation a separate kernel and a separate pass over the row)."""

from __future__ import annotations

import torch

EPS = 1e-6


def rmsnorm_reference(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """fp32 RMSNorm of x [rows, cols] with weight [cols]."""
    x32 = x.float()
    return x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + EPS) * weight.float()


def rmsnorm_unfused(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """The same function as separate PyTorch operations in x's dtype."""
    squares = x * x
    mean = squares.mean(-1, keepdim=True)
    scale = torch.rsqrt(mean + EPS)
    return x * scale * weight
