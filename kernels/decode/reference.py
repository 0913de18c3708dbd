"""Pure-PyTorch ground truth for one decode step: Mamba-1 and Mamba-2 state updates, attention
over a KV cache. Same signatures as the kernels (`mamba1_step.py`, `mamba2_step.py`,
`attention.py`); the state is updated in place, as the kernels do, and y is returned.

Computed in float32; the state must be float32 (the kernels keep it so: a bf16 state loses the
slow decays exp(dt*A) ~ 1 - 1e-3 that long contexts depend on).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _dt(dt: torch.Tensor, dt_bias: torch.Tensor | None, dt_softplus: bool) -> torch.Tensor:
    d = dt.float()
    if dt_bias is not None:
        d = d + dt_bias.float()
    return F.softplus(d) if dt_softplus else d


def _into(y: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    if out is None:
        return y
    out.copy_(y)
    return out


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
    """h = exp(dt A) h + dt B x, y = C . h + D x, one token.

    state: [B, DIM, N] float32 (updated in place); x, dt: [B, DIM]; A: [DIM, N];
    Bm, Cm: [B, N]; D, dt_bias: [DIM]. Returns y [B, DIM] in x's dtype.
    """
    d = _dt(dt, dt_bias, dt_softplus)  # [B, DIM]
    xf = x.float()
    decay = torch.exp(d[:, :, None] * A.float()[None])
    h = decay * state + (d * xf)[:, :, None] * Bm.float()[:, None, :]
    state.copy_(h)
    y = torch.einsum("bdn,bn->bd", h, Cm.float())
    if D is not None:
        y = y + D.float()[None] * xf
    return _into(y.to(x.dtype), out)


def mamba2_step_reference(
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
    """Per head h: H[P, N] = exp(dt_h A_h) H + dt_h x_h B_g^T, y_h = H C_g + D_h x_h, with
    g = h // (heads / groups).

    state: [B, H, P, N] float32 (updated in place); x: [B, H, P]; dt: [B, H]; A, D, dt_bias: [H];
    Bm, Cm: [B, G, N]. Returns y [B, H, P] in x's dtype.
    """
    heads, groups = x.shape[1], Bm.shape[1]
    rep = heads // groups
    d = _dt(dt, dt_bias, dt_softplus)  # [B, H]
    xf = x.float()
    Bh = Bm.float().repeat_interleave(rep, dim=1)  # [B, H, N]
    Ch = Cm.float().repeat_interleave(rep, dim=1)
    decay = torch.exp(d * A.float()[None])[:, :, None, None]
    h = decay * state + (d[:, :, None] * xf)[:, :, :, None] * Bh[:, :, None, :]
    state.copy_(h)
    y = torch.einsum("bhpn,bhn->bhp", h, Ch)
    if D is not None:
        y = y + D.float()[None, :, None] * xf
    return _into(y.to(x.dtype), out)


def decode_attention_reference(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor
) -> torch.Tensor:
    """One query token over a KV cache of L tokens, grouped-query: query head h reads KV head
    h // (Hq / Hkv). q: [B, Hq, E]; k_cache, v_cache: [B, L, Hkv, E]. Returns o [B, Hq, E] in
    q's dtype (softmax scale 1/sqrt(E); no mask: every cached token precedes the query)."""
    rep = q.shape[1] // k_cache.shape[2]
    k = k_cache.float().repeat_interleave(rep, dim=2)  # [B, L, Hq, E]
    v = v_cache.float().repeat_interleave(rep, dim=2)
    s = torch.einsum("bhe,blhe->bhl", q.float(), k) / q.shape[-1] ** 0.5
    o = torch.einsum("bhl,blhe->bhe", torch.softmax(s, dim=-1), v)
    return o.to(q.dtype)
