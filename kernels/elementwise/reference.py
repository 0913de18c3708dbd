"""fp32 reference for axpby."""

from __future__ import annotations

import torch


def axpby_reference(x: torch.Tensor, y: torch.Tensor, a: float, b: float) -> torch.Tensor:
    """fp32 a * x + b * y (any shape)."""
    return a * x.float() + b * y.float()


def fp32_chain_reference(x: torch.Tensor, iters: int, mode: str = "fma", *, a: float = 0.999,
                         b: float = -0.001, s: float = -1.0) -> torch.Tensor:
    """The chain of `fp32_chain` stepped in float64 (any shape); returned in float64."""
    y = x.double()
    for _ in range(iters):
        y = (torch.exp2(y * s) if mode == "exp" else y) * a + b
    return y
