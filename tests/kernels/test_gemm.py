"""The GEMM family (kernels/gemm) against the fp32 reference (CPU: interpreter): the Triton bf16
GEMM, the cuBLAS peer, the SIMT fp32 GEMM, the int8 paths, the low-rank pair.

Error bound: relative Frobenius error ||c - ref|| / ||ref||. bf16 inputs are exact in fp32, the
kernel accumulates in fp32 and rounds c to bf16 once (relative 2^-9), so 1e-2 is loose; the SIMT
path is IEEE fp32 throughout, so 1e-5.

INT8: torch._int_mm, Triton int8 tl.dot and the bf16-emulated path, all exact (int32). Triton
3.9's interpreter runs the int8 `tl.dot` with int32 accumulation correctly, so the native Triton
path is tested on the CPU too. The emulated path is exact for K <= 1024 (see kernels/gemm/int8.py),
so every K here is within that bound and equality is exact.

Low rank (x U) V: the intermediate x U is rounded to bf16 (as a factorised layer does) and y
again, so the relative Frobenius error against the unrounded fp32 reference is a few 2^-9: 2e-2
is the bound.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from accuracy import rel_err
from op_modules import op_modules


@pytest.fixture(scope="module")
def gemm(kernels) -> SimpleNamespace:
    """The GEMM family's modules (the `kernels` fixture imports the package first)."""
    return op_modules("gemm", "triton_gemm", "cublas", "simt", "reference", "cost")


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


INT32_SENTINEL = -(2**31)


@pytest.fixture(scope="module")
def int8(kernels) -> SimpleNamespace:
    return op_modules("gemm", "reference", ops="int8")


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


@pytest.fixture(scope="module")
def lowrank(kernels) -> SimpleNamespace:
    return op_modules("gemm", "reference", ops="lowrank")


@pytest.mark.parametrize("backend", ["triton", "torch"])
@pytest.mark.parametrize(("M", "K", "r", "N"), [(37, 45, 5, 29), (19, 33, 17, 40)])
def test_lowrank_matches_reference(lowrank, device, backend, M, K, r, N):
    x = torch.randn(M, K, device=device).bfloat16()
    U = torch.randn(K, r, device=device).bfloat16()
    V = torch.randn(r, N, device=device).bfloat16()
    y = lowrank.ops.lowrank_matmul(x, U, V, backend=backend)
    assert y.shape == (M, N) and y.dtype == torch.bfloat16
    assert rel_err(y, lowrank.reference.lowrank_reference(x, U, V)) < 2e-2


@pytest.mark.parametrize("schedule", ["pointer", "tma_persistent"])
def test_lowrank_triton_schedules(lowrank, device, schedule):
    x = torch.randn(37, 48, device=device).bfloat16()
    U = torch.randn(48, 16, device=device).bfloat16()
    V = torch.randn(16, 40, device=device).bfloat16()
    y = lowrank.ops.lowrank_matmul(x, U, V, schedule=schedule)
    assert rel_err(y, lowrank.reference.lowrank_reference(x, U, V)) < 2e-2


@pytest.mark.parametrize("backend", ["triton", "torch"])
def test_dense_baseline_matches_reference(lowrank, device, backend):
    x = torch.randn(37, 45, device=device).bfloat16()
    W = torch.randn(45, 29, device=device).bfloat16()
    y = lowrank.ops.dense_matmul(x, W, backend=backend)
    assert rel_err(y, lowrank.reference.matmul_reference(x, W)) < 1e-2


def test_lowrank_rejects_bad_input(lowrank):
    x = torch.zeros(4, 6, dtype=torch.bfloat16)
    U = torch.zeros(6, 2, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="matching K"):
        lowrank.ops.lowrank_matmul(x, U, torch.zeros(3, 5, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="expected backend"):
        lowrank.ops.lowrank_matmul(x, U, torch.zeros(2, 5, dtype=torch.bfloat16), backend="cuda")
    with pytest.raises(ValueError, match="dtype"):
        lowrank.ops.lowrank_matmul(x.float(), U.float(), torch.zeros(2, 5))
