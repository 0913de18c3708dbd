"""The Mamba-1 paper's PyTorch baseline: a standard parallel scan with no kernel fusion.

Gu & Dao (2023), App. E.5: "As a baseline, we implement a standard parallel scan in PyTorch with no
kernel fusion. This requires materializing the parameters A-bar, B-bar, C in HBM." The paper does
not print its code; this is that description taken literally:

1. discretise in separate PyTorch ops, materialising dA = exp(delta A) and dBu = delta B u as
   fp32 [B, D, L, N] tensors in device memory (`materialise`);
2. a work-efficient (Blelloch) parallel scan over L of h_t = dA_t h_{t-1} + dBu_t, in place on
   those tensors: log2 L up-sweep and log2 L - 1 down-sweep levels, each one strided multiply-add
   over every channel and state at once (`blelloch_scan`), L padded to a power of two with
   (a, x) = (1, 0);
3. y = einsum(h, C) + D u.

Blelloch (O(L) work), not Hillis-Steele (O(L log L) work), because a "standard" scan baseline that
did log L times the necessary work would inflate the fused kernel's speedup. Memory: two fp32
[B, D, L, N] tensors plus one half-size temporary per level (about 80 GB at B=1, D=1024, N=16,
L=2^19), so the longest lengths may not fit, as the paper says some baselines did not.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def materialise(u: torch.Tensor, delta: torch.Tensor, A: torch.Tensor, Bm: torch.Tensor,
                delta_bias: torch.Tensor | None, delta_softplus: bool
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(delta fp32 [B, D, L], dA [B, D, L, N], dBu [B, D, L, N]) in fp32, as separate ops."""
    dl = delta.float()
    if delta_bias is not None:
        dl = dl + delta_bias.float()[None, :, None]
    if delta_softplus:
        dl = F.softplus(dl)
    dA = torch.exp(dl[..., None] * A.float()[:, None, :])
    dBu = (dl * u.float())[..., None] * Bm.float().transpose(1, 2)[:, None, :, :]
    return dl, dA, dBu


def blelloch_scan(a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Inclusive scan over dim 2 of h_t = a_t h_{t-1} + x_t (h_{-1} = 0), in place on `a` and `x`
    (both [B, D, L, N], L a power of two); returns `x`, now h."""
    steps = x.shape[2]
    if steps & (steps - 1):
        raise ValueError(f"blelloch_scan: expected a power-of-two length, got {steps}")
    levels = steps.bit_length() - 1
    for k in range(levels):  # up-sweep: position r holds the segment (r - 2d, r]
        d = 1 << k
        right, left = slice(2 * d - 1, steps, 2 * d), slice(d - 1, steps - d, 2 * d)
        x[:, :, right] += a[:, :, right] * x[:, :, left]
        a[:, :, right] *= a[:, :, left]
    for k in range(levels - 2, -1, -1):  # down-sweep: fill the prefixes in between
        d = 1 << k
        right, left = slice(3 * d - 1, steps, 2 * d), slice(2 * d - 1, steps - d, 2 * d)
        x[:, :, right] += a[:, :, right] * x[:, :, left]
        a[:, :, right] *= a[:, :, left]
    return x


def selective_scan_unfused(u: torch.Tensor, delta: torch.Tensor, A: torch.Tensor,
                           Bm: torch.Tensor, Cm: torch.Tensor, Dskip: torch.Tensor | None = None,
                           delta_bias: torch.Tensor | None = None,
                           delta_softplus: bool = False) -> torch.Tensor:
    """y [B, D, L] in u's dtype; arguments and layout as `reference.selective_scan_reference`."""
    steps = u.shape[2]
    _, dA, dBu = materialise(u, delta, A, Bm, delta_bias, delta_softplus)
    padded = 1 << max(0, (steps - 1).bit_length())
    if padded != steps:
        # the identity element of the recurrence: a = 1, x = 0 changes no earlier prefix
        dA = F.pad(dA, (0, 0, 0, padded - steps), value=1.0)
        dBu = F.pad(dBu, (0, 0, 0, padded - steps), value=0.0)
    h = blelloch_scan(dA, dBu)[:, :, :steps]
    y = torch.einsum("bdln,bnl->bdl", h, Cm.float())
    if Dskip is not None:
        y = y + u.float() * Dskip.float()[None, :, None]
    return y.to(u.dtype)
