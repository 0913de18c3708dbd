"""The Mamba layers' short causal convolution (kernels/layers/conv.py) against torch's conv1d.

Runs through TRITON_INTERPRET=1 on the CPU (tests/kernels/conftest.py sets it). Both layouts the
layers hand it (a channels-first slice of a wider projection, a channels-contiguous transposed
view), lengths and channel counts off the tile sizes, widths 2-4, outputs NaN-filled first so an
element the kernel never writes fails.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from accuracy import rel_err

from flopkb.kernelpkg import load_op


@pytest.fixture(scope="module")
def conv(kernels):
    return load_op("layers", "conv")


def _expected(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    k = w.shape[-1]
    y = F.conv1d(x.float(), w.float(), padding=k - 1, groups=x.shape[1])[..., : x.shape[-1]]
    return F.silu(y)


@pytest.mark.parametrize("b, c, length, k", [(1, 70, 131, 4), (2, 33, 64, 3), (1, 5, 3, 4),
                                              (2, 64, 65, 2)])
def test_channels_first_slice(conv, device, b: int, c: int, length: int, k: int) -> None:
    wide = torch.randn(b, 2 * c, length, device=device)
    x = wide[:, :c]  # the x half of Mamba-1's [B, 2 DIM, L] projection: rows of L, a slice
    w = torch.randn(c, 1, k, device=device) * 0.5
    out = torch.full((b, c, length), float("nan"), device=device)
    y = conv.causal_conv_silu(x, w, out)
    assert y is out
    assert rel_err(y, _expected(x, w)) < 1e-5


@pytest.mark.parametrize("b, c, length", [(2, 45, 70), (1, 96, 17)])
def test_channels_contiguous_view_in_bf16(conv, device, b: int, c: int, length: int) -> None:
    x = torch.randn(b, length, c + 7, device=device).to(torch.bfloat16)[..., :c].transpose(1, 2)
    w = torch.randn(c, 1, 4, device=device) * 0.5
    out = torch.full((b, length, c), float("nan"), device=device,
                     dtype=torch.bfloat16).transpose(1, 2)
    y = conv.causal_conv_silu(x, w, out)
    assert y.stride() == out.stride()
    assert rel_err(y.float(), _expected(x, w)) < 2e-2


def test_the_first_steps_see_no_earlier_input(conv, device) -> None:
    x = torch.zeros(1, 3, 8, device=device)
    x[:, :, 0] = 1.0
    w = torch.ones(3, 1, 4, device=device)
    y = conv.causal_conv_silu(x, w)
    expected = F.silu(torch.tensor([1.0, 1, 1, 1, 0, 0, 0, 0], device=device))
    assert torch.allclose(y[0, 0], expected)


def test_shapes_are_checked(conv, device) -> None:
    x = torch.randn(1, 4, 9, device=device)
    with pytest.raises(ValueError, match="expected x"):
        conv.causal_conv_silu(x[0], torch.ones(4, 1, 4, device=device))
    with pytest.raises(ValueError, match="expected out"):
        conv.causal_conv_silu(x, torch.ones(4, 1, 4, device=device),
                              torch.empty(1, 4, 8, device=device))
