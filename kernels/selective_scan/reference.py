"""Pure-PyTorch ground truth for the Mamba-1 selective scan (layout of Mamba's `selective_scan_fn`).

The recurrence is stepped over time without materialising the [B, D, T, N] discretised tensors, so
the reference also runs at benchmark sizes (one small kernel chain per step on the GPU).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def selective_scan_reference(
    u: torch.Tensor,
    delta: torch.Tensor,
    A: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    Dskip: torch.Tensor | None = None,
    delta_bias: torch.Tensor | None = None,
    delta_softplus: bool = False,
) -> torch.Tensor:
    """y[b, d, t] = sum_n C[b, n, t] h[b, d, n, t] + D[d] u[b, d, t], with
    h[., t] = exp(delta[b, d, t] A[d, n]) h[., t-1] + delta[b, d, t] B[b, n, t] u[b, d, t].

    u, delta: [B, D, T]; A: [D, N]; Bm, Cm: [B, N, T]; Dskip, delta_bias: [D].
    Computed in float32 (float64 when u is float64); returns y [B, D, T] in u's dtype.
    """
    acc = torch.float64 if u.dtype == torch.float64 else torch.float32
    uf, dl = u.to(acc), delta.to(acc)
    if delta_bias is not None:
        dl = dl + delta_bias.to(acc)[None, :, None]
    if delta_softplus:
        dl = F.softplus(dl)
    Af, Bf, Cf = A.to(acc), Bm.to(acc), Cm.to(acc)
    batch, dim, steps = u.shape
    h = torch.zeros(batch, dim, A.shape[1], dtype=acc, device=u.device)
    y = torch.empty(batch, dim, steps, dtype=acc, device=u.device)
    for t in range(steps):
        d_t = dl[:, :, t, None]
        h = torch.exp(d_t * Af) * h + (d_t * uf[:, :, t, None]) * Bf[:, None, :, t]
        y[:, :, t] = torch.einsum("bdn,bn->bd", h, Cf[:, :, t])
    if Dskip is not None:
        y = y + uf * Dskip.to(acc)[None, :, None]
    return y.to(u.dtype)
