"""One sublayer of each type, one decode step of `batch` sequences at `context` cached tokens,
for the serving experiments: `decode_layer(ctx, arch, kind, batch, context)` returns (fn, args);
caches and states are filled with random values, never a real prefill. What runs:

- projections: the bundled Triton GEMM;
- attention: `attention.step.decode_attention` (torch SDPA, flash) over a cache of `context`
  tokens, or the last `sliding_window` of them;
- Mamba-1 / Mamba-2: the bundled `selective_scan.step.mamba1_step` / `ssd.step.mamba2_step`,
  their short convolution a state roll plus dot;
- MLA: the absorbed form, one latent "KV head" of r_kv + rope, SDPA's memory-efficient backend;
- MLP, MoE: `ffn.py`; KDA: fla's `fused_recurrent_kda` (`kda.py`).

`decode_floor_bytes` is the least one step moves (the state or KV cache its kernel reads, from
the op's cost.py), the floor `ctx.time` checks a decode timing against.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from . import _build
from ._build import (
    Built,
    Maker,
    attention_sizes,
    cfg,
    conv_step,
    kind_of,
    mamba1_sizes,
    mamba2_sizes,
    mla_sizes,
    sdpa_backend,
)
from .ffn import mlp, moe
from .kda import kda_layer


def _attention(m: Maker, ctx: Any, arch: Any, b: int, context: int, window: int | None) -> Built:
    dec = ctx.load("attention", "step")
    d, h, g, e = attention_sizes(arch)
    cached = min(context, window) if window else context
    x, wqkv, wo = m.randn(b, d), m.weight(d, (h + 2 * g) * e), m.weight(h * e, d)
    kc, vc = m.randn(b, cached, g, e), m.randn(b, cached, g, e)

    def run(x: torch.Tensor) -> torch.Tensor:
        q = m.mm(x, wqkv)[:, : h * e].reshape(b, h, e)
        o = dec.decode_attention(q, kc, vc, backend=_build.BACKEND["flash"])
        return m.mm(o.reshape(b, h * e), wo)

    return run, (x,)


def _mamba1(m: Maker, ctx: Any, arch: Any, b: int) -> Built:
    d, d_in, n, k, r = mamba1_sizes(arch)
    step = ctx.load("selective_scan", "step")
    x = m.randn(b, d)
    w_in, w_x, w_dt, w_out = (m.weight(d, 2 * d_in), m.weight(d_in, r + 2 * n),
                              m.weight(r, d_in), m.weight(d_in, d))
    conv, conv_state = m.randn(d_in, 1, k, scale=0.5), m.randn(b, d_in, k)
    state = m.randn(b, d_in, n, dtype=torch.float32, scale=0.1)
    A = -torch.rand(d_in, n, generator=m.g, device=m.device) - 0.5
    D, bias = m.randn(d_in, dtype=torch.float32), m.randn(d_in, dtype=torch.float32)

    def run(x: torch.Tensor) -> torch.Tensor:
        xz = m.mm(x, w_in).view(b, 2, d_in)
        u = conv_step(conv_state, xz[:, 0], conv)
        dbc = m.mm(u, w_x)
        dt = m.mm(dbc[:, :r], w_dt)
        y = step.mamba1_step(state, u.contiguous(), dt, A, dbc[:, r : r + n].contiguous(),
                             dbc[:, r + n :].contiguous(), D, bias, True)
        return m.mm(y * F.silu(xz[:, 1]), w_out)

    return run, (x,)


def _mamba2(m: Maker, ctx: Any, arch: Any, b: int) -> Built:
    d, h, p, n, g, k = mamba2_sizes(arch)
    d_in, conv_ch = h * p, h * p + 2 * g * n
    step = ctx.load("ssd", "step")
    x = m.randn(b, d)
    w_in, w_out = m.weight(d, d_in + conv_ch + h), m.weight(d_in, d)
    conv, conv_state = m.randn(conv_ch, 1, k, scale=0.5), m.randn(b, conv_ch, k)
    state = m.randn(b, h, p, n, dtype=torch.float32, scale=0.1)
    A = -torch.rand(h, generator=m.g, device=m.device) - 0.5
    D, bias = m.randn(h, dtype=torch.float32), m.randn(h, dtype=torch.float32)

    def run(x: torch.Tensor) -> torch.Tensor:
        z, xbc, dt = m.mm(x, w_in).split([d_in, conv_ch, h], dim=-1)
        xbc = conv_step(conv_state, xbc, conv)
        xs, bm, cm = xbc.split([d_in, g * n, g * n], dim=-1)
        y = step.mamba2_step(state, xs.contiguous().view(b, h, p), dt.contiguous(), A,
                             bm.contiguous().view(b, g, n), cm.contiguous().view(b, g, n),
                             D, bias, True)
        return m.mm(y.view(b, d_in) * F.silu(z), w_out)

    return run, (x,)


def _mla(m: Maker, arch: Any, b: int, context: int) -> Built:
    """Absorbed MLA: queries mapped into the latent (W_uk folded into W_q), one shared latent
    KV head of r_kv + rope read from the cache; values are the latent's first r_kv channels."""
    from torch.nn.attention import sdpa_kernel

    d, h, r_kv, _, rope, vd, r_q = mla_sizes(arch)
    x = m.randn(b, d)
    w_q = [m.weight(d, r_q), m.weight(r_q, h * (r_kv + rope))] if r_q else [
        m.weight(d, h * (r_kv + rope))]
    w_kv, w_uv = m.weight(d, r_kv + rope), m.weight(r_kv, h * vd)
    w_o = m.weight(h * vd, d)
    cache = m.randn(b, 1, context, r_kv + rope)

    def run(x: torch.Tensor) -> torch.Tensor:
        q = x
        for w in w_q:
            q = m.mm(q, w)
        m.mm(x, w_kv)  # the new token's latent (the cache append is not timed)
        kv = cache.expand(b, h, context, r_kv + rope)
        with sdpa_kernel([sdpa_backend("masked")]):
            o = F.scaled_dot_product_attention(q.view(b, h, 1, r_kv + rope), kv,
                                               kv[..., :r_kv])
        o = torch.einsum("bhr,rhv->bhv", o[:, :, 0], w_uv.view(r_kv, h, vd))
        return m.mm(o.reshape(b, h * vd), w_o)

    return run, (x,)


def decode_layer(ctx: Any, arch: Any, kind: Any, batch: int, context: int,
                 seed: int = 0) -> Built:
    """One sublayer of `kind`, one decode step of `batch` sequences at `context` cached
    tokens (caches and states random): (fn, args)."""
    m = Maker(ctx, seed)
    kind = kind_of(kind)
    if kind == "attention":
        return _attention(m, ctx, arch, batch, context, None)
    if kind == "sliding_attention":
        return _attention(m, ctx, arch, batch, context, cfg(arch, "sliding_window"))
    if kind == "mamba1":
        return _mamba1(m, ctx, arch, batch)
    if kind == "mamba2":
        return _mamba2(m, ctx, arch, batch)
    if kind == "mlp":
        return mlp(m, arch, batch, cfg(arch, "mlp_size"))
    if kind == "moe":
        return moe(m, arch, batch)
    if kind == "mla":
        return _mla(m, arch, batch, context)
    if kind == "kda":
        return kda_layer(m, ctx, arch, batch, 1, decode=True)
    raise ValueError(f"expected a layer type, got {kind!r}")


def decode_floor_bytes(ctx: Any, arch: Any, kind: Any, batch: int, context: int) -> int:
    """Bytes one decode step of `kind` moves at the least (0 where not counted): the state or KV
    cache its kernel reads (`step_bytes` / `decode_bytes` of the op's cost.py) and, for an MLP,
    its weights. A lower bound, so the roofline floor `ctx.time` checks the timing against stays
    a floor."""
    kind = kind_of(kind)
    if kind == "mamba1":
        _, d_in, n, _, _ = mamba1_sizes(arch)
        return ctx.load("selective_scan", "cost").step_bytes(batch, d_in, n)
    if kind == "mamba2":
        _, h, p, n, g, _ = mamba2_sizes(arch)
        return ctx.load("ssd", "cost").step_bytes(batch, h, p, n, g)
    if kind in ("attention", "sliding_attention"):
        _, h, g, e = attention_sizes(arch)
        cached = context
        if kind == "sliding_attention":
            cached = min(context, cfg(arch, "sliding_window"))
        return ctx.load("attention", "cost").decode_bytes(batch, h, g, e, cached)
    if kind == "mlp":
        return 3 * cfg(arch, "d_model") * cfg(arch, "mlp_size") * 2
    return 0
