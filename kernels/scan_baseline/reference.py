"""Ground truth for the unfused baseline: the stepped recurrence of `selective_scan/reference.py`
(the baseline computes that function, with the same signature), and the linear recurrence its
Blelloch scan evaluates, stepped."""

from __future__ import annotations

import torch

from ..selective_scan.reference import selective_scan_reference

__all__ = ["linear_recurrence_reference", "selective_scan_reference"]


def linear_recurrence_reference(a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """h_t = a_t h_{t-1} + x_t over dim 2 (h_{-1} = 0), one step at a time, as `unfused.
    blelloch_scan` computes it; a, x [B, D, L, N]. Returns h [B, D, L, N] (a new tensor)."""
    h = torch.zeros_like(x[:, :, 0])
    out = torch.empty_like(x)
    for t in range(x.shape[2]):
        h = a[:, :, t] * h + x[:, :, t]
        out[:, :, t] = h
    return out
