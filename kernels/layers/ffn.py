"""The feed-forward sublayers, the same in prefill and decode (only the row count differs): a
dense MLP (gated SiLU, or relu^2 / gelu ungated; projections as `Maker.mm` runs them) and a
mixture of experts with torch top-k routing, run by kernels/moe or a torch loop."""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F

from ._build import Built, Maker, cfg


def mlp(m: Maker, arch: Any, rows: int, f: int) -> Built:
    """x [rows, d_model] -> down(act(up(x))) with hidden size f."""
    d = cfg(arch, "d_model")
    act = arch.config.mlp_activation
    gated = act is None or act.value is None or act.value.value not in ("relu2", "gelu")
    x = m.randn(rows, d)
    w_up, w_down = m.weight(d, (2 if gated else 1) * f), m.weight(f, d)

    def run(x: torch.Tensor) -> torch.Tensor:
        u = m.mm(x, w_up)
        hdn = F.silu(u[:, :f]) * u[:, f:] if gated else F.relu(u).square()
        return m.mm(hdn, w_down)

    return run, (x,)


def moe(m: Maker, ctx: Any, arch: Any, rows: int) -> Built:
    """x [rows, d_model] routed to its top-k experts (softmax weights over the chosen logits)
    plus the shared ones, summed. Experts as kernels/moe takes them: w13 [E, 2F, D] (gate rows
    then up rows), w2 [E, D, F]. "bundled": the grouped, sync-free `moe.forward.moe_forward`;
    "torch": a loop over the experts the batch reaches (a host sync per expert); "reference":
    `moe.reference.moe_reference` in float32."""
    d, experts = cfg(arch, "d_model"), cfg(arch, "experts")
    top_k, f = cfg(arch, "experts_per_token"), cfg(arch, "expert_mlp_size")
    shared = cfg(arch, "shared_experts", 0)
    x, router = m.randn(rows, d), m.weight(d, experts)
    w13 = m.randn(experts + shared, 2 * f, d, scale=1.0 / math.sqrt(d))
    w2 = m.randn(experts + shared, d, f, scale=1.0 / math.sqrt(f))
    routed13, routed2 = w13[:experts], w2[:experts]
    shared13 = w13[experts:] if shared else None
    shared2 = w2[experts:] if shared else None
    if m.impl == "bundled":
        core = ctx.load("moe", "forward").moe_forward
    elif m.reference:
        core = ctx.load("moe", "reference").moe_reference
    else:
        core = _moe_loop

    def run(x: torch.Tensor) -> torch.Tensor:
        logits, ids = torch.topk(m.mm(x, router).float(), top_k, dim=-1)
        weights = torch.softmax(logits, dim=-1)
        y = core(x, ids, weights, routed13, routed2, shared_w13=shared13, shared_w2=shared2)
        return y.to(m.dt)

    return run, (x,)


def _moe_loop(x: torch.Tensor, ids: torch.Tensor, weights: torch.Tensor, w13: torch.Tensor,
              w2: torch.Tensor, *, shared_w13: torch.Tensor | None,
              shared_w2: torch.Tensor | None) -> torch.Tensor:
    """The torch peer: one GEMM pair per reached expert (torch.unique syncs with the host)."""
    f = w13.shape[1] // 2

    def expert(a: torch.Tensor, up: torch.Tensor, down: torch.Tensor) -> torch.Tensor:
        u = a @ up.T
        return (F.silu(u[:, :f]) * u[:, f:]) @ down.T

    out = torch.zeros(x.shape, device=x.device, dtype=torch.float32)
    for e in torch.unique(ids).tolist():
        rows_e, choice = (ids == e).nonzero(as_tuple=True)
        out.index_add_(0, rows_e, expert(x[rows_e], w13[e], w2[e]).float()
                       * weights[rows_e, choice, None])
    for s in range(0 if shared_w13 is None or shared_w2 is None else shared_w13.shape[0]):
        out += expert(x, shared_w13[s], shared_w2[s]).float()  # type: ignore[index]
    return out.to(x.dtype)
