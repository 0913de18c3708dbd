"""The error measure the kernel tests compare outputs by."""

from __future__ import annotations

import torch


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in float64; a NaN or inf in `out` fails here, named, rather than
    as an error figure that compares oddly."""
    assert torch.isfinite(out).all(), "NaN or inf in the output"
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()
