"""fp32 reference for axpby."""

from __future__ import annotations

import torch


def axpby_reference(x: torch.Tensor, y: torch.Tensor, a: float, b: float) -> torch.Tensor:
    """fp32 a * x + b * y (any shape)."""
    return a * x.float() + b * y.float()
