"""Naive PyTorch forms of the linear-attention family, each one token at a time in float32: the
ground truth the equivalence experiments compare other forms of the same recurrence against.

Layout as fla's: q, k [B, T, H, K], v [B, T, H, V]; states S [B, H, K, V]; outputs o [B, T, H, V].
Every function returns (o, final state), so that outputs AND the state a decode would continue
from are compared.
"""

from __future__ import annotations

import torch


def _check(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    if q.dim() != 4 or k.shape != q.shape or v.dim() != 4 or v.shape[:3] != q.shape[:3]:
        raise ValueError(f"expected q, k [B, T, H, K] and v [B, T, H, V], got "
                         f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")


def kda_recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
                  beta: torch.Tensor, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Kimi Delta Attention: S_t = (I - beta_t k_t k_t^T) Diag(exp(g_t)) S_{t-1} + beta_t k_t
    v_t^T, o_t = scale * S_t^T q_t. g [B, T, H, K] (log decay per key channel), beta [B, T, H]."""
    _check(q, k, v)
    b, t, h, dk = q.shape
    qf, kf, vf, gf, bf = (x.float() for x in (q, k, v, g, beta))
    s = torch.zeros(b, h, dk, v.shape[-1], dtype=torch.float32, device=q.device)
    o = torch.empty(b, t, h, v.shape[-1], dtype=torch.float32, device=q.device)
    for i in range(t):
        s = s * gf[:, i].exp()[..., None]
        kt, bt = kf[:, i], bf[:, i][..., None]
        # the delta rule: replace what the state recalls for k_t by v_t, at rate beta_t
        err = vf[:, i] - torch.einsum("bhk,bhkv->bhv", kt, s)
        s = s + torch.einsum("bhk,bhv->bhkv", kt, bt * err)
        o[:, i] = torch.einsum("bhk,bhkv->bhv", qf[:, i] * scale, s)
    return o, s


def dplr_recurrent(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, a: torch.Tensor,
                   b: torch.Tensor, gk: torch.Tensor, scale: float
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """The general diagonal-plus-low-rank transition (fla's DPLR delta rule):
    S_t = (Diag(exp(gk_t)) + b_t a_t^T) S_{t-1} + k_t v_t^T, o_t = scale * S_t^T q_t.
    a, b, gk [B, T, H, K]."""
    _check(q, k, v)
    bsz, t, h, dk = q.shape
    qf, kf, vf, af, bf, gf = (x.float() for x in (q, k, v, a, b, gk))
    s = torch.zeros(bsz, h, dk, v.shape[-1], dtype=torch.float32, device=q.device)
    o = torch.empty(bsz, t, h, v.shape[-1], dtype=torch.float32, device=q.device)
    for i in range(t):
        low_rank = torch.einsum("bhk,bhv->bhkv", bf[:, i],
                                torch.einsum("bhk,bhkv->bhv", af[:, i], s))
        s = s * gf[:, i].exp()[..., None] + low_rank + torch.einsum("bhk,bhv->bhkv", kf[:, i],
                                                                     vf[:, i])
        o[:, i] = torch.einsum("bhk,bhkv->bhv", qf[:, i] * scale, s)
    return o, s


def kda_as_dplr(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
                beta: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """KDA's arguments as DPLR's (q, k, v, a, b, gk): (I - beta k k^T) D = D + b a^T with
    a = D k = exp(g) * k, b = -beta k; the write beta k v^T is DPLR's k v^T with k -> beta k."""
    bt = beta.float()[..., None]
    kf = k.float()
    return (q, (bt * kf).to(k.dtype), v, (g.float().exp() * kf).to(k.dtype),
            (-bt * kf).to(k.dtype), g)


def decayed_linear_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                             log_decay: torch.Tensor, scale: float
                             ) -> tuple[torch.Tensor, torch.Tensor]:
    """Plain causal linear attention with one decay per head (Lightning Attention-2's lambda):
    S_t = exp(log_decay) S_{t-1} + k_t v_t^T, o_t = scale * S_t^T q_t. log_decay [H] (<= 0)."""
    _check(q, k, v)
    b, t, h, dk = q.shape
    decay = log_decay.float().exp()[None, :, None, None]
    qf, kf, vf = q.float(), k.float(), v.float()
    s = torch.zeros(b, h, dk, v.shape[-1], dtype=torch.float32, device=q.device)
    o = torch.empty(b, t, h, v.shape[-1], dtype=torch.float32, device=q.device)
    for i in range(t):
        s = s * decay + torch.einsum("bhk,bhv->bhkv", kf[:, i], vf[:, i])
        o[:, i] = torch.einsum("bhk,bhkv->bhv", qf[:, i] * scale, s)
    return o, s


def hgrn2_scan(q: torch.Tensor, log_forget: torch.Tensor, x: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """HGRN2's recurrence as an elementwise scan: h_t = f_t * h_{t-1} + (1 - f_t) x_t^T per
    state element (the outer-product expansion), o_t = h_t^T q_t. q, log_forget [B, T, H, K],
    x [B, T, H, V]; f_t = exp(log_forget_t). Every step is elementwise work plus a reduction."""
    _check(q, log_forget, x)
    b, t, h, dk = q.shape
    f = log_forget.float().exp()
    qf, xf = q.float(), x.float()
    s = torch.zeros(b, h, dk, x.shape[-1], dtype=torch.float32, device=q.device)
    o = torch.empty(b, t, h, x.shape[-1], dtype=torch.float32, device=q.device)
    for i in range(t):
        fi = f[:, i][..., None]
        s = fi * s + (1 - fi) * xf[:, i][:, :, None, :]
        o[:, i] = (qf[:, i][..., None] * s).sum(-2)
    return o, s
