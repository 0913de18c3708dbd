"""SIMT fp32 GEMM: the bf16 GEMM's tiled schedule on the CUDA cores instead of the tensor cores.

`tl.dot(..., input_precision="ieee")` on fp32 operands has no MMA instruction to map to (Hopper's
tensor cores take fp32 only as tf32), so Triton lowers it to FFMA on the CUDA cores: the schedule
(tiles staged in shared memory, register blocking) is a real SGEMM, the arithmetic unit is the
SIMT one. That is the quantity `tensor_to_simt_ratio` compares. The peer is cuBLAS SGEMM
(`torch.matmul` on fp32 with TF32 disabled).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ._checks import check_operands, check_out
from ._tiled import even_k, gemm_kernel, interpreted, interpreter_configs, launch


def _configs() -> list[triton.Config]:
    if interpreted():
        return interpreter_configs()
    # FMA dots want fewer, thinner K steps than wgmma: each thread holds a register tile of c
    # and streams BLOCK_K rank-1 updates through it.
    return [
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 16, "GROUP_M": 8},
                      num_stages=3, num_warps=8),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8},
                      num_stages=3, num_warps=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8},
                      num_stages=3, num_warps=4),
    ]


_kernel = triton.autotune(configs=_configs(), key=["M", "N", "K"])(
    triton.heuristics({"EVEN_K": even_k})(gemm_kernel)
)


def simt_matmul(
    a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None
) -> torch.Tensor:
    """c [M, N] fp32 = a [M, K] fp32 @ b [K, N] fp32 with IEEE fp32 FMAs (no tensor cores)."""
    M, N, _ = check_operands("simt_matmul", a, b, (torch.float32,))
    c = check_out("simt_matmul", out, (M, N), torch.float32, a.device)
    launch(_kernel, a, b, c, acc_dtype=tl.float32, input_precision="ieee")
    return c
