"""The Mamba-1 paper's unfused PyTorch scan baseline and the FP32 non-matmul chain kernel, each
against its reference (the chain through the Triton interpreter, set by conftest)."""

from __future__ import annotations

import pytest
import torch

from flopkb.kernelpkg import load_op


def layer_inputs(*args, **kw):
    return load_op("selective_scan", "bench").layer_inputs(*args, **kw)


@pytest.fixture(scope="module")
def unfused(kernels):
    return load_op("scan_baseline", "unfused")


@pytest.fixture(scope="module")
def scan_ref(kernels):
    return load_op("selective_scan", "reference")


@pytest.mark.parametrize("steps", [1, 2, 7, 16, 33, 128])
def test_unfused_scan_matches_the_stepped_reference(unfused, scan_ref, steps):
    # powers of two and lengths the baseline pads with the recurrence's identity (a=1, x=0)
    args = layer_inputs(2, 5, steps, 4, dtype=torch.float32, seed=steps)
    got = unfused.selective_scan_unfused(*args, True)
    want = scan_ref.selective_scan_reference(*args, True)
    assert got.shape == want.shape
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-5)


def test_unfused_scan_without_skip_bias_or_softplus(unfused, scan_ref):
    u, delta, A, Bm, Cm, _, _ = layer_inputs(1, 3, 12, 2, dtype=torch.float32, seed=5)
    delta = delta.abs() + 0.01
    got = unfused.selective_scan_unfused(u, delta, A, Bm, Cm)
    assert torch.allclose(got, scan_ref.selective_scan_reference(u, delta, A, Bm, Cm),
                          rtol=1e-4, atol=1e-5)


def test_bf16_inputs_give_bf16_out_close_to_the_reference(unfused, scan_ref):
    args = layer_inputs(1, 8, 64, 16, seed=2)
    got = unfused.selective_scan_unfused(*args, True)
    want = scan_ref.selective_scan_reference(*args, True)
    assert got.dtype == torch.bfloat16
    err = (got.float() - want.float()).norm() / want.float().norm()
    assert err < 1e-2


def test_blelloch_scan_is_the_sequential_recurrence(unfused):
    g = torch.Generator().manual_seed(0)
    a = torch.rand(2, 3, 64, 4, generator=g)
    x = torch.randn(2, 3, 64, 4, generator=g, dtype=torch.float64).float()
    h, want = torch.zeros(2, 3, 4), []
    for t in range(64):
        h = a[:, :, t] * h + x[:, :, t]
        want.append(h)
    got = unfused.blelloch_scan(a.clone(), x.clone())
    assert torch.allclose(got, torch.stack(want, dim=2), rtol=1e-5, atol=1e-6)


def test_blelloch_scan_refuses_a_length_that_is_no_power_of_two(unfused):
    with pytest.raises(ValueError, match="power-of-two"):
        unfused.blelloch_scan(torch.ones(1, 1, 6, 1), torch.ones(1, 1, 6, 1))


@pytest.fixture(scope="module")
def chain(kernels):
    return load_op("nonmatmul", "chain"), load_op("nonmatmul", "reference")


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


def test_fp32_chain_counts_flops_per_step(chain):
    ops, _ = chain
    assert ops.flops(10, 256, "fma") == 2 * 256 * 10
    assert ops.flops(10, 256, "exp") == 4 * 256 * 10
    assert ops.bytes_moved(10) == 80
