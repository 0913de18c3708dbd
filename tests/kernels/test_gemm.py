"""Triton bf16 GEMM, cuBLAS peer and SIMT fp32 GEMM against the fp32 reference (CPU: interpreter).

Error bound: relative Frobenius error ||c - ref|| / ||ref||. bf16 inputs are exact in fp32, the
kernel accumulates in fp32 and rounds c to bf16 once (relative 2^-9), so 1e-2 is loose; the SIMT
path is IEEE fp32 throughout, so 1e-5.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from flopkb.kernelpkg import load_op


@pytest.fixture(scope="module")
def gemm(kernels) -> SimpleNamespace:
    """The GEMM family's modules (the `kernels` fixture imports the package first)."""
    names = ("triton_gemm", "cublas", "simt", "reference", "cost")
    return SimpleNamespace(**{name: load_op("gemm", name) for name in names})


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


# Odd sizes cross every tile edge; K=48 exercises the EVEN_K path under 16-wide interpreter tiles.
SHAPES = [(37, 29, 45), (37, 29, 48), (1, 17, 5), (70, 3, 33)]


@pytest.mark.parametrize(("M", "N", "K"), SHAPES)
def test_triton_gemm_matches_reference(gemm, device, M, N, K):
    a = torch.randn(M, K, device=device).bfloat16()
    b = torch.randn(K, N, device=device).bfloat16()
    out = torch.full((M, N), float("nan"), device=device, dtype=torch.bfloat16)
    c = gemm.triton_gemm.matmul(a, b, out=out)
    assert c.data_ptr() == out.data_ptr()
    assert not torch.isnan(c).any()
    assert rel_err(c, gemm.reference.matmul_reference(a, b)) < 1e-2


# K and N multiples of 8 (16-byte rows, TMA's rule); M and K still cross the tile edges
TMA_SHAPES = [(37, 40, 48), (37, 40, 40), (70, 8, 24)]


@pytest.mark.parametrize("schedule", ["auto", "pointer", "tma", "tma_persistent"])
@pytest.mark.parametrize(("M", "N", "K"), TMA_SHAPES)
def test_every_schedule_matches_reference(gemm, device, schedule, M, N, K):
    a = torch.randn(M, K, device=device).bfloat16()
    b = torch.randn(K, N, device=device).bfloat16()
    out = torch.full((M, N), float("nan"), device=device, dtype=torch.bfloat16)
    c = gemm.triton_gemm.matmul(a, b, out=out, schedule=schedule)
    assert not torch.isnan(c).any()
    assert rel_err(c, gemm.reference.matmul_reference(a, b)) < 1e-2


def test_tma_schedule_rejects_unaligned_rows(gemm):
    # N = 29: rows of b and c are 58 bytes, not a multiple of 16
    a = torch.ones(8, 16, dtype=torch.bfloat16)
    b = torch.ones(16, 29, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="16-byte-aligned"):
        gemm.triton_gemm.matmul(a, b, schedule="tma")
    with pytest.raises(ValueError, match="expected schedule"):
        gemm.triton_gemm.matmul(a, b, schedule="wgmma")


def test_triton_gemm_strided_operands(gemm, device):
    # a transposed view and a column-major b: the kernel takes strides, no copies
    a = torch.randn(45, 37, device=device).bfloat16().t()
    b = torch.randn(29, 45, device=device).bfloat16().t()
    c = gemm.triton_gemm.matmul(a, b)
    assert rel_err(c, gemm.reference.matmul_reference(a, b)) < 1e-2


def test_cublas_peer_matches_reference(gemm, device):
    a = torch.randn(37, 45, device=device).bfloat16()
    b = torch.randn(45, 29, device=device).bfloat16()
    assert rel_err(gemm.cublas.torch_matmul(a, b), gemm.reference.matmul_reference(a, b)) < 1e-2


@pytest.mark.parametrize(("M", "N", "K"), [(37, 29, 45), (33, 18, 64)])
def test_simt_gemm_matches_reference(gemm, device, M, N, K):
    a = torch.randn(M, K, device=device)
    b = torch.randn(K, N, device=device)
    out = torch.full((M, N), float("nan"), device=device)
    c = gemm.simt.simt_matmul(a, b, out=out)
    assert not torch.isnan(c).any()
    assert rel_err(c, gemm.reference.matmul_reference(a, b)) < 1e-5


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "dtype", "message"),
    [
        ((4, 5), (6, 3), torch.bfloat16, "matching K"),
        ((4, 5, 1), (5, 3), torch.bfloat16, "2-D"),
        ((4, 5), (5, 3), torch.float16, "dtype"),
        ((0, 5), (5, 3), torch.bfloat16, "non-empty"),
    ],
)
def test_triton_gemm_rejects_bad_input(gemm, a_shape, b_shape, dtype, message):
    with pytest.raises(ValueError, match=message):
        gemm.triton_gemm.matmul(torch.ones(a_shape, dtype=dtype), torch.ones(b_shape, dtype=dtype))


def test_triton_gemm_rejects_bad_out(gemm):
    a = torch.zeros(4, 5, dtype=torch.bfloat16)
    b = torch.zeros(5, 3, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="expected out"):
        gemm.triton_gemm.matmul(a, b, out=torch.empty(4, 3))


def test_simt_rejects_bf16(gemm):
    a = torch.ones(4, 5, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match=r"expected a\.dtype"):
        gemm.simt.simt_matmul(a, a.t())


def test_cost_formulas(gemm):
    assert gemm.cost.flops(2, 3, 4) == 48
    assert gemm.cost.bytes_moved(2, 3, 4) == (8 + 12) * 2 + 6 * 2
    assert gemm.cost.bytes_moved(2, 3, 4, in_bytes=1, out_bytes=4) == 20 + 24
    assert gemm.cost.lowrank_flops(8, 16, 32, 2) == 2 * 8 * 16 * 2 + 2 * 8 * 2 * 32
