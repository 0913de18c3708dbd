"""FLOP and byte counts of one MoE layer call (README derives them).

Sizes: T tokens, K experts per token, E routed experts, S shared experts, D = d_model, F =
expert_mlp_size; `elt` bytes per weight and activation element (2 for bf16). An expert's weights
are gate and up [2F, D] and down [D, F]: 3 D F elements.
"""

from __future__ import annotations

import torch

ROUTING_BYTES = 8  # an int32 id and an fp32 weight per (token, choice)


def expected_active(experts: int, tokens: int, top_k: int) -> float:
    """Distinct experts hit by T tokens each choosing K distinct experts uniformly at random:
    an expert is missed by one token with probability 1 - K/E, by all with (1 - K/E)^T."""
    return experts * (1.0 - (1.0 - top_k / experts) ** tokens)


def active_experts(expert_ids: torch.Tensor, experts: int) -> int:
    """Distinct valid ids in `expert_ids` (a host sync: for cost accounting, not the step)."""
    ids = expert_ids.flatten()
    return int(torch.unique(ids[(ids >= 0) & (ids < experts)]).numel())


def expert_bytes(d_model: int, ffn: int, *, elt: int = 2) -> int:
    return 3 * d_model * ffn * elt


def nbytes(tokens: int, top_k: int, d_model: int, ffn: int, active: float, *, shared: int = 0,
           elt: int = 2) -> float:
    """The minimum bytes: the weights of the `active` distinct routed experts and the S shared
    ones read once, x read and y written (T D elt each), the routing read (T K x 8). `active` is
    `active_experts(ids)` for given ids or `expected_active(...)` for random routing."""
    weights = (active + shared) * expert_bytes(d_model, ffn, elt=elt)
    return weights + 2 * tokens * d_model * elt + tokens * top_k * ROUTING_BYTES


def flops(tokens: int, top_k: int, d_model: int, ffn: int, *, shared: int = 0) -> int:
    """2 x multiply-adds: per (token, expert) pair, routed (T K) and shared (T S), gate and up
    (2 D 2F) and down (2 F D), 6 D F in all. SwiGLU and the weighted sum are not counted."""
    return 6 * d_model * ffn * tokens * (top_k + shared)
