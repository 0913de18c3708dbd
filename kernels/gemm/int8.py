"""INT8 GEMM three ways: c [M, N] int32 = a [M, K] int8 @ b [K, N] int8.

- `int8_matmul_torch`: `torch._int_mm` (cuBLASLt IMMA on CUDA), the native peer.
- `int8_matmul_triton`: Triton `tl.dot` on int8 tiles with int32 accumulation (native integer
  tensor-core MMA: wgmma s8 on Hopper).
- `int8_matmul_emulated`: the path a kernel takes when it does not use the integer MMA: the int8
  tiles are loaded as int8 (same bytes moved), converted to bf16 in registers and multiplied on the
  bf16 tensor cores with fp32 accumulation, then the integral fp32 result is converted to int32.
  This is what practitioners mean by "emulated" low-bit GEMM (dequantize-in-kernel, as weight-only
  quantization kernels and INT4-on-Hopper paths do), rather than scalar integer MACs on CUDA cores,
  which nobody would ship against a tensor-core alternative. Claim C4 compares this against native.

Exactness of the emulated path: every int8 value is exact in bf16 (8 significant bits) and every
product (|p| <= 2^14) is exact in fp32. The fp32 accumulator stays exact while every partial sum is
an integer of magnitude <= 2^24, which is guaranteed for K <= 2^24 / 2^14 = 1024. Beyond that the
result equals the native one whenever the partial sums stay under 2^24 (true for typical data, and
the benchmark checks equality on its inputs); it is not guaranteed.
"""

from __future__ import annotations

import torch
import triton.language as tl

from ._checks import check_operands, check_out
from ._tiled import launch, tuned_gemm

EMULATED_EXACT_MAX_K = 1024


# int8 tiles are half the bytes of bf16 ones: a K step of 128 keeps the same shared-memory
# footprint per stage as the bf16 GEMM's 64.
_native_kernel = tuned_gemm([(128, 256, 128, 3, 8), (128, 128, 128, 4, 8)])
_emulated_kernel = tuned_gemm([(128, 256, 64, 3, 8), (128, 128, 64, 4, 8)])


def int8_matmul_torch(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """c [M, N] int32 = a [M, K] int8 @ b [K, N] int8 through `torch._int_mm`.

    On CUDA `_int_mm` needs M > 16 and K, N multiples of 8 (cuBLASLt); the check says so up front.
    """
    M, N, K = check_operands("int8_matmul_torch", a, b, (torch.int8,))
    if a.is_cuda and (M <= 16 or K % 8 or N % 8):
        raise ValueError(
            f"int8_matmul_torch: expected M > 16 and K, N multiples of 8 on CUDA, got M={M}, "
            f"K={K}, N={N}"
        )
    return torch._int_mm(a, b)


def int8_matmul_triton(
    a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None
) -> torch.Tensor:
    """c [M, N] int32 = a [M, K] int8 @ b [K, N] int8: Triton int8 `tl.dot`, int32 accumulation.

    For the native MMA on Hopper, give b K-contiguous (b = w.t() for a w [N, K] weight): 8-bit
    wgmma reads both operands K-major.
    """
    M, N, _ = check_operands("int8_matmul_triton", a, b, (torch.int8,))
    c = check_out("int8_matmul_triton", out, (M, N), torch.int32, a.device)
    launch(_native_kernel, a, b, c, acc_dtype=tl.int32)
    return c


def int8_matmul_emulated(
    a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None
) -> torch.Tensor:
    """c [M, N] int32 = a [M, K] int8 @ b [K, N] int8 on bf16 tensor cores (see the module doc).

    Exact for K <= EMULATED_EXACT_MAX_K (1024) on any int8 data.
    """
    M, N, _ = check_operands("int8_matmul_emulated", a, b, (torch.int8,))
    c = check_out("int8_matmul_emulated", out, (M, N), torch.int32, a.device)
    launch(_emulated_kernel, a, b, c, acc_dtype=tl.float32, upcast_bf16=True)
    return c
