"""The Mamba-1 paper's unfused PyTorch scan baseline (kernels/scan_baseline) against the stepped
reference: the whole scan (same signature as `selective_scan_reference`) and its Blelloch scan
against the stepped linear recurrence; odd and power-of-two lengths, fixed seeds."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from flopkb.kernelpkg import load_op
from tests.kernels.op_modules import op_modules


def layer_inputs(*args, **kw):
    return load_op("selective_scan", "bench").layer_inputs(*args, **kw)


@pytest.fixture(scope="module")
def scan(kernels) -> SimpleNamespace:
    return op_modules("scan_baseline", "unfused", "reference")


@pytest.mark.parametrize("steps", [1, 2, 7, 16, 33, 128])
def test_unfused_scan_matches_the_stepped_reference(scan, steps):
    # powers of two and lengths the baseline pads with the recurrence's identity (a=1, x=0)
    args = layer_inputs(2, 5, steps, 4, dtype=torch.float32, seed=steps)
    got = scan.unfused.selective_scan_unfused(*args, True)
    want = scan.reference.selective_scan_reference(*args, True)
    assert got.shape == want.shape
    assert torch.allclose(got, want, rtol=1e-4, atol=1e-5)


def test_unfused_scan_without_skip_bias_or_softplus(scan):
    u, delta, A, Bm, Cm, _, _ = layer_inputs(1, 3, 12, 2, dtype=torch.float32, seed=5)
    delta = delta.abs() + 0.01
    got = scan.unfused.selective_scan_unfused(u, delta, A, Bm, Cm)
    assert torch.allclose(got, scan.reference.selective_scan_reference(u, delta, A, Bm, Cm),
                          rtol=1e-4, atol=1e-5)


def test_bf16_inputs_give_bf16_out_close_to_the_reference(scan):
    args = layer_inputs(1, 8, 64, 16, seed=2)
    got = scan.unfused.selective_scan_unfused(*args, True)
    want = scan.reference.selective_scan_reference(*args, True)
    assert got.dtype == torch.bfloat16
    err = (got.float() - want.float()).norm() / want.float().norm()
    assert err < 1e-2


def test_blelloch_scan_is_the_sequential_recurrence(scan):
    g = torch.Generator().manual_seed(0)
    a = torch.rand(2, 3, 64, 4, generator=g)
    x = torch.randn(2, 3, 64, 4, generator=g, dtype=torch.float64).float()
    got = scan.unfused.blelloch_scan(a.clone(), x.clone())
    want = scan.reference.linear_recurrence_reference(a, x)
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6)


def test_blelloch_scan_refuses_a_length_that_is_no_power_of_two(scan):
    with pytest.raises(ValueError, match="power-of-two"):
        scan.unfused.blelloch_scan(torch.ones(1, 1, 6, 1), torch.ones(1, 1, 6, 1))


def test_cost_is_the_scans_plus_the_materialised_tensors(kernels):
    cost, scan_cost = load_op("scan_baseline", "cost"), load_op("selective_scan", "cost")
    assert cost.flops(1, 1024, 4096, 16) == scan_cost.flops(1, 1024, 4096, 16)
    assert cost.bytes_moved(1, 1024, 4096, 16) == scan_cost.bytes_moved(1, 1024, 4096, 16)
    # L = 600 pads to 1024: two fp32 tensors, each written and read once
    assert cost.materialised_bytes(2, 3, 600, 5) == 2 * 2 * 4 * 2 * 3 * 1024 * 5
