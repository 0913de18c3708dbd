"""The feed-forward sublayers, the same in prefill and decode (only the row count differs): a
dense MLP (gated SiLU, or relu^2 / gelu ungated) and a mixture of experts with torch top-k
routing and one GEMM pair per reached expert (a loop: no grouped GEMM here)."""

from __future__ import annotations

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


def moe(m: Maker, arch: Any, rows: int) -> Built:
    """x [rows, d_model] routed to its top-k experts (plus the shared ones), summed."""
    d, experts = cfg(arch, "d_model"), cfg(arch, "experts")
    top_k, f = cfg(arch, "experts_per_token"), cfg(arch, "expert_mlp_size")
    shared = cfg(arch, "shared_experts", 0)
    x, router = m.randn(rows, d), m.weight(d, experts)
    ups = [m.weight(d, 2 * f) for _ in range(experts + shared)]
    downs = [m.weight(f, d) for _ in range(experts + shared)]

    def expert(i: int, xs: torch.Tensor) -> torch.Tensor:
        u = m.mm(xs, ups[i])
        return m.mm(F.silu(u[:, :f]) * u[:, f:], downs[i])

    def run(x: torch.Tensor) -> torch.Tensor:
        top = torch.topk(m.mm(x, router).float(), top_k, dim=-1).indices
        out = torch.zeros_like(x)
        for e in torch.unique(top).tolist():
            rows_e = (top == e).any(dim=-1).nonzero().squeeze(-1)
            out.index_add_(0, rows_e, expert(e, x[rows_e]))
        for s in range(shared):
            out += expert(experts + s, x)
        return out

    return run, (x,)
