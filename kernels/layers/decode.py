"""One sublayer of each type, one decode step of `batch` sequences at `context` cached tokens,
for the serving experiments: `decode_layer(ctx, arch, kind, batch, context, impl=)` returns (fn,
args); caches and states are filled with random values, never a real prefill. What runs, by
implementation (`impls.DECODE` lists each type's):

- attention / sliding window: "bundled" the split-KV decode (`attention.split_kv`), "sdpa"
  `attention.step.decode_attention` (torch SDPA, flash), over a cache of `context` tokens or the
  last `sliding_window` of them;
- Mamba-1 / Mamba-2: "bundled" `selective_scan.step.mamba1_step` / `ssd.step.mamba2_step`,
  "mamba_ssm" its `selective_state_update`, "torch" the fp32 step references; the short
  convolution a state roll plus dot;
- MLA: "bundled" the absorbed step of `kernels/mla` (the 576-element latent read once for all
  heads, split over the context), "torch" the absorbed query against the latent expanded to every
  head (stride 0) in SDPA's memory-efficient kernel;
- MoE: "bundled" the sync-free grouped `kernels/moe`, "torch" the loop over reached experts;
- MLP: `ffn.py`; KDA: fla's `fused_recurrent_kda` (`kda.py`).

"reference" builds the same layer in float32 with the ops' references (`_build.Maker`).
`decode_floor_bytes` is kept for callers of the old floor; the serving hook's floors are
`flopkb.architecture.layer_floor`.
"""

from __future__ import annotations

import math
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
    d, h, g, e = attention_sizes(arch)
    cached = min(context, window) if window else context
    x, wqkv, wo = m.randn(b, d), m.weight(d, (h + 2 * g) * e), m.weight(h * e, d)
    kc, vc = m.randn(b, cached, g, e), m.randn(b, cached, g, e)
    core = _attention_core(m, ctx, kc, vc)

    def run(x: torch.Tensor) -> torch.Tensor:
        q = m.mm(x, wqkv)[:, : h * e].reshape(b, h, e)
        o = core(q).to(m.dt)
        return m.mm(o.reshape(b, h * e), wo)

    return run, (x,)


def _attention_core(m: Maker, ctx: Any, kc: torch.Tensor, vc: torch.Tensor) -> Any:
    """q [B, Hq, E] -> o [B, Hq, E] over the cache, by implementation m.impl."""
    if m.impl == "bundled":
        split_kv = ctx.load("attention", "split_kv").split_kv_decode
        return lambda q: split_kv(q, kc, vc)
    if m.reference:
        ref = ctx.load("attention", "reference").decode_attention_reference
        return lambda q: ref(q, kc, vc)
    dec = ctx.load("attention", "step").decode_attention
    return lambda q: dec(q, kc, vc, backend=_build.BACKEND["flash"])


def _ssm_step(m: Maker, ctx: Any, op: str) -> Any:
    """The state-update step of implementation m.impl: (state, x, dt, A, B, C, D, bias) -> y."""
    if m.impl == "bundled":
        step = ctx.load(op, "step")
        return step.mamba1_step if op == "selective_scan" else step.mamba2_step
    if m.impl == "mamba_ssm":
        update, _ = ctx.peer("mamba_ssm").state_update()
        return _mamba_ssm_step(update, op)
    ref = ctx.load(op, "reference")
    return ref.mamba1_step_reference if op == "selective_scan" else ref.mamba2_step_reference


def _mamba_ssm_step(update: Any, op: str) -> Any:
    """mamba_ssm's selective_state_update in the bundled step's signature. Mamba-2: its A, dt,
    D and dt bias per head broadcast over the head dim (stride 0), B and C per group."""
    def step(state, x, dt, A, Bm, Cm, D, bias, softplus):  # type: ignore[no-untyped-def]
        if op == "selective_scan":
            return update(state, x, dt, A, Bm, Cm, D=D, dt_bias=bias, dt_softplus=softplus)
        p, n = state.shape[2], state.shape[3]
        return update(state, x, dt[..., None].expand(-1, -1, p), A[:, None, None].expand(-1, p, n),
                      Bm, Cm, D=D[:, None].expand(-1, p), dt_bias=bias[:, None].expand(-1, p),
                      dt_softplus=softplus)

    return step


def _mamba1(m: Maker, ctx: Any, arch: Any, b: int) -> Built:
    d, d_in, n, k, r = mamba1_sizes(arch)
    x = m.randn(b, d)
    w_in, w_x, w_dt, w_out = (m.weight(d, 2 * d_in), m.weight(d_in, r + 2 * n),
                              m.weight(r, d_in), m.weight(d_in, d))
    conv, conv_state = m.randn(d_in, 1, k, scale=0.5), m.randn(b, d_in, k)
    state = m.randn(b, d_in, n, dtype=torch.float32, scale=0.1)
    A = -torch.rand(d_in, n, generator=m.g, device=m.device) - 0.5
    D, bias = m.randn(d_in, dtype=torch.float32), m.randn(d_in, dtype=torch.float32)
    step = _ssm_step(m, ctx, "selective_scan")

    def run(x: torch.Tensor) -> torch.Tensor:
        xz = m.mm(x, w_in).view(b, 2, d_in)
        u = conv_step(conv_state, xz[:, 0], conv)
        dbc = m.mm(u, w_x)
        dt = m.mm(dbc[:, :r], w_dt)
        y = step(state, u.contiguous(), dt, A, dbc[:, r : r + n].contiguous(),
                 dbc[:, r + n :].contiguous(), D, bias, True)
        return m.mm(y.to(m.dt) * F.silu(xz[:, 1]), w_out)

    return run, (x,)


def _mamba2(m: Maker, ctx: Any, arch: Any, b: int) -> Built:
    d, h, p, n, g, k = mamba2_sizes(arch)
    d_in, conv_ch = h * p, h * p + 2 * g * n
    x = m.randn(b, d)
    w_in, w_out = m.weight(d, d_in + conv_ch + h), m.weight(d_in, d)
    conv, conv_state = m.randn(conv_ch, 1, k, scale=0.5), m.randn(b, conv_ch, k)
    state = m.randn(b, h, p, n, dtype=torch.float32, scale=0.1)
    A = -torch.rand(h, generator=m.g, device=m.device) - 0.5
    D, bias = m.randn(h, dtype=torch.float32), m.randn(h, dtype=torch.float32)
    step = _ssm_step(m, ctx, "ssd")

    def run(x: torch.Tensor) -> torch.Tensor:
        z, xbc, dt = m.mm(x, w_in).split([d_in, conv_ch, h], dim=-1)
        xbc = conv_step(conv_state, xbc, conv)
        xs, bm, cm = xbc.split([d_in, g * n, g * n], dim=-1)
        y = step(state, xs.contiguous().view(b, h, p), dt.contiguous(), A,
                 bm.contiguous().view(b, g, n), cm.contiguous().view(b, g, n), D, bias, True)
        return m.mm(y.reshape(b, d_in).to(m.dt) * F.silu(z), w_out)

    return run, (x,)


def _mla(m: Maker, ctx: Any, arch: Any, b: int, context: int) -> Built:
    """MLA decode against a latent cache [B, L, R + ROPE] (compressed KV, then the shared rope
    key): queries [B, H, NOPE + ROPE] from x, W_UK [H, NOPE, R], W_UV [H, R, V], output
    projection [H V, d]. The new token's latent projection runs; its cache append does not."""
    d, h, r_kv, nope, rope, vd, r_q = mla_sizes(arch)
    x = m.randn(b, d)
    w_q = [m.weight(d, r_q), m.weight(r_q, h * (nope + rope))] if r_q else [
        m.weight(d, h * (nope + rope))]
    w_kv = m.weight(d, r_kv + rope)
    w_uk = m.randn(h, nope, r_kv, scale=1.0 / math.sqrt(nope))
    w_uv = m.randn(h, r_kv, vd, scale=1.0 / math.sqrt(r_kv))
    w_o = m.weight(h * vd, d)
    cache = m.randn(b, context, r_kv + rope)
    lengths = torch.full((b,), context, device=m.device, dtype=torch.int32)
    scale = 1.0 / math.sqrt(nope + rope)
    if m.impl == "bundled":
        core = ctx.load("mla", "step").mla_decode_step
    elif m.reference:
        core = ctx.load("mla", "reference").mla_decode_reference
    else:
        core = _mla_sdpa

    def run(x: torch.Tensor) -> torch.Tensor:
        q = x
        for w in w_q:
            q = m.mm(q, w)
        m.mm(x, w_kv)  # the new token's latent (the cache append is not timed)
        q = q.view(b, h, nope + rope)
        o = core(q[..., :nope].contiguous(), q[..., nope:].contiguous(), cache, lengths, w_uk,
                 w_uv, sm_scale=scale)
        return m.mm(o.to(m.dt).reshape(b, h * vd), w_o)

    return run, (x,)


def _mla_sdpa(q_nope: torch.Tensor, q_rope: torch.Tensor, cache: torch.Tensor,
              lengths: torch.Tensor, w_uk: torch.Tensor, w_uv: torch.Tensor, *,
              sm_scale: float) -> torch.Tensor:
    """The torch peer: absorbed queries [B, H, 1, R + ROPE] against the one latent expanded to
    H stride-0 heads in SDPA's memory-efficient kernel (every length the cache's capacity)."""
    from torch.nn.attention import sdpa_kernel

    b, h, _ = q_nope.shape
    r_kv = w_uk.shape[2]
    q = torch.cat([torch.einsum("bhn,hnr->bhr", q_nope, w_uk), q_rope], dim=-1)
    kv = cache[:, None].expand(b, h, cache.shape[1], cache.shape[2])
    with sdpa_kernel([sdpa_backend("masked")]):
        o = F.scaled_dot_product_attention(q[:, :, None], kv, kv[..., :r_kv], scale=sm_scale)
    return torch.einsum("bhr,hrv->bhv", o[:, :, 0], w_uv)


def decode_layer(ctx: Any, arch: Any, kind: Any, batch: int, context: int,
                 seed: int = 0, impl: str = "bundled") -> Built:
    """One sublayer of `kind`, one decode step of `batch` sequences at `context` cached
    tokens (caches and states random), run by implementation `impl`: (fn, args)."""
    m = Maker(ctx, seed, impl)
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
        return moe(m, ctx, arch, batch)
    if kind == "mla":
        return _mla(m, ctx, arch, batch, context)
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
        act = arch.config.mlp_activation
        ungated = act is not None and act.value is not None and act.value.value in (
            "relu2", "gelu")
        return (2 if ungated else 3) * cfg(arch, "d_model") * cfg(arch, "mlp_size") * 2
    return 0
