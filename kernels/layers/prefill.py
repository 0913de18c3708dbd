"""One sublayer of each type over `batch` prompts of `length` tokens, for the serving
experiments: `prefill_layer(ctx, arch, kind, batch, length, impl=)` returns (fn, args), and
`fn(*args)` runs the sublayer once on random bf16 weights and inputs. What runs (`impls.PREFILL`
lists each type's implementations; "reference" is the float32 ground truth):

- projections: "bundled" the bundled Triton GEMM (`gemm.triton_gemm.matmul`, bf16, fp32
  accumulation), every other implementation cuBLAS;
- attention / sliding window: "bundled" `attention.window.window_attention` (FlashAttention-2
  schedule skipping the blocks the window masks, GQA read in place); "sdpa" torch SDPA, flash,
  causal, GQA (`enable_gqa`), and for the window queries in blocks of W against their block and
  the previous one with a band mask (`attention.window_sdpa`, SDPA's memory-efficient backend:
  flash takes no mask);
- Mamba-1: the bundled `selective_scan`, or "mamba_cuda" Mamba's own CUDA selective scan (built
  from the mamba-ssm source at run time, `ctx.peer("mamba_cuda")`); Mamba-2: the bundled
  `ssd_chunked` (chunk 256); their short causal convolution is the bundled `conv.py` kernel
  for every implementation (torch's depthwise `conv1d` for the reference); Mamba-1 runs
  channels-first as Mamba's own layer does (projections written as [B, D, L]);
- MLA: K and V decompressed, torch SDPA flash, V padded to the QK head dim;
- MLP, MoE: `ffn.py`; KDA: fla's `chunk_kda` (`kda.py`).

Norms, residual adds and rotary embeddings are left out (elementwise, small beside the above).
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
    kind_of,
    mamba1_sizes,
    mamba2_sizes,
    mla_sizes,
    sdpa_backend,
)
from .ffn import mlp, moe
from .kda import kda_layer


def _attention(m: Maker, ctx: Any, arch: Any, b: int, length: int, window: int | None) -> Built:
    d, h, g, e = attention_sizes(arch)
    win = ctx.load("attention", "window_sdpa")
    x, wqkv, wo = m.randn(b, length, d), m.weight(d, (h + 2 * g) * e), m.weight(h * e, d)
    bundled = ctx.load("attention", "window").window_attention if m.impl == "bundled" else None
    ref = ctx.load("attention", "reference").window_attention_reference if m.reference else None

    def run(x: torch.Tensor) -> torch.Tensor:
        qkv = m.mm(x, wqkv).view(b, length, h + 2 * g, e)
        q, k, v = qkv.split([h, g, g], dim=2)
        if bundled is not None:
            o = bundled(q, k, v, window=window)
        elif ref is not None:
            o = ref(q, k, v, window=window)
        elif window is not None and length > window:
            o = win.windowed_attention(q, k, v, window, backend=_build.BACKEND["masked"])
        else:
            from torch.nn.attention import sdpa_kernel

            with sdpa_kernel([sdpa_backend("flash")]):
                o = F.scaled_dot_product_attention(
                    q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True,
                    enable_gqa=True).transpose(1, 2)
        return m.mm(o.reshape(b * length, h * e), wo)

    return run, (x,)


def _selective_scan(m: Maker, ctx: Any) -> Any:
    """The scan of implementation `m.impl`: scan(u, delta, A, B, C, D, delta_bias, softplus).
    Mamba's CUDA scan raises PeerUnavailable where its source or nvcc is missing."""
    if m.reference:
        return ctx.load("selective_scan", "reference").selective_scan_reference
    if m.impl == "mamba_cuda":
        peer = ctx.peer("mamba_cuda")
        module, _ = peer.build(ctx.load("selective_scan", "bench").search_folders(ctx))
        return peer.scan_fn(module)
    return ctx.load("selective_scan", "forward").selective_scan


def _mamba1(m: Maker, ctx: Any, arch: Any, b: int, length: int) -> Built:
    d, d_in, n, k, r = mamba1_sizes(arch)
    scan = _selective_scan(m, ctx)
    x = m.randn(b, length, d)
    w_in, w_x, w_dt, w_out = (m.weight(d, 2 * d_in), m.weight(d_in, r + 2 * n),
                              m.weight(r, d_in), m.weight(d_in, d))
    conv = m.randn(d_in, 1, k, scale=0.5)
    A = -torch.rand(d_in, n, generator=m.g, device=m.device) - 0.5
    D, bias = m.randn(d_in, dtype=torch.float32), m.randn(d_in, dtype=torch.float32)

    def run(x: torch.Tensor) -> torch.Tensor:
        # channels-first as in Mamba's own layer: the scan reads u, dt, B, C as [B, ., L]
        xz = m.mm_t(x, w_in)  # [B, 2 DIM, L]
        u = m.conv(xz[:, :d_in], conv)  # [B, DIM, L]
        dbc = m.mm(u.transpose(1, 2), w_x).view(b, length, r + 2 * n)
        dt = m.mm_t(dbc[..., :r], w_dt)  # [B, DIM, L]
        bm = dbc[..., r : r + n].transpose(1, 2).contiguous()
        cm = dbc[..., r + n :].transpose(1, 2).contiguous()
        y = scan(u, dt, A, bm, cm, D, bias, True)
        y = y.to(m.dt) * F.silu(xz[:, d_in:])
        return m.mm(y.transpose(1, 2), w_out)

    return run, (x,)


def _mamba2(m: Maker, ctx: Any, arch: Any, b: int, length: int) -> Built:
    d, h, p, n, g, k = mamba2_sizes(arch)
    d_in, conv_ch = h * p, h * p + 2 * g * n
    ssd = ctx.load("ssd", "chunked")
    ref = ctx.load("ssd", "reference").ssd_reference if m.reference else None
    x = m.randn(b, length, d)
    w_in, w_out = m.weight(d, d_in + conv_ch + h), m.weight(d_in, d)
    conv = m.randn(conv_ch, 1, k, scale=0.5)
    A = -torch.rand(h, generator=m.g, device=m.device) - 0.5
    D, bias = m.randn(h, dtype=torch.float32), m.randn(h, dtype=torch.float32)

    def run(x: torch.Tensor) -> torch.Tensor:
        zxbcdt = m.mm(x, w_in).view(b, length, -1)
        z, xbc, dt = zxbcdt.split([d_in, conv_ch, h], dim=-1)
        xbc = m.conv(xbc.transpose(1, 2), conv, channels_last=True).transpose(1, 2)
        xs, bm, cm = xbc.split([d_in, g * n, g * n], dim=-1)
        dt = F.softplus(dt.float() + bias)
        args = (xs.contiguous().view(b, length, h, p), dt.contiguous(), A,
                bm.contiguous().view(b, length, g, n), cm.contiguous().view(b, length, g, n), D)
        y = ref(*args) if ref is not None else ssd.ssd_chunked(*args, 256)
        return m.mm(y.reshape(b, length, d_in).to(m.dt) * F.silu(z), w_out)

    return run, (x,)


def _mla(m: Maker, arch: Any, b: int, length: int) -> Built:
    """K and V decompressed from the latent, SDPA flash (math for the reference)."""
    from torch.nn.attention import sdpa_kernel

    d, h, r_kv, nope, rope, vd, r_q = mla_sizes(arch)
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
        with sdpa_kernel([sdpa_backend("math" if m.reference else "flash")]):
            o = F.scaled_dot_product_attention(
                q.view(b, length, h, qd).transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                is_causal=True).transpose(1, 2)
        return m.mm(o[..., :vd].reshape(b * length, h * vd), w_o)

    return run, (x,)


def prefill_layer(ctx: Any, arch: Any, kind: Any, batch: int, length: int,
                  seed: int = 0, impl: str = "bundled") -> Built:
    """One sublayer of `kind` over `batch` prompts of `length` tokens, run by implementation
    `impl`: (fn, args)."""
    m = Maker(ctx, seed, impl)
    kind = kind_of(kind)
    if kind == "attention":
        return _attention(m, ctx, arch, batch, length, None)
    if kind == "sliding_attention":
        return _attention(m, ctx, arch, batch, length, cfg(arch, "sliding_window"))
    if kind == "mamba1":
        return _mamba1(m, ctx, arch, batch, length)
    if kind == "mamba2":
        return _mamba2(m, ctx, arch, batch, length)
    if kind == "mlp":
        return mlp(m, arch, batch * length, cfg(arch, "mlp_size"))
    if kind == "moe":
        return moe(m, ctx, arch, batch * length)
    if kind == "mla":
        return _mla(m, arch, batch, length)
    if kind == "kda":
        return kda_layer(m, ctx, arch, batch, length, decode=False)
    raise ValueError(f"expected a layer type, got {kind!r}")
