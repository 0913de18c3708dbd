"""Pure-PyTorch ground truth for the Mamba-1 selective scan (layout of Mamba's `selective_scan_fn`)
and for its one-token decode step (`step.py`).

The recurrence is stepped over time without materialising the [B, D, T, N] discretised tensors, so
the reference also runs at benchmark sizes (one small kernel chain per step on the GPU). The step
reference updates its float32 state in place, as the kernel does (a bf16 state loses the slow
decays exp(dt*A) ~ 1 - 1e-3 that long contexts depend on).
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
    uf, dl = u.to(acc), _delta(delta, delta_bias, delta_softplus, acc)
    Af, Bf, Cf = A.to(acc), Bm.to(acc), Cm.to(acc)
    batch, dim, steps = u.shape
    h = torch.zeros(batch, dim, A.shape[1], dtype=acc, device=u.device)
    y = torch.empty(batch, dim, steps, dtype=acc, device=u.device)
    for t in range(steps):
        h, y[:, :, t] = _update(h, dl[:, :, t], uf[:, :, t], Af, Bf[:, :, t], Cf[:, :, t])
    if Dskip is not None:
        y = y + uf * Dskip.to(acc)[None, :, None]
    return y.to(u.dtype)


def mamba1_step_reference(
    state: torch.Tensor,
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    D: torch.Tensor | None = None,
    dt_bias: torch.Tensor | None = None,
    dt_softplus: bool = True,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """One decode step of the same recurrence, in float32: h = exp(dt A) h + dt B x,
    y = C . h + D x (dt = softplus(dt + dt_bias) as the layer passes it).

    state: [B, DIM, N] float32 (updated in place); x, dt: [B, DIM]; A: [DIM, N];
    Bm, Cm: [B, N]; D, dt_bias: [DIM]. Returns y [B, DIM] in x's dtype (into `out` if given).
    """
    xf = x.float()
    h, y = _update(state, _delta(dt, dt_bias, dt_softplus, torch.float32), xf, A.float(),
                   Bm.float(), Cm.float())
    state.copy_(h)
    if D is not None:
        y = y + D.float()[None] * xf
    y = y.to(x.dtype)
    return y if out is None else out.copy_(y)


def _delta(delta: torch.Tensor, bias: torch.Tensor | None, softplus: bool,
           acc: torch.dtype) -> torch.Tensor:
    """delta' = softplus(delta + bias) (each optional) in `acc`; delta [B, D, ...], bias [D]."""
    dl = delta.to(acc)
    if bias is not None:
        dl = dl + bias.to(acc).view(1, -1, *([1] * (delta.dim() - 2)))
    return F.softplus(dl) if softplus else dl


def _update(h: torch.Tensor, dl: torch.Tensor, u: torch.Tensor, A: torch.Tensor,
            Bm: torch.Tensor, Cm: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One step: h [B, D, N] -> exp(dl A) h + dl u B, and y [B, D] = C . h; dl, u [B, D];
    A [D, N]; Bm, Cm [B, N]."""
    h = torch.exp(dl[:, :, None] * A) * h + (dl * u)[:, :, None] * Bm[:, None, :]
    return h, torch.einsum("bdn,bn->bd", h, Cm)
