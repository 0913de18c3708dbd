"""FLOP and byte counts of one absorbed MLA decode step (README derives them).

Sizes: B sequences holding `tokens` cached tokens in all (the sum of the lengths), H heads,
R = kv_lora_rank, ROPE = qk_rope_head_dim, NOPE = qk_nope_head_dim, V = v_head_dim; `elt` bytes
per element of the cache, the weights and the activations (2 for bf16).
"""

from __future__ import annotations

PARTIAL_BYTES = 4


def nbytes(batch: int, tokens: int, heads: int, *, rank: int = 512, rope: int = 64,
           nope: int = 128, v_dim: int = 128, elt: int = 2) -> int:
    """The minimum bytes: the latent cache read once ((R + ROPE) x elt per token, for all heads
    together), W_UK [H, NOPE, R] and W_UV [H, R, V] read once, q_nope and q_rope read, o [B, H, V]
    written."""
    cache = tokens * (rank + rope) * elt
    weights = heads * rank * (nope + v_dim) * elt
    activations = batch * heads * (nope + rope + v_dim) * elt
    return cache + weights + activations


def flops(batch: int, tokens: int, heads: int, *, rank: int = 512, rope: int = 64,
          nope: int = 128, v_dim: int = 128) -> int:
    """Multiply-adds x 2 in the absorbed order: per cached token and head the score (R + ROPE)
    and the weighted sum (R); per sequence and head the absorption q_nope @ W_UK (NOPE x R) and
    o_latent @ W_UV (R x V). The softmax's exponentials and the split merge are not counted."""
    attention = 2 * tokens * heads * (2 * rank + rope)
    projections = 2 * batch * heads * rank * (nope + v_dim)
    return attention + projections


def flops_unabsorbed(batch: int, tokens: int, heads: int, *, rank: int = 512, rope: int = 64,
                     nope: int = 128, v_dim: int = 128) -> int:
    """The naive order: every cached latent expanded to per-head keys and values
    (2 x R x H x (NOPE + V) per token), then attention with head dims NOPE + ROPE and V."""
    expand = 2 * tokens * rank * heads * (nope + v_dim)
    attention = 2 * tokens * heads * (nope + rope + v_dim)
    return expand + attention


def workspace_bytes(batch: int, heads: int, splits: int, *, rank: int = 512) -> int:
    """What the split kernel adds above the minimum: the fp32 partial outputs [B, H, S, R] and
    their lse [B, H, S], written once and read once by the combine (mostly from L2), plus the
    absorbed query [H, B, R] in fp32-or-less (counted at 4 bytes), written and read."""
    partials = 2 * batch * heads * splits * (rank + 1) * PARTIAL_BYTES
    q_latent = 2 * batch * heads * rank * PARTIAL_BYTES
    return partials + q_latent
