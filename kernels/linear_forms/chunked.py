"""Chunked (block) forms of the same recurrences as `reference.py`, in PyTorch: inside a block the
work is masked matrix products (tensor cores), across blocks a carried state S [B, H, K, V].
Same layout and (o, final state) returns as reference.py."""

from __future__ import annotations

import torch

from .reference import _check


def _blocks(t: int, block: int) -> range:
    if block < 1:
        raise ValueError(f"expected a positive block size, got {block}")
    return range(0, t, block)


def lightning_blocked(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                      log_decay: torch.Tensor, scale: float, block: int = 64
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """Lightning Attention-2's split: intra-block exact masked attention (Q K^T * M) V with
    M_ij = lambda^(i-j) for j <= i, inter-block lambda^(i+1) Q S_prev, then
    S = lambda^len S_prev + sum_j lambda^(len-1-j) k_j v_j^T. log_decay [H] (<= 0)."""
    _check(q, k, v)
    b, t, h, dk = q.shape
    lam = log_decay.float()[None, :, None]
    qf, kf, vf = (x.float().transpose(1, 2) for x in (q, k, v))
    s = torch.zeros(b, h, dk, v.shape[-1], dtype=torch.float32, device=q.device)
    o = torch.empty(b, h, t, v.shape[-1], dtype=torch.float32, device=q.device)
    for start in _blocks(t, block):
        qb, kb, vb = (x[:, :, start:start + block] for x in (qf, kf, vf))
        n = qb.shape[2]
        pos = torch.arange(n, device=q.device, dtype=torch.float32)
        diff = pos[:, None] - pos[None, :]
        mask = torch.where(diff >= 0, (lam[..., None] * diff).exp(), torch.zeros(()).to(q.device))
        intra = ((qb @ kb.transpose(-1, -2)) * mask) @ vb
        inter = ((lam * (pos + 1)).exp()[..., None] * qb) @ s
        o[:, :, start:start + n] = scale * (intra + inter)
        tail = (lam * (n - 1 - pos)).exp()[..., None]
        s = (lam * n).exp()[..., None] * s + (tail * kb).transpose(-1, -2) @ vb
    return o.transpose(1, 2), s


def gla_chunked(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor,
                scale: float, chunk: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """Gated linear attention with per-key-channel decay in chunked form:
    S_t = Diag(exp(g_t)) S_{t-1} + k_t v_t^T, o_t = scale * S_t^T q_t, g [B, T, H, K] (<= 0).
    The decay is folded into the queries and keys relative to the chunk start (G = cumsum g),
    so the intra-chunk part is a masked matmul; that needs |G| bounded over one chunk (the
    decays' range: HGRN2 lower-bounds its forget gates)."""
    _check(q, k, v)
    b, t, h, dk = q.shape
    qf, kf, vf, gf = (x.float().transpose(1, 2) for x in (q, k, v, g))
    s = torch.zeros(b, h, dk, v.shape[-1], dtype=torch.float32, device=q.device)
    o = torch.empty(b, h, t, v.shape[-1], dtype=torch.float32, device=q.device)
    for start in _blocks(t, chunk):
        qb, kb, vb, gb = (x[:, :, start:start + chunk] for x in (qf, kf, vf, gf))
        n = qb.shape[2]
        cum = gb.cumsum(2)
        q_in, k_in = qb * cum.exp(), kb * (-cum).exp()
        causal = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
        att = (q_in @ k_in.transpose(-1, -2)).masked_fill(~causal, 0.0)
        o[:, :, start:start + n] = scale * (att @ vb + q_in @ s)
        last = cum[:, :, -1:]
        s = last.transpose(-1, -2).exp() * s + (kb * (last - cum).exp()).transpose(-1, -2) @ vb
    return o.transpose(1, 2), s


def hgrn2_chunked(q: torch.Tensor, log_forget: torch.Tensor, x: torch.Tensor,
                  chunk: int = 64) -> tuple[torch.Tensor, torch.Tensor]:
    """HGRN2 in its linear-attention form: keys 1 - f, decays log f, values x, scale 1."""
    k = (1 - log_forget.float().exp()).to(q.dtype)
    return gla_chunked(q, k, x, log_forget, 1.0, chunk)
