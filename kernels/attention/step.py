"""Attention decode: one query token over a KV cache of L tokens, grouped-query, through
PyTorch's `scaled_dot_product_attention` with a forced backend. torch is the implementation here
(no bundled Triton kernel): the serving experiments time SDPA's kernel, and say so.

q: [B, Hq, E]; k_cache, v_cache: [B, L, Hkv, E] (a cache appended token by token, as serving
engines keep it). SDPA wants [B, H, L, E]: transposed views are passed and `enable_gqa=True`
lets Hq be a multiple of Hkv without copying the cache. A sliding window of W is the last W
cached tokens (`window=`): a slice, no mask.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel

from .sdpa import BACKENDS


def decode_attention(
    q: torch.Tensor,
    k_cache: torch.Tensor,
    v_cache: torch.Tensor,
    *,
    window: int | None = None,
    backend: str = "flash",
) -> torch.Tensor:
    """o [B, Hq, E] for one token; `backend` as in attention.sdpa ('math' on the CPU)."""
    if backend not in BACKENDS:
        raise ValueError(f"expected backend in {list(BACKENDS)}, got {backend!r}")
    if not isinstance(q, torch.Tensor) or q.dim() != 3:
        raise ValueError(f"expected q of shape [B, Hq, E], got {getattr(q, 'shape', type(q))}")
    for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise ValueError(f"expected {name} of shape [B, L, Hkv, E], got "
                             f"{getattr(t, 'shape', type(t))}")
    if k_cache.shape != v_cache.shape:
        raise ValueError(f"expected k_cache and v_cache of one shape, got {tuple(k_cache.shape)} "
                         f"and {tuple(v_cache.shape)}")
    b, hq, e = q.shape
    if k_cache.shape[0] != b or k_cache.shape[3] != e or hq % k_cache.shape[2]:
        raise ValueError(f"expected caches [B={b}, L, Hkv dividing {hq}, E={e}], got "
                         f"{tuple(k_cache.shape)}")
    if not (q.dtype == k_cache.dtype == v_cache.dtype):
        raise ValueError(f"expected one dtype, got {q.dtype}/{k_cache.dtype}/{v_cache.dtype}")
    if backend == "flash" and not q.is_cuda:
        raise ValueError("expected CUDA tensors for backend 'flash'; use backend='math' on the CPU")
    if window is not None:
        if window < 1:
            raise ValueError(f"expected window >= 1, got {window}")
        k_cache, v_cache = k_cache[:, -window:], v_cache[:, -window:]
    with sdpa_kernel([BACKENDS[backend]]):
        o = F.scaled_dot_product_attention(
            q[:, :, None, :], k_cache.transpose(1, 2), v_cache.transpose(1, 2), enable_gqa=True
        )
    return o[:, :, 0, :]
