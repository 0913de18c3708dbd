"""Low-rank pair (x U) V through the Triton GEMM and through torch, against the fp32 reference.

Bound: the intermediate x U is rounded to bf16 (as a factorised layer does) and y again, so the
relative Frobenius error against the unrounded fp32 reference is a few 2^-9: 2e-2 is the bound.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from flopkb.kernelpkg import load_op


@pytest.fixture(scope="module")
def lowrank(kernels) -> SimpleNamespace:
    return SimpleNamespace(ops=load_op("gemm", "lowrank"), reference=load_op("gemm", "reference"))


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


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
