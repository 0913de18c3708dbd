"""Kimi Delta Attention sublayer through fla's `chunk_kda` (prefill) / `fused_recurrent_kda`
(decode, from a random state), reached as a peer through `ctx.peer("fla")`; without fla the
combination is not run (PeerUnavailable with the reason)."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from ._build import Built, Maker, cfg


def kda_layer(m: Maker, ctx: Any, arch: Any, b: int, length: int, decode: bool) -> Built:
    """x [b, length, d_model] -> o_proj(KDA(q, k, v, g, beta)); `decode` runs one step."""
    kda, _ = ctx.peer("fla").kda()
    d, h, kd = cfg(arch, "d_model"), cfg(arch, "linear_heads"), cfg(arch, "linear_head_dim")
    x = m.randn(b, length, d)
    w_qkvg = m.weight(d, 4 * h * kd)
    w_o = m.weight(h * kd, d)
    state = m.randn(b, h, kd, kd, dtype=torch.float32, scale=0.1) if decode else None

    def run(x: torch.Tensor) -> torch.Tensor:
        q, k, v, gate = m.mm(x, w_qkvg).view(b, length, 4, h, kd).unbind(2)
        g = -F.softplus(gate.float())
        beta = torch.sigmoid(x[..., :h].float())
        fn = kda.fused_recurrent_kda if decode else kda.chunk_kda
        o = fn(q=q, k=F.normalize(k, dim=-1), v=v, g=g, beta=beta, initial_state=state,
               output_final_state=decode)[0]
        return m.mm(o.reshape(b * length, h * kd), w_o)

    return run, (x,)
