"""float64 reference for the fp32 chains of `chain.py`."""

from __future__ import annotations

import torch


def fp32_chain_reference(x: torch.Tensor, iters: int, mode: str = "fma", *, a: float = 0.999,
                         b: float = -0.001, s: float = -1.0) -> torch.Tensor:
    """The chain of `chain.fp32_chain` stepped in float64 (any shape); returned in float64."""
    y = x.double()
    for _ in range(iters):
        y = (torch.exp2(y * s) if mode == "exp" else y) * a + b
    return y
