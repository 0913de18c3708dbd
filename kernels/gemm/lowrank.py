"""Low-rank GEMM (claim C3): y [M, N] = (x [M, K] @ U [K, r]) @ V [r, N] vs dense x @ W [K, N].

Two GEMMs through the bf16 intermediate t = x @ U [M, r] (rounded to bf16, as a factorised linear
layer does), either through the bundled Triton GEMM or through torch.matmul (cuBLAS).
"""

from __future__ import annotations

import torch

from ._checks import check_operands
from .triton_gemm import matmul

BACKENDS = ("triton", "torch")


def lowrank_matmul(
    x: torch.Tensor, U: torch.Tensor, V: torch.Tensor, *, backend: str = "triton",
    schedule: str = "auto",
) -> torch.Tensor:
    """y [M, N] bf16 = (x [M, K] @ U [K, r]) @ V [r, N], all bf16; backend "triton" or "torch".

    `schedule` picks the Triton GEMM schedule (see triton_gemm.matmul); ignored for "torch".
    """
    if backend not in BACKENDS:
        raise ValueError(f"lowrank_matmul: expected backend in {list(BACKENDS)}, got {backend!r}")
    check_operands("lowrank_matmul", x, U, (torch.bfloat16,))
    check_operands("lowrank_matmul", U, V, (torch.bfloat16,))
    if backend == "torch":
        return torch.matmul(torch.matmul(x, U), V)
    return matmul(matmul(x, U, schedule=schedule), V, schedule=schedule)


def dense_matmul(
    x: torch.Tensor, W: torch.Tensor, *, backend: str = "triton", schedule: str = "auto"
) -> torch.Tensor:
    """y [M, N] bf16 = x [M, K] @ W [K, N]: the dense baseline of the low-rank pair."""
    if backend not in BACKENDS:
        raise ValueError(f"dense_matmul: expected backend in {list(BACKENDS)}, got {backend!r}")
    check_operands("dense_matmul", x, W, (torch.bfloat16,))
    return torch.matmul(x, W) if backend == "torch" else matmul(x, W, schedule=schedule)
