"""The cuBLAS peer of the Triton GEMM: `torch.matmul` on the same bf16 operands."""

from __future__ import annotations

import torch

from ._checks import check_operands


def torch_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """c [M, N] = a [M, K] @ b [K, N] through torch.matmul (cuBLAS on CUDA), bf16 or fp16 or fp32.

    fp32 here follows `torch.backends.cuda.matmul.allow_tf32`; the SIMT comparison sets it.
    """
    check_operands("torch_matmul", a, b, (torch.bfloat16, torch.float16, torch.float32))
    return torch.matmul(a, b)
