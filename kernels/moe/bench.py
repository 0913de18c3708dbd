"""MoE decode as a side of a measurement: input makers, the bundled layer and its torch peers.

Every implementation takes `moe_forward`'s arguments and returns y [T, D]. Peers:

- `hf_loop`: what Hugging Face's Mixtral block does: find the experts hit (a host sync), loop
  over them in Python, gather each one's tokens, index_add the weighted outputs. Not capturable.
- `torch_grouped_mm`: the pairs sorted by expert with torch ops (argsort, scatter_add, cumsum,
  no host sync) and `torch._grouped_mm` for the two grouped GEMMs; only where torch has it
  (`grouped_mm_available`) and the GPU runs it (it raises otherwise).
- `dense_active`: the static bound min(E, T K) of experts, active ones first (a device-side
  argsort of the hit counts), their weights gathered into contiguous stacks and every token run
  through every gathered expert with bmm, the routing weights (0 for a token that did not pick
  it) folding the result. Graph-capturable; it copies the gathered weights each call.

`moe_grouped_fp32` is the reference's math (float32) looped per active expert rather than per
token, for checks at sizes where the per-token loop would re-read an expert per token.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from .forward import moe_forward
from .reference import swiglu_mlp

# Kimi Linear 48B-A3B and Mixtral 8x7B (records/architectures/*.yaml, from their config.json)
KIMI = {"d_model": 2304, "experts": 256, "top_k": 8, "shared": 1, "ffn": 1024}
MIXTRAL = {"d_model": 4096, "experts": 8, "top_k": 2, "shared": 0, "ffn": 14336}


def make_weights(*, d_model: int, experts: int, shared: int, ffn: int, device: torch.device,
                 dtype: torch.dtype = torch.bfloat16, seed: int = 0, **_: int) -> dict:
    """w13 [E, 2F, D], w2 [E, D, F] and the shared experts' (None when S = 0), scaled by
    1/sqrt(fan-in) so activations keep unit scale."""
    gen = torch.Generator(device=device).manual_seed(seed)

    def randn(*shape: int) -> torch.Tensor:
        t = torch.empty(*shape, device=device, dtype=dtype)
        return t.normal_(std=shape[-1] ** -0.5, generator=gen)

    return {
        "w13": randn(experts, 2 * ffn, d_model), "w2": randn(experts, d_model, ffn),
        "shared_w13": randn(shared, 2 * ffn, d_model) if shared else None,
        "shared_w2": randn(shared, d_model, ffn) if shared else None,
    }


def make_routing(tokens: int, *, d_model: int, experts: int, top_k: int, device: torch.device,
                 dtype: torch.dtype = torch.bfloat16, seed: int = 0, **_: int) -> dict:
    """x [T, D]; expert_ids [T, K] int32, K distinct experts per token uniformly at random;
    expert_weights [T, K] fp32, a softmax over the chosen experts (as Mixtral normalises)."""
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(tokens, d_model, generator=gen, device=device).to(dtype)
    ids = torch.rand(tokens, experts, generator=gen, device=device).topk(top_k, dim=1).indices
    logits = torch.randn(tokens, top_k, generator=gen, device=device)
    return {"x": x, "expert_ids": ids.to(torch.int32), "expert_weights": logits.softmax(dim=1)}


def _shared(x, shared_w13, shared_w2) -> torch.Tensor | float:
    if shared_w13 is None:
        return 0.0
    return sum(swiglu_mlp(x, shared_w13[s], shared_w2[s]).float()
               for s in range(shared_w13.shape[0]))


def hf_loop(x, expert_ids, expert_weights, w13, w2, *, shared_w13=None, shared_w2=None):
    experts = w13.shape[0]
    ids = expert_ids.long()
    mask = F.one_hot(ids, experts).permute(2, 1, 0)  # [E, K, T]
    out = torch.zeros(x.shape, device=x.device, dtype=torch.float32)
    for e in torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero().flatten().tolist():
        which, tok = torch.where(mask[e])
        y_e = swiglu_mlp(x[tok], w13[e], w2[e]).float() * expert_weights[tok, which, None]
        out.index_add_(0, tok, y_e)
    return (out + _shared(x, shared_w13, shared_w2)).to(x.dtype)


def grouped_mm_available() -> bool:
    return hasattr(torch, "_grouped_mm")


def torch_grouped_mm(x, expert_ids, expert_weights, w13, w2, *, shared_w13=None,
                     shared_w2=None):
    experts, top_k, ffn = w13.shape[0], expert_ids.shape[1], w2.shape[2]
    flat = expert_ids.flatten().long()
    order = torch.argsort(flat, stable=True)
    tok = order // top_k
    counts = torch.zeros(experts, device=x.device, dtype=torch.int32)
    counts.scatter_add_(0, flat, torch.ones_like(flat, dtype=torch.int32))
    offs = torch.cumsum(counts, 0, dtype=torch.int32)
    # mat_b [E, K, N] as a transposed view of the [E, N, K] weights (column-major per expert)
    gate_up = torch._grouped_mm(x[tok], w13.transpose(1, 2), offs=offs)
    h = F.silu(gate_up[:, :ffn]) * gate_up[:, ffn:]
    down = torch._grouped_mm(h, w2.transpose(1, 2), offs=offs)
    out = torch.zeros(x.shape, device=x.device, dtype=torch.float32)
    out.index_add_(0, tok, down.float() * expert_weights.flatten()[order, None])
    return (out + _shared(x, shared_w13, shared_w2)).to(x.dtype)


def dense_active(x, expert_ids, expert_weights, w13, w2, *, shared_w13=None, shared_w2=None):
    experts, top_k, ffn = w13.shape[0], expert_ids.shape[1], w2.shape[2]
    bound = min(experts, x.shape[0] * top_k)
    flat = expert_ids.flatten().long()
    counts = torch.zeros(experts, device=x.device, dtype=torch.int32)
    counts.scatter_add_(0, flat, torch.ones_like(flat, dtype=torch.int32))
    slots = torch.argsort((counts == 0).to(torch.int32), stable=True)[:bound]
    # [T, A] routing weight of token t for gathered expert a (0 where t did not choose it)
    fold = ((expert_ids.long()[:, :, None] == slots[None, None, :]) *
            expert_weights[:, :, None]).sum(dim=1)
    w13_a, w2_a = w13[slots], w2[slots]
    xs = x[None].expand(bound, -1, -1)
    gate_up = torch.bmm(xs, w13_a.transpose(1, 2))
    h = F.silu(gate_up[..., :ffn]) * gate_up[..., ffn:]
    y_a = torch.bmm(h, w2_a.transpose(1, 2))  # [A, T, D]
    out = torch.einsum("ta,atd->td", fold, y_a.float())
    return (out + _shared(x, shared_w13, shared_w2)).to(x.dtype)


def bundled(x, expert_ids, expert_weights, w13, w2, *, shared_w13=None, shared_w2=None,
            config=None):
    return moe_forward(x, expert_ids, expert_weights, w13, w2, shared_w13=shared_w13,
                       shared_w2=shared_w2, config=config)


# name -> (implementation, graph-capturable)
PEERS: dict[str, tuple[Callable[..., torch.Tensor], bool]] = {
    "hf_loop": (hf_loop, False),
    "torch_grouped_mm": (torch_grouped_mm, True),
    "dense_active": (dense_active, True),
}


def moe_grouped_fp32(x, expert_ids, expert_weights, w13, w2, *, shared_w13=None,
                     shared_w2=None) -> torch.Tensor:
    """y [T, D] float32, the reference's math per active expert (ids outside [0, E) dropped)."""
    experts = w13.shape[0]
    x32 = x.float()
    out = torch.zeros(x.shape, device=x.device, dtype=torch.float32)
    ids = expert_ids.long()
    for e in torch.unique(ids[(ids >= 0) & (ids < experts)]).tolist():
        tok, which = torch.where(ids == e)
        y_e = swiglu_mlp(x32[tok], w13[e].float(), w2[e].float())
        out.index_add_(0, tok, y_e * expert_weights[tok, which, None].float())
    if shared_w13 is not None:
        for s in range(shared_w13.shape[0]):
            out += swiglu_mlp(x32, shared_w13[s].float(), shared_w2[s].float())
    return out
