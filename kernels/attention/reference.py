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


def _visible(t: int, s: int, window: int | None, device: torch.device) -> torch.Tensor:
    """[t, s] bool: key j is visible to query i (both counted from the start) iff
    i - window < j <= i; window=None keeps every j <= i."""
    i = torch.arange(t, device=device)[:, None]
    j = torch.arange(s, device=device)[None, :]
    keep = j <= i
    if window is not None:
        keep &= j > i - window
    return keep


def window_attention_reference(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, window: int | None,
    scale: float | None = None,
) -> torch.Tensor:
    """fp32 o [B, T, Hq, D] of causal sliding-window attention, as a dense masked softmax.

    q: [B, T, Hq, D]; k, v: [B, T, Hkv, D], Hkv dividing Hq; query head h reads KV head
    h // (Hq / Hkv) (indexed explicitly, the grouping window.py uses); query t sees keys
    t - window < s <= t (window=None: every s <= t). scale defaults to 1 / sqrt(D).
    """
    T, Hq, D = q.shape[1], q.shape[2], q.shape[3]
    group = torch.arange(Hq, device=q.device) // (Hq // k.shape[2])
    kf, vf = k.float()[:, :, group], v.float()[:, :, group]
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    scores = torch.einsum("bthd,bshd->bhts", q.float(), kf) * scale
    scores = scores.masked_fill(~_visible(T, T, window, q.device), float("-inf"))
    return torch.einsum("bhts,bshd->bthd", scores.softmax(dim=-1), vf)


def split_kv_decode_reference(
    q: torch.Tensor, k_cache: torch.Tensor, v_cache: torch.Tensor,
    lengths: torch.Tensor | None = None, *, window: int | None = None,
    scale: float | None = None,
) -> torch.Tensor:
    """fp32 o [B, Hq, D] of one query per sequence over cached keys [max(0, n - window), n).

    q: [B, Hq, D]; k_cache, v_cache: [B, L, Hkv, D]; lengths: [B] (None: n = L), clamped to
    [0, L] as split_kv.py clamps them; a sequence with n = 0 gets o = 0.
    """
    B, Hq, D = q.shape
    L, Hkv = k_cache.shape[1], k_cache.shape[2]
    group = torch.arange(Hq, device=q.device) // (Hq // Hkv)
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    ns = [L] * B if lengths is None else [min(max(int(n), 0), L) for n in lengths.tolist()]
    out = torch.zeros(B, Hq, D, dtype=torch.float32, device=q.device)
    for b, n in enumerate(ns):
        lo = 0 if window is None else max(0, n - window)
        if n <= lo:
            continue
        kb = k_cache[b, lo:n].float()[:, group]  # [S, Hq, D]
        vb = v_cache[b, lo:n].float()[:, group]
        scores = torch.einsum("hd,shd->hs", q[b].float(), kb) * scale
        out[b] = torch.einsum("hs,shd->hd", scores.softmax(dim=-1), vb)
    return out


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
