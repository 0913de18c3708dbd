"""MLA decode as a side of a measurement: input makers, the bundled step and its torch peers.

Every implementation takes the step's arguments (q_nope, q_rope, cache, lengths, w_uk, w_uv)
and returns o [B, H, V]. Peers, all graph-capturable (no host sync):

- `torch_naive`: what an unabsorbed implementation does: expand every cached latent into
  per-head keys (W_UK) and values (W_UV), then SDPA over [B, H, L, NOPE + ROPE] / [B, H, L, V].
  It writes H x (NOPE + ROPE + V) x elt bytes per cached token (20 KB at Kimi's sizes), so
  `expanded_bytes` lets a caller skip it where that does not fit.
- `torch_absorbed`: the absorbed order in torch ops: one bmm of [q_latent, q_rope] against the
  latent, softmax, one bmm of p against the latent's first R channels (the cache is read twice).
- `sdpa_latent`: the absorbed order through SDPA with the latent as one shared KV head
  (`enable_gqa`), the way flopkb's serving layer ran MLA decode before this kernel.

`full=True` promises every length equals the cache's capacity (what the bench builds): the peers
then need no mask, their fastest form. Otherwise they mask positions >= length.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from .step import mla_decode_step

# Kimi Linear's MLA (records/architectures/kimi-linear-48b-a3b.yaml, from its config.json)
KIMI = {"heads": 32, "rank": 512, "rope": 64, "nope": 128, "v_dim": 128}


def make_inputs(batch: int, context: int, *, heads: int, rank: int, rope: int, nope: int,
                v_dim: int, device: torch.device, dtype: torch.dtype = torch.bfloat16,
                seed: int = 0, cache: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """One step's arguments, every sequence full (lengths = context). Weights are scaled by
    1/sqrt(fan-in) so q_latent has unit variance and the softmax is neither flat nor one-hot.
    `cache` reuses an existing [B, context, R + ROPE] cache (another query set over it)."""
    gen = torch.Generator(device=device).manual_seed(seed)

    def randn(*shape: int, scale: float = 1.0) -> torch.Tensor:
        t = torch.randn(*shape, generator=gen, device=device, dtype=torch.float32)
        return (t * scale).to(dtype)

    if cache is None:
        cache = torch.empty(batch, context, rank + rope, device=device, dtype=dtype)
        cache.normal_(generator=gen)
    return {
        "q_nope": randn(batch, heads, nope),
        "q_rope": randn(batch, heads, rope),
        "cache": cache,
        "lengths": torch.full((batch,), context, device=device, dtype=torch.int32),
        "w_uk": randn(heads, nope, rank, scale=1 / math.sqrt(nope)),
        "w_uv": randn(heads, rank, v_dim, scale=1 / math.sqrt(rank)),
    }


def _mask(lengths: torch.Tensor, capacity: int) -> torch.Tensor:
    """[B, 1, 1, CAP] True where a position is inside its sequence."""
    pos = torch.arange(capacity, device=lengths.device)
    return (pos[None, :] < lengths[:, None].clamp(0, capacity))[:, None, None, :]


def torch_naive(q_nope, q_rope, cache, lengths, w_uk, w_uv, *, full: bool = False):
    """o [B, H, V]: per-head K and V expanded from the latent, then SDPA."""
    batch, heads, nope = q_nope.shape
    rank, rope = w_uk.shape[2], q_rope.shape[2]
    cap = cache.shape[1]
    latent = cache[..., :rank]
    # [B, L, H, NOPE] and [B, L, H, V]: one GEMM each over all heads
    k_nope = (latent @ w_uk.permute(2, 0, 1).reshape(rank, heads * nope)).view(batch, cap, heads,
                                                                              nope)
    v = (latent @ w_uv.permute(1, 0, 2).reshape(rank, -1)).view(batch, cap, heads, -1)
    k_rope = cache[..., None, rank:].expand(batch, cap, heads, rope)
    k = torch.cat([k_nope, k_rope], dim=-1)
    q = torch.cat([q_nope, q_rope], dim=-1)[:, :, None, :]
    mask = None if full else _mask(lengths, cap)
    o = F.scaled_dot_product_attention(q, k.transpose(1, 2), v.transpose(1, 2), attn_mask=mask,
                                       scale=1.0 / math.sqrt(nope + rope))
    return o[:, :, 0, :]


def torch_absorbed(q_nope, q_rope, cache, lengths, w_uk, w_uv, *, full: bool = False):
    """o [B, H, V]: q folded into the latent, scores and output as bmm over the latent."""
    nope, rope, rank = q_nope.shape[2], q_rope.shape[2], w_uk.shape[2]
    q_lat = torch.bmm(q_nope.transpose(0, 1), w_uk).transpose(0, 1)
    q = torch.cat([q_lat, q_rope], dim=-1)
    s = torch.bmm(q, cache.transpose(1, 2)).float() * (1.0 / math.sqrt(nope + rope))
    if not full:
        s = s.masked_fill(~_mask(lengths, cache.shape[1])[:, 0], -math.inf)
    p = torch.softmax(s, dim=-1).to(cache.dtype)
    o_lat = torch.bmm(p, cache[..., :rank])
    return torch.bmm(o_lat.transpose(0, 1), w_uv).transpose(0, 1)


def sdpa_latent(q_nope, q_rope, cache, lengths, w_uk, w_uv, *, full: bool = False):
    """o [B, H, V]: SDPA with one KV head of R + ROPE (keys) and R (values), GQA-broadcast."""
    nope, rope, rank = q_nope.shape[2], q_rope.shape[2], w_uk.shape[2]
    q_lat = torch.bmm(q_nope.transpose(0, 1), w_uk).transpose(0, 1)
    q = torch.cat([q_lat, q_rope], dim=-1)[:, :, None, :]
    kv = cache[:, None]
    mask = None if full else _mask(lengths, cache.shape[1])
    o_lat = F.scaled_dot_product_attention(q, kv, kv[..., :rank], attn_mask=mask,
                                           scale=1.0 / math.sqrt(nope + rope), enable_gqa=True)
    return torch.bmm(o_lat[:, :, 0, :].transpose(0, 1), w_uv).transpose(0, 1)


def bundled(q_nope, q_rope, cache, lengths, w_uk, w_uv, *, full: bool = False, config=None,
            num_splits=None):
    """The bundled step (`full` changes nothing: it reads the lengths on the device)."""
    return mla_decode_step(q_nope, q_rope, cache, lengths, w_uk, w_uv, config=config,
                           num_splits=num_splits)


PEERS: dict[str, Callable[..., torch.Tensor]] = {
    "torch_naive": torch_naive, "torch_absorbed": torch_absorbed, "sdpa_latent": sdpa_latent,
}


def expanded_bytes(batch: int, context: int, *, heads: int, nope: int, rope: int, v_dim: int,
                   elt: int = 2, **_: int) -> int:
    """Bytes `torch_naive` materialises: K_nope, K (with the rope part) and V for every head."""
    return batch * context * heads * (2 * nope + rope + v_dim) * elt
