"""fp32 math attention: the ground truth for kernels/attention (same [B, T, H, D] layout)."""

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
