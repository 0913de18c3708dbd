"""Atomic and fixed-order sums against a float64 reference; determinism of the ordered one.

Bound: |sum - ref| <= (tree depth + partial count + 1) * 2^-24 * sum|x| (reference.sum_error_bound),
a worst-case fp32 bound, for both kernels. Bitwise checks compare `.view(torch.int32)`.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from flopkb.kernelpkg import load_op

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.fixture(scope="module")
def red(kernels) -> SimpleNamespace:
    return SimpleNamespace(
        atomic=load_op("reduction", "atomic"),
        ordered=load_op("reduction", "ordered"),
        reference=load_op("reduction", "reference"),
        cost=load_op("reduction", "cost"),
    )


def bits(t: torch.Tensor) -> int:
    return int(t.reshape(1).view(torch.int32).item())


@pytest.mark.parametrize("fn", ["atomic_sum", "ordered_sum"])
# 140_001 / 128 -> 1094 partials: more than FINAL_BLOCK, so pass 2 loops
@pytest.mark.parametrize(("n", "block"), [(1, 128), (20001, 8192), (140_001, 128)])
def test_sum_matches_reference(red, device, fn, n, block):
    x = torch.randn(n, device=device)
    module = red.atomic if fn == "atomic_sum" else red.ordered
    s = getattr(module, fn)(x, block=block)
    assert s.shape == () and s.dtype == torch.float32
    err = abs(s.double().item() - red.reference.sum_reference(x).item())
    assert err <= red.reference.sum_error_bound(x, block)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_inputs_accumulate_in_fp32(red, device, dtype):
    x = torch.randn(3001, 7, device=device).to(dtype)
    s = red.ordered.ordered_sum(x, block=1024)
    err = abs(s.item() - red.reference.sum_reference(x).item())
    assert err <= red.reference.sum_error_bound(x, 1024)


def test_ordered_sum_is_bitwise_repeatable(red, device):
    x = torch.randn(20_001, device=device)
    first = bits(red.ordered.ordered_sum(x, block=256))
    assert all(bits(red.ordered.ordered_sum(x, block=256)) == first for _ in range(3))


@pytest.mark.parametrize("fn", ["atomic_sum", "ordered_sum"])
def test_rejects_bad_input(red, fn):
    module = red.atomic if fn == "atomic_sum" else red.ordered
    with pytest.raises(ValueError, match="expected dtype"):
        getattr(module, fn)(torch.zeros(10, dtype=torch.int32))
    with pytest.raises(ValueError, match="non-empty"):
        getattr(module, fn)(torch.zeros(0))
    with pytest.raises(ValueError, match="contiguous"):
        getattr(module, fn)(torch.zeros(4, 4).t())
    with pytest.raises(ValueError, match="power of two"):
        getattr(module, fn)(torch.zeros(10), block=1000)


def test_cost(red):
    assert red.cost.flops(10) == 10
    assert red.cost.bytes_moved(10) == 44


@pytest.mark.gpu
@requires_cuda
def test_atomic_nondeterminism_is_observable_and_ordered_is_not(red):
    x = torch.randn(16 * 2**20, device="cuda")
    atomic = {bits(red.atomic.atomic_sum(x)) for _ in range(100)}
    ordered = {bits(red.ordered.ordered_sum(x)) for _ in range(100)}
    assert len(ordered) == 1
    assert len(atomic) > 1
