"""MoE layer in plain PyTorch, float32, one token at a time: the ground truth of
`forward.moe_forward` (same signature). Each (token, choice) runs its expert's SwiGLU MLP and
adds it with its routing weight; each shared expert adds its MLP of every token. An id outside
[0, E) adds nothing, as in the kernel.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def swiglu_mlp(x: torch.Tensor, w13: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """[..., D] -> [..., D] through one expert: w13 [2F, D] (gate rows, then up rows), w2 [D, F]."""
    ffn = w13.shape[0] // 2
    gate_up = x @ w13.T
    return (F.silu(gate_up[..., :ffn]) * gate_up[..., ffn:]) @ w2.T


def moe_reference(
    x: torch.Tensor,
    expert_ids: torch.Tensor,
    expert_weights: torch.Tensor,
    w13: torch.Tensor,
    w2: torch.Tensor,
    *,
    shared_w13: torch.Tensor | None = None,
    shared_w2: torch.Tensor | None = None,
) -> torch.Tensor:
    """y [T, D] float32; the arguments as in `moe_forward`."""
    x32, w13_32, w2_32 = x.float(), w13.float(), w2.float()
    experts = w13.shape[0]
    y = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
    for t in range(x.shape[0]):
        for j in range(expert_ids.shape[1]):
            e = int(expert_ids[t, j])
            if 0 <= e < experts:
                y[t] += float(expert_weights[t, j]) * swiglu_mlp(x32[t], w13_32[e], w2_32[e])
        if shared_w13 is not None and shared_w2 is not None:
            for s in range(shared_w13.shape[0]):
                y[t] += swiglu_mlp(x32[t], shared_w13[s].float(), shared_w2[s].float())
    return y
