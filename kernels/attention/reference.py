"""fp32 math attention: the ground truth for kernels/attention (prefill in the [B, T, H, D] layout
of `sdpa.py`, and the one-token decode step of `step.py` over a [B, L, Hkv, E] KV cache)."""

from __future__ import annotations

import math

import torch


def causal_attention_reference(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, scale: float | None = None
) -> torch.Tensor:
    """fp32 o [B, T, H, D] = softmax(q k^T * scale, causal) v, written out with einsum.

    q, k, v: [B, T, H, D]; computed in fp32 whatever their dtype; scale defaults to 1 / sqrt(D).
    """
    qf, kf, vf = q.float(), k.float(), v.float()
    T, D = q.shape[1], q.shape[3]
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    scores = torch.einsum("bthd,bshd->bhts", qf, kf) * scale
    future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    return torch.einsum("bhts,bshd->bthd", scores.softmax(dim=-1), vf)


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


def windowed_attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 window: int) -> torch.Tensor:
    """Causal attention over the last `window` keys as one dense masked softmax in float32
    (ground truth of `window_sdpa.windowed_attention`). q [B, L, H, E]; k, v [B, L, G, E], G
    dividing H. Returns o [B, L, H, E] in q's dtype."""
    length, rep = q.shape[1], q.shape[2] // k.shape[2]
    kf = k.float().repeat_interleave(rep, dim=2)
    vf = v.float().repeat_interleave(rep, dim=2)
    s = torch.einsum("blhe,bmhe->bhlm", q.float(), kf) / q.shape[-1] ** 0.5
    t = torch.arange(length, device=q.device)
    keep = (t[None, :] <= t[:, None]) & (t[None, :] > t[:, None] - window)
    s = s.masked_fill(~keep, float("-inf"))
    return torch.einsum("bhlm,bmhe->blhe", torch.softmax(s, dim=-1), vf).to(q.dtype)
