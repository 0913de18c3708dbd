"""Pure-PyTorch ground truth for the GEMM family: fp32 products, exact integer products."""

from __future__ import annotations

import torch


def matmul_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """fp32 c [M, N] = a [M, K] @ b [K, N] with inputs upcast to fp32 (TF32 off on CUDA)."""
    previous = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return a.float() @ b.float()
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous


def int8_matmul_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Exact int32 c [M, N] = a [M, K] int8 @ b [K, N] int8 (float64 sums are exact below 2^53)."""
    return (a.double() @ b.double()).to(torch.int32)


def lowrank_reference(x: torch.Tensor, U: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    """fp32 y [M, N] = (x [M, K] @ U [K, r]) @ V [r, N] without the bf16 rounding of x @ U."""
    return matmul_reference(matmul_reference(x, U), V)
