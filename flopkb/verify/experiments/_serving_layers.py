"""One sublayer of each type, built at an architecture's sizes, for the serving experiments.

`prefill_layer(ctx, arch, kind, batch, length)` and `decode_layer(ctx, arch, kind, batch,
context)` return (fn, args): `fn(*args)` runs the sublayer once, on random bf16 weights and
inputs (decode: caches and states filled with random values, never a real prefill). What runs:

- projections: the bundled Triton GEMM (`gemm.triton_gemm.matmul`, bf16, fp32 accumulation);
- attention prefill: torch SDPA, flash backend, causal, GQA (`enable_gqa`); sliding window:
  queries in blocks of W against their block and the previous one with a band mask, SDPA's
  memory-efficient backend (flash takes no mask), K and V repeated to the query heads;
- attention decode: `attention.step.decode_attention` (torch SDPA, flash);
- Mamba-1: bundled `selective_scan` (prefill) / `selective_scan.step.mamba1_step`; Mamba-2:
  bundled `ssd_chunked` / `ssd.step.mamba2_step`; their short causal convolution is torch's
  depthwise `conv1d` (prefill) and a state roll plus dot (decode);
- MLA: prefill decompresses K and V (torch SDPA flash, V padded to the QK head dim); decode in
  the absorbed form, one latent "KV head" of r_kv + rope, SDPA memory-efficient backend;
- MoE: torch top-k routing and one GEMM pair per reached expert (a loop: no grouped GEMM here);
- KDA: fla's `chunk_kda` / `fused_recurrent_kda` when fla is installed, else PeerUnavailable.

Norms, residual adds and rotary embeddings are left out (elementwise, small beside the above).
None of this has run on a GPU yet; see docs/verify.md (Models).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from flopkb.model import ArchitectureRecord, LayerType
from flopkb.verify.context import Context, PeerUnavailable

Built = tuple[Callable[..., Any], tuple]
DT = torch.bfloat16
# SDPA backends: flash where it takes the shapes, memory-efficient where a mask or a head dim
# over 256 rules flash out. Tests driving these layers on the CPU set both to "math".
BACKEND = {"flash": "flash", "masked": "efficient"}


def _sdpa_backend(role: str) -> Any:
    from torch.nn.attention import SDPBackend

    return {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "math": SDPBackend.MATH}[BACKEND[role]]


def cfg(arch: ArchitectureRecord, key: str, default: int | None = None) -> int:
    entry = getattr(arch.config, key)
    if entry is None or entry.value is None:
        if default is None:
            raise ValueError(f"{arch.id}: config.{key} is needed and missing")
        return default
    return int(entry.value)


class Maker:
    """Random tensors on the context's device from one seeded generator."""

    def __init__(self, ctx: Context, seed: int) -> None:
        self.device = ctx.device
        self.g = torch.Generator(device=self.device).manual_seed(ctx.seed(seed))
        self.gemm = ctx.load("gemm", "triton_gemm")

    def randn(self, *shape: int, dtype: torch.dtype = DT, scale: float = 1.0) -> torch.Tensor:
        t = torch.randn(*shape, generator=self.g, device=self.device, dtype=torch.float32)
        return (t * scale).to(dtype)

    def weight(self, k: int, n: int) -> torch.Tensor:
        return self.randn(k, n, scale=1.0 / math.sqrt(k))

    def mm(self, a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return self.gemm.matmul(a.reshape(-1, a.shape[-1]).contiguous(), w)


def windowed_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int,
                       backend: str | None = None) -> torch.Tensor:
    """Causal attention of q [B, L, H, E] over the last `window` keys (itself included), k, v
    [B, L, G, E]; queries in blocks of W = window against their block and the previous one."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    b, length, h, e = q.shape
    rep = h // k.shape[2]
    k, v = k.repeat_interleave(rep, dim=2), v.repeat_interleave(rep, dim=2)
    w = window
    n = -(-length // w)
    pad = n * w - length
    if pad:
        q, k, v = (F.pad(t, (0, 0, 0, 0, 0, pad)) for t in (q, k, v))
    qc = q.view(b, n, w, h, e)
    kc, vc = k.view(b, n, w, h, e), v.view(b, n, w, h, e)
    k2 = torch.cat([F.pad(kc, (0, 0, 0, 0, 0, 0, 1, 0))[:, :-1], kc], dim=2)  # [B, n, 2W, H, E]
    v2 = torch.cat([F.pad(vc, (0, 0, 0, 0, 0, 0, 1, 0))[:, :-1], vc], dim=2)
    i = torch.arange(w, device=q.device)[:, None]
    j = torch.arange(2 * w, device=q.device)[None, :]
    band = (j > i) & (j <= i + w)  # key j of the 2W block is w - 1 .. 0 tokens before query i
    mask = band.expand(n, w, 2 * w).clone()
    mask[0, :, :w] = False  # the first block has no previous block
    backends = {"efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}
    with sdpa_kernel([backends[backend or BACKEND["masked"]]]):
        o = F.scaled_dot_product_attention(
            qc.reshape(b * n, w, h, e).transpose(1, 2),
            k2.reshape(b * n, 2 * w, h, e).transpose(1, 2),
            v2.reshape(b * n, 2 * w, h, e).transpose(1, 2),
            attn_mask=mask.repeat(b, 1, 1)[:, None])
    return o.transpose(1, 2).reshape(b, n * w, h, e)[:, :length]


def windowed_attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                                 window: int) -> torch.Tensor:
    """The dense masked form of `windowed_attention` in float32."""
    length, rep = q.shape[1], q.shape[2] // k.shape[2]
    kf = k.float().repeat_interleave(rep, dim=2)
    vf = v.float().repeat_interleave(rep, dim=2)
    s = torch.einsum("blhe,bmhe->bhlm", q.float(), kf) / q.shape[-1] ** 0.5
    t = torch.arange(length, device=q.device)
    keep = (t[None, :] <= t[:, None]) & (t[None, :] > t[:, None] - window)
    s = s.masked_fill(~keep, float("-inf"))
    return torch.einsum("bhlm,bmhe->blhe", torch.softmax(s, dim=-1), vf).to(q.dtype)


def _attention_prefill(m: Maker, arch: ArchitectureRecord, b: int, length: int,
                       window: int | None) -> Built:
    d, h, g = cfg(arch, "d_model"), cfg(arch, "attention_heads"), cfg(arch, "kv_heads")
    e = cfg(arch, "head_dim", d // h)
    x, wqkv, wo = m.randn(b, length, d), m.weight(d, (h + 2 * g) * e), m.weight(h * e, d)

    def run(x: torch.Tensor) -> torch.Tensor:
        qkv = m.mm(x, wqkv).view(b, length, h + 2 * g, e)
        q, k, v = qkv.split([h, g, g], dim=2)
        if window is not None and length > window:
            o = windowed_attention(q, k, v, window)
        else:
            from torch.nn.attention import sdpa_kernel

            with sdpa_kernel([_sdpa_backend("flash")]):
                o = F.scaled_dot_product_attention(
                    q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True,
                    enable_gqa=True).transpose(1, 2)
        return m.mm(o.reshape(b * length, h * e), wo)

    return run, (x,)


def _conv_prefill(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Depthwise causal conv over time; x [B, C, L], w [C, 1, k]."""
    k = w.shape[-1]
    return F.silu(F.conv1d(x, w, padding=k - 1, groups=x.shape[1])[..., : x.shape[-1]])


def _mamba1_prefill(m: Maker, ctx: Context, arch: ArchitectureRecord, b: int,
                    length: int) -> Built:
    d, n = cfg(arch, "d_model"), cfg(arch, "ssm_state_size")
    d_in, k = cfg(arch, "ssm_expand") * d, cfg(arch, "ssm_conv_width", 4)
    r = cfg(arch, "ssm_dt_rank", -(-d // 16))
    scan = ctx.load("selective_scan", "scan")
    x = m.randn(b, length, d)
    w_in, w_x, w_dt, w_out = (m.weight(d, 2 * d_in), m.weight(d_in, r + 2 * n),
                              m.weight(r, d_in), m.weight(d_in, d))
    conv = m.randn(d_in, 1, k, scale=0.5)
    A = -torch.rand(d_in, n, generator=m.g, device=m.device) - 0.5
    D, bias = m.randn(d_in, dtype=torch.float32), m.randn(d_in, dtype=torch.float32)

    def run(x: torch.Tensor) -> torch.Tensor:
        xz = m.mm(x, w_in).view(b, length, 2, d_in)
        u = _conv_prefill(xz[:, :, 0].transpose(1, 2), conv)  # [B, D, L]
        dbc = m.mm(u.transpose(1, 2), w_x).view(b, length, r + 2 * n)
        dt = m.mm(dbc[..., :r], w_dt).view(b, length, d_in).transpose(1, 2).contiguous()
        bm = dbc[..., r : r + n].transpose(1, 2).contiguous()
        cm = dbc[..., r + n :].transpose(1, 2).contiguous()
        y = scan.selective_scan(u.contiguous(), dt, A, bm, cm, D, bias, True)
        y = y.transpose(1, 2) * F.silu(xz[:, :, 1])
        return m.mm(y, w_out)

    return run, (x,)


def _mamba2_sizes(arch: ArchitectureRecord) -> tuple[int, int, int, int, int, int]:
    return (cfg(arch, "d_model"), cfg(arch, "ssm_heads"), cfg(arch, "ssm_head_dim"),
            cfg(arch, "ssm_state_size"), cfg(arch, "ssm_groups"), cfg(arch, "ssm_conv_width"))


def _mamba2_prefill(m: Maker, ctx: Context, arch: ArchitectureRecord, b: int,
                    length: int) -> Built:
    d, h, p, n, g, k = _mamba2_sizes(arch)
    d_in, conv_ch = h * p, h * p + 2 * g * n
    ssd = ctx.load("ssd", "chunked")
    x = m.randn(b, length, d)
    w_in, w_out = m.weight(d, d_in + conv_ch + h), m.weight(d_in, d)
    conv = m.randn(conv_ch, 1, k, scale=0.5)
    A = -torch.rand(h, generator=m.g, device=m.device) - 0.5
    D, bias = m.randn(h, dtype=torch.float32), m.randn(h, dtype=torch.float32)

    def run(x: torch.Tensor) -> torch.Tensor:
        zxbcdt = m.mm(x, w_in).view(b, length, -1)
        z, xbc, dt = zxbcdt.split([d_in, conv_ch, h], dim=-1)
        xbc = _conv_prefill(xbc.transpose(1, 2), conv).transpose(1, 2)
        xs, bm, cm = xbc.split([d_in, g * n, g * n], dim=-1)
        dt = F.softplus(dt.float() + bias)
        y = ssd.ssd_chunked(xs.contiguous().view(b, length, h, p), dt.contiguous(), A,
                            bm.contiguous().view(b, length, g, n),
                            cm.contiguous().view(b, length, g, n), D, 256)
        return m.mm(y.view(b, length, d_in) * F.silu(z), w_out)

    return run, (x,)


def _mlp(m: Maker, arch: ArchitectureRecord, rows: int, f: int) -> Built:
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


def _moe(m: Maker, arch: ArchitectureRecord, rows: int) -> Built:
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


def _mla_sizes(arch: ArchitectureRecord) -> tuple[int, ...]:
    return (cfg(arch, "d_model"), cfg(arch, "attention_heads"), cfg(arch, "kv_lora_rank"),
            cfg(arch, "qk_nope_head_dim"), cfg(arch, "qk_rope_head_dim"),
            cfg(arch, "v_head_dim"), cfg(arch, "q_lora_rank", 0))


def _mla_prefill(m: Maker, arch: ArchitectureRecord, b: int, length: int) -> Built:
    from torch.nn.attention import sdpa_kernel

    d, h, r_kv, nope, rope, vd, r_q = _mla_sizes(arch)
    qd = nope + rope
    x = m.randn(b, length, d)
    w_q = [m.weight(d, r_q), m.weight(r_q, h * qd)] if r_q else [m.weight(d, h * qd)]
    w_kv, w_kvb = m.weight(d, r_kv + rope), m.weight(r_kv, h * (nope + vd))
    w_o = m.weight(h * vd, d)

    def run(x: torch.Tensor) -> torch.Tensor:
        q = x.reshape(b * length, d)
        for w in w_q:
            q = m.mm(q, w)
        lat = m.mm(x, w_kv)
        kv = m.mm(lat[:, :r_kv], w_kvb).view(b, length, h, nope + vd)
        k = torch.cat([kv[..., :nope], lat[:, None, r_kv:].view(b, length, 1, rope)
                       .expand(b, length, h, rope)], dim=-1)
        v = F.pad(kv[..., nope:], (0, qd - vd)) if qd > vd else kv[..., nope:]
        with sdpa_kernel([_sdpa_backend("flash")]):
            o = F.scaled_dot_product_attention(
                q.view(b, length, h, qd).transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                is_causal=True).transpose(1, 2)
        return m.mm(o[..., :vd].reshape(b * length, h * vd), w_o)

    return run, (x,)


def _kda_ops() -> Any:
    try:
        from fla.ops import kda  # type: ignore[import-not-found]
    except ImportError as exc:
        raise PeerUnavailable(f"KDA layers need fla (flash-linear-attention), which is not "
                              f"installed: {exc}") from None
    return kda


def _kda(m: Maker, arch: ArchitectureRecord, b: int, length: int, decode: bool) -> Built:
    kda = _kda_ops()
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


def prefill_layer(ctx: Context, arch: ArchitectureRecord, kind: LayerType, batch: int,
                  length: int, seed: int = 0) -> Built:
    """One sublayer of `kind` over `batch` prompts of `length` tokens."""
    m = Maker(ctx, seed)
    if kind is LayerType.attention:
        return _attention_prefill(m, arch, batch, length, None)
    if kind is LayerType.sliding_attention:
        return _attention_prefill(m, arch, batch, length, cfg(arch, "sliding_window"))
    if kind is LayerType.mamba1:
        return _mamba1_prefill(m, ctx, arch, batch, length)
    if kind is LayerType.mamba2:
        return _mamba2_prefill(m, ctx, arch, batch, length)
    if kind is LayerType.mlp:
        return _mlp(m, arch, batch * length, cfg(arch, "mlp_size"))
    if kind is LayerType.moe:
        return _moe(m, arch, batch * length)
    if kind is LayerType.mla:
        return _mla_prefill(m, arch, batch, length)
    return _kda(m, arch, batch, length, decode=False)


def _attention_decode(m: Maker, ctx: Context, arch: ArchitectureRecord, b: int, context: int,
                      window: int | None) -> Built:
    dec = ctx.load("attention", "step")
    d, h, g = cfg(arch, "d_model"), cfg(arch, "attention_heads"), cfg(arch, "kv_heads")
    e = cfg(arch, "head_dim", d // h)
    cached = min(context, window) if window else context
    x, wqkv, wo = m.randn(b, d), m.weight(d, (h + 2 * g) * e), m.weight(h * e, d)
    kc, vc = m.randn(b, cached, g, e), m.randn(b, cached, g, e)

    def run(x: torch.Tensor) -> torch.Tensor:
        q = m.mm(x, wqkv)[:, : h * e].reshape(b, h, e)
        return m.mm(dec.decode_attention(q, kc, vc, backend=BACKEND["flash"]).reshape(b, h * e), wo)

    return run, (x,)


def _conv_step(state: torch.Tensor, xt: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Roll the conv state [B, C, k] by one token, return silu(conv) [B, C]."""
    state.copy_(torch.roll(state, -1, dims=-1))
    state[:, :, -1] = xt
    return F.silu((state * w[:, 0]).sum(-1))


def _mamba1_decode(m: Maker, ctx: Context, arch: ArchitectureRecord, b: int) -> Built:
    d, n = cfg(arch, "d_model"), cfg(arch, "ssm_state_size")
    d_in, k = cfg(arch, "ssm_expand") * d, cfg(arch, "ssm_conv_width", 4)
    r = cfg(arch, "ssm_dt_rank", -(-d // 16))
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
        u = _conv_step(conv_state, xz[:, 0], conv)
        dbc = m.mm(u, w_x)
        dt = m.mm(dbc[:, :r], w_dt)
        y = step.mamba1_step(state, u.contiguous(), dt, A, dbc[:, r : r + n].contiguous(),
                             dbc[:, r + n :].contiguous(), D, bias, True)
        return m.mm(y * F.silu(xz[:, 1]), w_out)

    return run, (x,)


def _mamba2_decode(m: Maker, ctx: Context, arch: ArchitectureRecord, b: int) -> Built:
    d, h, p, n, g, k = _mamba2_sizes(arch)
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
        xbc = _conv_step(conv_state, xbc, conv)
        xs, bm, cm = xbc.split([d_in, g * n, g * n], dim=-1)
        y = step.mamba2_step(state, xs.contiguous().view(b, h, p), dt.contiguous(), A,
                             bm.contiguous().view(b, g, n), cm.contiguous().view(b, g, n),
                             D, bias, True)
        return m.mm(y.view(b, d_in) * F.silu(z), w_out)

    return run, (x,)


def _mla_decode(m: Maker, arch: ArchitectureRecord, b: int, context: int) -> Built:
    """Absorbed MLA: queries mapped into the latent (W_uk folded into W_q), one shared latent
    KV head of r_kv + rope read from the cache; values are the latent's first r_kv channels."""
    from torch.nn.attention import sdpa_kernel

    d, h, r_kv, _, rope, vd, r_q = _mla_sizes(arch)
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
        with sdpa_kernel([_sdpa_backend("masked")]):
            o = F.scaled_dot_product_attention(q.view(b, h, 1, r_kv + rope), kv,
                                               kv[..., :r_kv])
        o = torch.einsum("bhr,rhv->bhv", o[:, :, 0], w_uv.view(r_kv, h, vd))
        return m.mm(o.reshape(b, h * vd), w_o)

    return run, (x,)


def decode_layer(ctx: Context, arch: ArchitectureRecord, kind: LayerType, batch: int,
                 context: int, seed: int = 0) -> Built:
    """One sublayer of `kind`, one decode step of `batch` sequences at `context` cached
    tokens (caches and states random)."""
    m = Maker(ctx, seed)
    if kind is LayerType.attention:
        return _attention_decode(m, ctx, arch, batch, context, None)
    if kind is LayerType.sliding_attention:
        return _attention_decode(m, ctx, arch, batch, context, cfg(arch, "sliding_window"))
    if kind is LayerType.mamba1:
        return _mamba1_decode(m, ctx, arch, batch)
    if kind is LayerType.mamba2:
        return _mamba2_decode(m, ctx, arch, batch)
    if kind is LayerType.mlp:
        return _mlp(m, arch, batch, cfg(arch, "mlp_size"))
    if kind is LayerType.moe:
        return _moe(m, arch, batch)
    if kind is LayerType.mla:
        return _mla_decode(m, arch, batch, context)
    return _kda(m, arch, batch, 1, decode=True)


def decode_floor_bytes(ctx: Context, arch: ArchitectureRecord, kind: LayerType, batch: int,
                       context: int) -> int:
    """Bytes one decode step of `kind` moves at the least (0 where not counted): the state or KV
    cache its kernel reads (`step_bytes` / `decode_bytes` of the op's cost.py) and, for an MLP,
    its weights. A lower bound, so the roofline floor `ctx.time` checks the timing against stays
    a floor."""
    if kind is LayerType.mamba1:
        d = cfg(arch, "d_model")
        return ctx.load("selective_scan", "cost").step_bytes(
            batch, cfg(arch, "ssm_expand") * d, cfg(arch, "ssm_state_size"))
    if kind is LayerType.mamba2:
        _, h, p, n, g, _ = _mamba2_sizes(arch)
        return ctx.load("ssd", "cost").step_bytes(batch, h, p, n, g)
    if kind in (LayerType.attention, LayerType.sliding_attention):
        d, h, g = cfg(arch, "d_model"), cfg(arch, "attention_heads"), cfg(arch, "kv_heads")
        cached = context
        if kind is LayerType.sliding_attention:
            cached = min(context, cfg(arch, "sliding_window"))
        e = cfg(arch, "head_dim", d // h)
        return ctx.load("attention", "cost").decode_bytes(batch, h, g, e, cached)
    if kind is LayerType.mlp:
        return 3 * cfg(arch, "d_model") * cfg(arch, "mlp_size") * 2
    return 0
