"""The FP32 non-matmul chain kernel (kernels/nonmatmul) against its float64 reference, through
the Triton interpreter (set by conftest); its argument checks and cost counts."""

from __future__ import annotations

import pytest
import torch

from flopkb.kernelpkg import load_op


@pytest.fixture(scope="module")
def chain(kernels):
    return load_op("nonmatmul", "forward"), load_op("nonmatmul", "reference")


@pytest.mark.parametrize("mode", ["fma", "exp"])
@pytest.mark.parametrize(("n", "iters"), [(1, 1), (1000, 3), (4097, 40)])
def test_fp32_chain_matches_its_float64_reference(chain, mode, n, iters):
    ops, ref = chain
    x = -torch.rand(n, generator=torch.Generator().manual_seed(n))
    got = ops.fp32_chain(x, iters, mode)
    want = ref.fp32_chain_reference(x, iters, mode)
    assert got.dtype == torch.float32
    assert torch.allclose(got.double(), want, rtol=1e-5, atol=1e-6)


def test_the_fma_chain_keeps_its_inputs_apart(chain):
    # a chain that converged to one constant would let a kernel writing that constant pass
    ops, _ = chain
    got = ops.fp32_chain(-torch.linspace(0, 1, 512), 256, "fma")
    assert torch.unique(got).numel() > 400


@pytest.mark.parametrize(("args", "match"), [
    ((torch.ones(4), 3, "sin"), "mode"),
    ((torch.ones(4, dtype=torch.float64), 3), "float32"),
    ((torch.ones(4, 4).t(), 3), "contiguous"),
    ((torch.ones(4), 0), "iters"),
])
def test_fp32_chain_refuses_bad_arguments(chain, args, match):
    with pytest.raises(ValueError, match=match):
        chain[0].fp32_chain(*args)


def test_fp32_chain_counts_flops_per_step(kernels):
    cost = load_op("nonmatmul", "cost")
    assert cost.flops(10, 256, "fma") == 2 * 256 * 10
    assert cost.flops(10, 256, "exp") == 4 * 256 * 10
    assert cost.bytes_moved(10) == 80
