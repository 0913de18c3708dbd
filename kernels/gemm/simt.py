"""SIMT fp32 GEMM: the bf16 GEMM's tiled schedule on the CUDA cores instead of the tensor cores.

`tl.dot(..., input_precision="ieee")` on fp32 operands has no MMA instruction to map to (Hopper's
tensor cores take fp32 only as tf32), so Triton lowers it to FFMA on the CUDA cores: the schedule
(tiles staged in shared memory, register blocking) is a real SGEMM, the arithmetic unit is the
SIMT one. That is the quantity `tensor_to_simt_ratio` compares. The peer is cuBLAS SGEMM
(`torch.matmul` on fp32 with TF32 disabled).
"""

from __future__ import annotations

import torch
import triton.language as tl

from ._checks import check_operands, check_out
from ._tiled import launch, tuned_gemm

# FMA dots want fewer, thinner K steps than wgmma: each thread holds a register tile of c and
# streams BLOCK_K rank-1 updates through it.
_kernel = tuned_gemm([(128, 128, 16, 3, 8), (128, 64, 32, 3, 4), (64, 64, 32, 3, 4)])


def simt_matmul(
    a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None
) -> torch.Tensor:
    """c [M, N] fp32 = a [M, K] fp32 @ b [K, N] fp32 with IEEE fp32 FMAs (no tensor cores)."""
    M, N, _ = check_operands("simt_matmul", a, b, (torch.float32,))
    c = check_out("simt_matmul", out, (M, N), torch.float32, a.device)
    launch(_kernel, a, b, c, acc_dtype=tl.float32, input_precision="ieee")
    return c
