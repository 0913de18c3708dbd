"""Pure-PyTorch ground truth for Mamba-2 SSD (layout of mamba_ssm's `mamba_chunk_scan_combined`).

Per head h (group g = h // (H // G)):
    state_t = exp(dt_t A_h) state_{t-1} + dt_t x_t B_t^T        state: [P, N]
    y_t     = state_t C_t + D_h x_t
`ssd_reference` steps that recurrence; `ssd_quadratic_reference` evaluates the same map as one
masked [T, T] matrix (the attention-like "dual" form). Both compute in float32 (float64 for float64
x). `mamba2_step_reference` is one decode step of it (`step.py`), its float32 state updated in
place as the kernel does.
"""

from __future__ import annotations

import torch


def _acc_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _heads(t: torch.Tensor, heads: int, dim: int = 2) -> torch.Tensor:
    """[B, T, G, N] -> [B, T, H, N] (groups on axis `dim`) by repeating each group over its
    heads."""
    return t.repeat_interleave(heads // t.shape[dim], dim=dim)


def _recurrence(
    x: torch.Tensor,
    dt: torch.Tensor,
    decay: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    Dskip: torch.Tensor | None,
) -> torch.Tensor:
    """state_t = decay_t * state_{t-1} + dt_t x_t B_t^T, y_t = state_t C_t + D x_t, stepped in
    the accumulation dtype. decay [B, T, H, 1, 1] (one per head) or [B, T, H, 1, N] (one per
    state channel), already exponentiated and in that dtype; other shapes as `ssd_reference`."""
    acc = _acc_dtype(x)
    batch, steps, heads, p = x.shape
    xf, dtf = x.to(acc), dt.to(acc)
    Bf, Cf = _heads(Bm.to(acc), heads), _heads(Cm.to(acc), heads)
    state = torch.zeros(batch, heads, p, Bm.shape[-1], dtype=acc, device=x.device)
    y = torch.empty(batch, steps, heads, p, dtype=acc, device=x.device)
    for t in range(steps):
        state, y[:, t] = _update(state, decay[:, t], dtf[:, t, :, None] * xf[:, t], Bf[:, t],
                                 Cf[:, t])
    if Dskip is not None:
        y = y + xf * Dskip.to(acc)[None, None, :, None]
    return y.to(x.dtype)


def _update(state: torch.Tensor, decay: torch.Tensor, dtx: torch.Tensor, Bh: torch.Tensor,
            Ch: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One step: state [B, H, P, N] -> decay * state + dtx Bh^T, and y [B, H, P] = state Ch;
    decay broadcasts against the state, dtx [B, H, P], Bh, Ch [B, H, N]."""
    state = decay * state + dtx[:, :, :, None] * Bh[:, :, None, :]
    return state, torch.einsum("bhpn,bhn->bhp", state, Ch)


def ssd_reference(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    Dskip: torch.Tensor | None = None,
) -> torch.Tensor:
    """Sequential recurrence. x [B, T, H, P]; dt [B, T, H] (>0); A [H] (<0); Bm, Cm [B, T, G, N];
    Dskip [H]. Returns y [B, T, H, P] in x's dtype."""
    acc = _acc_dtype(x)
    decay = torch.exp(dt.to(acc) * A.to(acc))[:, :, :, None, None]
    return _recurrence(x, dt, decay, Bm, Cm, Dskip)


def ssd_quadratic_reference(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    Dskip: torch.Tensor | None = None,
) -> torch.Tensor:
    """Masked quadratic form: y_i = sum_{j<=i} (C_i . B_j) exp(cs_i - cs_j) dt_j x_j + D x_i,
    cs = cumsum(dt A) over time. Materialises [B, H, T, T]: small T only."""
    acc = _acc_dtype(x)
    heads = x.shape[2]
    xf, dtf = x.to(acc), dt.to(acc)
    Bf, Cf = _heads(Bm.to(acc), heads), _heads(Cm.to(acc), heads)
    cs = torch.cumsum(dtf * A.to(acc)[None, None, :], dim=1).transpose(1, 2)  # [B, H, T]
    steps = x.shape[1]
    causal = torch.ones(steps, steps, dtype=torch.bool, device=x.device).tril()
    seg = (cs[:, :, :, None] - cs[:, :, None, :]).masked_fill(~causal, float("-inf"))
    scores = torch.einsum("bihn,bjhn->bhij", Cf, Bf) * torch.exp(seg)
    y = torch.einsum("bhij,bjh,bjhp->bihp", scores, dtf, xf)
    if Dskip is not None:
        y = y + xf * Dskip.to(acc)[None, None, :, None]
    return y.to(x.dtype)


def ssd_per_channel_reference(
    x: torch.Tensor,
    dt: torch.Tensor,
    log_decay: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    Dskip: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-channel (GLA / HGRN2-style) decay: one log-decay per (head, state dim) and step.

    state_t[p, n] = exp(log_decay[b, t, h, n]) state_{t-1}[p, n] + dt_t x_t[p] B_t[n];
    y_t = state_t C_t + D x_t. log_decay [B, T, H, N] (<= 0); other shapes as `ssd_reference`.
    """
    decay = torch.exp(log_decay.to(_acc_dtype(x)))[:, :, :, None, :]
    return _recurrence(x, dt, decay, Bm, Cm, Dskip)


def ssd_chunked_reference(
    x: torch.Tensor,
    dt: torch.Tensor,
    A: torch.Tensor,
    Bm: torch.Tensor,
    Cm: torch.Tensor,
    Dskip: torch.Tensor | None = None,
    chunk_size: int = 64,
) -> torch.Tensor:
    """The chunked form in plain PyTorch ops (differentiable by torch.autograd), for gradient
    checks at sizes where autograd through the step-by-step `ssd_reference` would keep one state
    per step ([B, H, P, N] each). Same inputs and result as `ssd_reference`; the tests tie the two
    together. Memory O(B T H (Q + P + N)) plus the start states."""
    acc = _acc_dtype(x)
    batch, steps, heads, p = x.shape
    n = Bm.shape[-1]
    q = chunk_size
    nc = -(-steps // q)
    pad = nc * q - steps
    xf, dtf = x.to(acc), dt.to(acc)
    Bf, Cf = _heads(Bm.to(acc), heads), _heads(Cm.to(acc), heads)
    if pad:
        # dt = 0 past the end: decay 1 and no input, so padded steps change nothing before them.
        xf = torch.nn.functional.pad(xf, (0, 0, 0, 0, 0, pad))
        dtf = torch.nn.functional.pad(dtf, (0, 0, 0, pad))
        Bf = torch.nn.functional.pad(Bf, (0, 0, 0, 0, 0, pad))
        Cf = torch.nn.functional.pad(Cf, (0, 0, 0, 0, 0, pad))
    xc = xf.view(batch, nc, q, heads, p)
    dtc = dtf.view(batch, nc, q, heads)
    Bc, Cc = Bf.view(batch, nc, q, heads, n), Cf.view(batch, nc, q, heads, n)
    cs = torch.cumsum(dtc * A.to(acc), dim=2)  # [B, nc, Q, H], restarts every chunk
    causal = torch.ones(q, q, dtype=torch.bool, device=x.device).tril()
    seg = (cs[:, :, :, None, :] - cs[:, :, None, :, :]).permute(0, 1, 4, 2, 3)  # [B,nc,H,i,j]
    decay = torch.exp(seg.masked_fill(~causal, float("-inf")))
    scores = torch.einsum("bcihn,bcjhn->bchij", Cc, Bc) * decay
    y = torch.einsum("bchij,bcjh,bcjhp->bcihp", scores, dtc, xc)
    to_end = torch.exp(cs[:, :, -1:, :] - cs)
    local = torch.einsum("bcjh,bcjhp,bcjhn->bchpn", to_end * dtc, xc, Bc)
    state = torch.zeros(batch, heads, p, n, dtype=acc, device=x.device)
    starts = []
    for c in range(nc):
        starts.append(state)
        state = torch.exp(cs[:, c, -1])[:, :, None, None] * state + local[:, c]
    h0 = torch.stack(starts, dim=1)  # [B, nc, H, P, N]
    y = y + torch.einsum("bcihn,bchpn->bcihp", Cc * torch.exp(cs)[..., None], h0)
    y = y.reshape(batch, nc * q, heads, p)[:, :steps]
    if Dskip is not None:
        y = y + x.to(acc) * Dskip.to(acc)[None, None, :, None]
    return y.to(x.dtype)


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
    """One decode step in float32, per head h: H[P, N] = exp(dt_h A_h) H + dt_h x_h B_g^T,
    y_h = H C_g + D_h x_h, with g = h // (heads / groups) and dt = softplus(dt + dt_bias).

    state: [B, H, P, N] float32 (updated in place); x: [B, H, P]; dt: [B, H]; A, D, dt_bias: [H];
    Bm, Cm: [B, G, N]. Returns y [B, H, P] in x's dtype (into `out` if given).
    """
    d = dt.float() if dt_bias is None else dt.float() + dt_bias.float()
    if dt_softplus:
        d = torch.nn.functional.softplus(d)
    xf = x.float()
    decay = torch.exp(d * A.float()[None])[:, :, None, None]
    h, y = _update(state, decay, d[:, :, None] * xf, _heads(Bm.float(), x.shape[1], 1),
                   _heads(Cm.float(), x.shape[1], 1))
    state.copy_(h)
    if D is not None:
        y = y + D.float()[None, :, None] * xf
    y = y.to(x.dtype)
    if out is not None:
        out.copy_(y)
        return out
    return y
