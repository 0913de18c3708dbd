"""axpby against its fp32 reference.

Bounds per element (rtol = atol): fp32 1e-6 (one rounding of a * x and of the sum); fp16 1e-3
(output rounding 2^-11); bf16 one ulp, 2^-7 = 7.9e-3 (round-to-nearest on the GPU gives half of
that, but Triton 3.9's CPU interpreter truncates fp32 -> bf16 stores).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from op_modules import op_modules


@pytest.fixture(scope="module")
def ew(kernels) -> SimpleNamespace:
    return op_modules("elementwise", "reference", "cost", ops="forward")


@pytest.mark.parametrize(("shape", "dtype", "tol"), [
    ((4097,), torch.float32, 1e-6),
    ((37, 45), torch.float32, 1e-6),
    ((9001,), torch.bfloat16, 7.9e-3),
    ((3,), torch.float16, 1e-3),
])
def test_axpby_matches_reference(ew, device, shape, dtype, tol):
    x = torch.randn(shape, device=device).to(dtype)
    y = torch.randn(shape, device=device).to(dtype)
    out = torch.full(shape, float("nan"), device=device, dtype=dtype)
    result = ew.ops.axpby(x, y, 1.5, -0.25, out=out)
    assert result.data_ptr() == out.data_ptr()
    assert not torch.isnan(result).any()
    ref = ew.reference.axpby_reference(x, y, 1.5, -0.25)
    assert torch.allclose(result.float(), ref, rtol=tol, atol=tol)


def test_axpby_rejects_bad_input(ew):
    x = torch.zeros(8)
    with pytest.raises(ValueError, match="one shape"):
        ew.ops.axpby(x, torch.zeros(9), 1.0, 1.0)
    with pytest.raises(ValueError, match="dtype in"):
        ew.ops.axpby(x.int(), x.int(), 1.0, 1.0)
    with pytest.raises(ValueError, match="contiguous"):
        ew.ops.axpby(torch.zeros(4, 4).t(), torch.zeros(4, 4).t(), 1.0, 1.0)
    with pytest.raises(ValueError, match="expected a contiguous out"):
        ew.ops.axpby(x, x, 1.0, 1.0, out=torch.zeros(8, dtype=torch.float16))


def test_cost(ew):
    assert ew.cost.flops(10) == 30
    assert ew.cost.bytes_moved(10, elt=2) == 60
