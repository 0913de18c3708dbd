"""The ground truth: the recurrence h_t = exp(log_a_t) * h_{t-1} + x_t, one step at a time."""

from __future__ import annotations

import torch


def decay_scan_reference(x: torch.Tensor, log_a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x, log_a [B, T, D] -> (y [B, T, D] with y_t = h_t, final state h_T [B, D]), in float64."""
    if x.dim() != 3 or log_a.shape != x.shape:
        raise ValueError(f"expected x, log_a [B, T, D], got {tuple(x.shape)}, {tuple(log_a.shape)}")
    a = log_a.double().exp()
    h = torch.zeros(x.shape[0], x.shape[2], dtype=torch.float64, device=x.device)
    y = torch.empty(x.shape, dtype=torch.float64, device=x.device)
    for t in range(x.shape[1]):
        h = a[:, t] * h + x[:, t].double()
        y[:, t] = h
    return y, h
