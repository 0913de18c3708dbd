"""MLA decode in plain PyTorch, float32: the ground truth of `step.mla_decode_step`.

`mla_decode_reference` is the unabsorbed math: each cached latent is expanded into per-head keys
k[h] = [W_UK[h] @ c[:R], c[R:]] and values v[h] = c[:R] @ W_UV[h], then ordinary softmax attention
of the one query token per head. The kernel computes the same thing in the absorbed order
(q_nope folded into the latent, W_UV applied after the sum); the two agree exactly in real
arithmetic, which is what the tests check.

`mla_decode_absorbed` is that absorbed order in torch ops, float32 (chunked over the context so
a 1M-token cache does not need a 1M x H score matrix at once): the bench's check on inputs too
large for the expanded reference.
"""

from __future__ import annotations

import math

import torch


def mla_decode_reference(
    q_nope: torch.Tensor,
    q_rope: torch.Tensor,
    cache: torch.Tensor,
    lengths: torch.Tensor,
    w_uk: torch.Tensor,
    w_uv: torch.Tensor,
    *,
    sm_scale: float | None = None,
) -> torch.Tensor:
    """o [B, H, V] float32; the arguments as in `mla_decode_step` (any float dtype, any device).

    A length is clamped to [0, CAP] as the kernel does; a sequence of length 0 gives o = 0."""
    batch, heads, nope = q_nope.shape
    rank = w_uk.shape[2]
    scale = sm_scale if sm_scale is not None else 1.0 / math.sqrt(nope + q_rope.shape[2])
    out = torch.zeros(batch, heads, w_uv.shape[2], dtype=torch.float32, device=q_nope.device)
    w_uk32, w_uv32 = w_uk.float(), w_uv.float()
    for b in range(batch):
        n = min(max(int(lengths[b]), 0), cache.shape[1])
        if n == 0:
            continue
        c = cache[b, :n].float()
        # [H, n, NOPE + ROPE] keys and [H, n, V] values of every head
        k_nope = torch.einsum("hdr,nr->hnd", w_uk32, c[:, :rank])
        k = torch.cat([k_nope, c[None, :, rank:].expand(heads, n, -1)], dim=-1)
        v = torch.einsum("nr,hrv->hnv", c[:, :rank], w_uv32)
        q = torch.cat([q_nope[b].float(), q_rope[b].float()], dim=-1)
        p = torch.softmax(torch.einsum("hd,hnd->hn", q, k) * scale, dim=-1)
        out[b] = torch.einsum("hn,hnv->hv", p, v)
    return out


def mla_decode_absorbed(
    q_nope: torch.Tensor,
    q_rope: torch.Tensor,
    cache: torch.Tensor,
    lengths: torch.Tensor,
    w_uk: torch.Tensor,
    w_uv: torch.Tensor,
    *,
    sm_scale: float | None = None,
    chunk: int = 1 << 17,
) -> torch.Tensor:
    """o [B, H, V] float32 in the absorbed order, a two-pass softmax over context chunks of
    `chunk` tokens (memory O(H x chunk)); the arguments as in `mla_decode_reference`."""
    batch, heads, nope = q_nope.shape
    rank = w_uk.shape[2]
    scale = sm_scale if sm_scale is not None else 1.0 / math.sqrt(nope + q_rope.shape[2])
    out = torch.zeros(batch, heads, w_uv.shape[2], dtype=torch.float32, device=q_nope.device)
    for b in range(batch):
        n = min(max(int(lengths[b]), 0), cache.shape[1])
        if n == 0:
            continue
        q_lat = torch.einsum("hd,hdr->hr", q_nope[b].float(), w_uk.float())
        q_rp = q_rope[b].float()
        m = torch.full((heads,), -math.inf, device=q_nope.device)
        total = torch.zeros(heads, device=q_nope.device)
        acc = torch.zeros(heads, rank, device=q_nope.device)
        for start in range(0, n, chunk):
            c = cache[b, start:min(start + chunk, n)].float()
            s = (q_lat @ c[:, :rank].T + q_rp @ c[:, rank:].T) * scale
            m_new = torch.maximum(m, s.max(dim=1).values)
            alpha = torch.exp(m - m_new)
            p = torch.exp(s - m_new[:, None])
            total = total * alpha + p.sum(dim=1)
            acc = acc * alpha[:, None] + p @ c[:, :rank]
            m = m_new
        out[b] = torch.einsum("hr,hrv->hv", acc / total[:, None], w_uv.float())
    return out
