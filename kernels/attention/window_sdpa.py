"""Causal sliding-window attention through PyTorch SDPA: queries in blocks of W = window against
their own block and the previous one, with a band mask (the serving layers' prefill of a
sliding-window attention layer, `kernels/layers/prefill.py`).

q [B, L, H, E]; k, v [B, L, G, E] (G KV heads dividing H, repeated to the query heads); query i
attends to keys i - W + 1 .. i. Blocking keeps the work O(L W) instead of O(L^2): each block of W
queries sees 2W keys. SDPA's memory-efficient backend (flash takes no mask); `backend="math"` is
the CPU path the tests use. Torch is the implementation (no bundled Triton kernel).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

BACKENDS = ("efficient", "math")


def windowed_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int,
                       backend: str = "efficient") -> torch.Tensor:
    """Causal attention of q [B, L, H, E] over the last `window` keys (itself included), k, v
    [B, L, G, E]; returns o [B, L, H, E] in q's dtype."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if backend not in BACKENDS:
        raise ValueError(f"expected backend in {BACKENDS}, got {backend!r}")
    if window < 1:
        raise ValueError(f"expected window >= 1, got {window}")
    b, length, h, e = q.shape
    rep = h // k.shape[2]
    k, v = k.repeat_interleave(rep, dim=2), v.repeat_interleave(rep, dim=2)
    w = window
    n = -(-length // w)
    pad = n * w - length
    if pad:
        q, k, v = (F.pad(t, (0, 0, 0, 0, 0, pad)) for t in (q, k, v))
    qc = q.view(b, n, w, h, e)
    kc, vc = k.view(b, n, w, h, e), v.view(b, n, w, h, e)
    k2 = torch.cat([F.pad(kc, (0, 0, 0, 0, 0, 0, 1, 0))[:, :-1], kc], dim=2)  # [B, n, 2W, H, E]
    v2 = torch.cat([F.pad(vc, (0, 0, 0, 0, 0, 0, 1, 0))[:, :-1], vc], dim=2)
    i = torch.arange(w, device=q.device)[:, None]
    j = torch.arange(2 * w, device=q.device)[None, :]
    band = (j > i) & (j <= i + w)  # key j of the 2W block is w - 1 .. 0 tokens before query i
    mask = band.expand(n, w, 2 * w).clone()
    mask[0, :, :w] = False  # the first block has no previous block
    chosen = {"efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}[backend]
    with sdpa_kernel([chosen]):
        o = F.scaled_dot_product_attention(
            qc.reshape(b * n, w, h, e).transpose(1, 2),
            k2.reshape(b * n, 2 * w, h, e).transpose(1, 2),
            v2.reshape(b * n, 2 * w, h, e).transpose(1, 2),
            attn_mask=mask.repeat(b, 1, 1)[:, None])
    return o.transpose(1, 2).reshape(b, n * w, h, e)[:, :length]
