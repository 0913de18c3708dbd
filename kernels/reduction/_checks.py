"""Input validation for the reduction wrappers."""

from __future__ import annotations

import torch

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def check_input(name: str, x: torch.Tensor, block: int) -> None:
    """x must be a non-empty contiguous float tensor; block a power of two >= 128."""
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in DTYPES:
        raise ValueError(f"{name}: expected dtype in {list(DTYPES)}, got {x.dtype}")
    if x.numel() == 0:
        raise ValueError(f"{name}: expected a non-empty tensor, got shape {tuple(x.shape)}")
    if not x.is_contiguous():
        raise ValueError(f"{name}: expected a contiguous tensor, got strides {x.stride()}")
    if block < 128 or block & (block - 1):
        raise ValueError(f"{name}: expected block a power of two >= 128, got {block}")
