"""Pure-PyTorch ground truth for Mamba-2 SSD (layout of mamba_ssm's `mamba_chunk_scan_combined`).

Per head h (group g = h // (H // G)):
    state_t = exp(dt_t A_h) state_{t-1} + dt_t x_t B_t^T        state: [P, N]
    y_t     = state_t C_t + D_h x_t
`ssd_reference` steps that recurrence; `ssd_quadratic_reference` evaluates the same map as one
masked [T, T] matrix (the attention-like "dual" form). Both compute in float32 (float64 for float64
x).
"""

from __future__ import annotations

import torch


def _acc_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _heads(t: torch.Tensor, heads: int) -> torch.Tensor:
    """[B, T, G, N] -> [B, T, H, N] by repeating each group over its heads."""
    return t.repeat_interleave(heads // t.shape[2], dim=2)


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
        inp = (dtf[:, t, :, None] * xf[:, t])[:, :, :, None] * Bf[:, t, :, None, :]
        state = decay[:, t] * state + inp
        y[:, t] = torch.einsum("bhpn,bhn->bhp", state, Cf[:, t])
    if Dskip is not None:
        y = y + xf * Dskip.to(acc)[None, None, :, None]
    return y.to(x.dtype)


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
