"""INT8 GEMM: torch._int_mm, Triton int8 tl.dot and the bf16-emulated path, all exact (int32).

Triton 3.9's interpreter runs the int8 `tl.dot` with int32 accumulation correctly, so the native
Triton path is tested on the CPU too. The emulated path is exact for K <= 1024 (see kernels/gemm/
int8.py), so every K here is within that bound and equality is exact.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from flopkb.kernelpkg import load_op

INT32_SENTINEL = -(2**31)


@pytest.fixture(scope="module")
def int8(kernels) -> SimpleNamespace:
    return SimpleNamespace(ops=load_op("gemm", "int8"), reference=load_op("gemm", "reference"))


def int8_randn(*shape: int, device: torch.device) -> torch.Tensor:
    return torch.randint(-128, 128, shape, dtype=torch.int8, device=device)


@pytest.mark.parametrize(("M", "N", "K"), [(37, 29, 45), (37, 29, 48), (1, 17, 5)])
@pytest.mark.parametrize("path", ["int8_matmul_triton", "int8_matmul_emulated"])
def test_triton_int8_paths_are_exact(int8, device, path, M, N, K):
    a = int8_randn(M, K, device=device)
    b = int8_randn(K, N, device=device)
    out = torch.full((M, N), INT32_SENTINEL, dtype=torch.int32, device=device)
    c = getattr(int8.ops, path)(a, b, out=out)
    assert c.dtype == torch.int32
    assert torch.equal(c, int8.reference.int8_matmul_reference(a, b))


def test_extreme_values_are_exact(int8, device):
    # every product is -128 * -128 = 2^14 and K = 1024: the emulated path's exactness bound
    K = int8.ops.EMULATED_EXACT_MAX_K
    a = torch.full((17, K), -128, dtype=torch.int8, device=device)
    b = torch.full((K, 16), -128, dtype=torch.int8, device=device)
    expected = torch.full((17, 16), 2**24, dtype=torch.int32, device=device)
    assert torch.equal(int8.ops.int8_matmul_emulated(a, b), expected)
    assert torch.equal(int8.ops.int8_matmul_triton(a, b), expected)


def test_column_major_b(int8, device):
    a = int8_randn(37, 45, device=device)
    b = int8_randn(29, 45, device=device).t()
    expected = int8.reference.int8_matmul_reference(a, b)
    assert torch.equal(int8.ops.int8_matmul_triton(a, b), expected)


def test_torch_int_mm_matches_reference(int8, device):
    # cuBLASLt wants M > 16 and K, N multiples of 8; the CPU kernel takes any size
    a = int8_randn(40, 48, device=device)
    b = int8_randn(48, 32, device=device)
    assert torch.equal(int8.ops.int8_matmul_torch(a, b), int8.reference.int8_matmul_reference(a, b))


PATHS = ["int8_matmul_torch", "int8_matmul_triton", "int8_matmul_emulated"]


@pytest.mark.parametrize("path", PATHS)
def test_int8_paths_reject_float(int8, path):
    with pytest.raises(ValueError, match=r"expected a\.dtype"):
        getattr(int8.ops, path)(torch.zeros(4, 8), torch.zeros(8, 8))


def test_int8_rejects_int32_out(int8):
    a = torch.zeros(4, 8, dtype=torch.int8)
    with pytest.raises(ValueError, match="expected out"):
        int8.ops.int8_matmul_triton(a, a.t(), out=torch.empty(4, 4, dtype=torch.int64))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_int_mm_shape_rule_on_cuda(int8):
    a = torch.zeros(8, 16, dtype=torch.int8, device="cuda")
    with pytest.raises(ValueError, match="M > 16"):
        int8.ops.int8_matmul_torch(a, a.t().contiguous())
