"""What every serving sublayer builder shares: the architecture's config read, random weights and
inputs from one seeded generator, the projections of each implementation (`Maker.mm`), SDPA
backends, the short causal convolution, and the layer types' size tuples.

Implementations (`impl`, `impls.py` lists which each layer type has): "bundled" runs the KB's
kernels with its projections on the bundled Triton GEMM; every other one ("sdpa", "torch",
"cublas", the peers) runs its projections through cuBLAS (torch.matmul), as a torch model would;
"reference" draws the same values (bf16-rounded) as float32 and computes everything in float32
with the ops' references: the ground truth each implementation is checked against.

`arch` is an architecture record (flopkb.model.ArchitectureRecord: `id`, `config.<key>.value`);
`kind` a layer type (flopkb.model.LayerType, a str enum) or its value. This package imports
neither: it reads the record's attributes and compares the type by value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

Built = tuple[Callable[..., Any], tuple]
DT = torch.bfloat16
# SDPA backends: flash where it takes the shapes, memory-efficient where a mask or a head dim
# over 256 rules flash out. Tests driving these layers on the CPU set both to "math".
BACKEND = {"flash": "flash", "masked": "efficient", "math": "math"}


def kind_of(kind: Any) -> str:
    """A layer type's value: 'attention', 'mamba2', ... (LayerType or its string)."""
    return str(getattr(kind, "value", kind))


def sdpa_backend(role: str) -> Any:
    from torch.nn.attention import SDPBackend

    return {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
            "math": SDPBackend.MATH}[BACKEND[role]]


def cfg(arch: Any, key: str, default: int | None = None) -> int:
    entry = getattr(arch.config, key)
    if entry is None or entry.value is None:
        if default is None:
            raise ValueError(f"{arch.id}: config.{key} is needed and missing")
        return default
    return int(entry.value)


class Maker:
    """Random tensors on the context's device from one seeded generator, and the projections of
    implementation `impl`. Every implementation draws the same values in the same order, so two
    builds of one layer from one seed hold the same weights and inputs."""

    def __init__(self, ctx: Any, seed: int, impl: str = "bundled") -> None:
        self.device = ctx.device
        self.impl = impl
        self.reference = impl == "reference"
        # the dtype activations and weights are held in: float32 for the reference
        self.dt = torch.float32 if self.reference else DT
        self.g = torch.Generator(device=self.device).manual_seed(ctx.seed(seed))
        self.gemm = ctx.load("gemm", "triton_gemm") if impl == "bundled" else None

    def randn(self, *shape: int, dtype: torch.dtype = DT, scale: float = 1.0) -> torch.Tensor:
        t = (torch.randn(*shape, generator=self.g, device=self.device, dtype=torch.float32)
             * scale).to(dtype)
        # the reference keeps bf16 draws' values exactly, in float32
        return t.float() if self.reference and dtype == DT else t

    def weight(self, k: int, n: int) -> torch.Tensor:
        return self.randn(k, n, scale=1.0 / math.sqrt(k))

    def mm(self, a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """a [..., K] @ w [K, N] -> [rows, N]: the bundled Triton GEMM or cuBLAS (which reads
        a transposed view of `a` in place)."""
        a2 = a.reshape(-1, a.shape[-1])
        if self.gemm is None:
            return a2 @ w
        return self.gemm.matmul(a2.contiguous(), w)

    def mm_t(self, a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """(a[i] @ w)^T for each sequence of a [B, L, K] -> [B, N, L], contiguous: a Mamba
        layer's channels-first projection (Mamba's own `W @ x^T`), so the scan's [B, D, L]
        inputs need no transposing copy. cuBLAS takes both operands as transposed views; the
        bundled GEMM gets them copied (its kernels read row-major operands)."""
        if self.gemm is not None:
            wt = w.t().contiguous()
            outs = [self.gemm.matmul(wt, s.t().contiguous()) for s in a]
            return outs[0].unsqueeze(0) if len(outs) == 1 else torch.stack(outs)
        b, length, _ = a.shape
        out = torch.empty(b, w.shape[1], length, device=a.device, dtype=self.dt)
        for i in range(b):
            torch.matmul(w.t(), a[i].t(), out=out[i])
        return out

    def conv(self, x: torch.Tensor, w: torch.Tensor, channels_last: bool = False
             ) -> torch.Tensor:
        """silu(short causal depthwise conv) of x [B, C, L] (any strides): the bundled kernel
        (`conv.causal_conv_silu`) for every implementation, torch's conv1d for the reference.
        `channels_last`: the result's channels are contiguous (a [B, L, C] buffer seen as
        [B, C, L]), as Mamba-2's time-major split wants it."""
        if self.reference:
            return conv_prefill(x, w)
        from .conv import causal_conv_silu

        b, c, length = x.shape
        out = (torch.empty(b, length, c, device=x.device, dtype=x.dtype).transpose(1, 2)
               if channels_last else None)
        return causal_conv_silu(x, w, out)


def conv_prefill(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Depthwise causal conv over time; x [B, C, L], w [C, 1, k]."""
    k = w.shape[-1]
    return F.silu(F.conv1d(x, w, padding=k - 1, groups=x.shape[1])[..., : x.shape[-1]])


def conv_step(state: torch.Tensor, xt: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Roll the conv state [B, C, k] by one token, return silu(conv) [B, C]."""
    state.copy_(torch.roll(state, -1, dims=-1))
    state[:, :, -1] = xt
    return F.silu((state * w[:, 0]).sum(-1))


def mamba1_sizes(arch: Any) -> tuple[int, int, int, int, int]:
    """(d_model, inner channels DIM, state N, conv width, dt rank) of a Mamba-1 layer."""
    d, n = cfg(arch, "d_model"), cfg(arch, "ssm_state_size")
    return (d, cfg(arch, "ssm_expand") * d, n, cfg(arch, "ssm_conv_width", 4),
            cfg(arch, "ssm_dt_rank", -(-d // 16)))


def mamba2_sizes(arch: Any) -> tuple[int, int, int, int, int, int]:
    """(d_model, heads H, head dim P, state N, groups G, conv width) of a Mamba-2 layer."""
    return (cfg(arch, "d_model"), cfg(arch, "ssm_heads"), cfg(arch, "ssm_head_dim"),
            cfg(arch, "ssm_state_size"), cfg(arch, "ssm_groups"), cfg(arch, "ssm_conv_width"))


def attention_sizes(arch: Any) -> tuple[int, int, int, int]:
    """(d_model, query heads, KV heads, head dim) of a softmax attention layer."""
    d, h = cfg(arch, "d_model"), cfg(arch, "attention_heads")
    return d, h, cfg(arch, "kv_heads"), cfg(arch, "head_dim", d // h)


def mla_sizes(arch: Any) -> tuple[int, ...]:
    return (cfg(arch, "d_model"), cfg(arch, "attention_heads"), cfg(arch, "kv_lora_rank"),
            cfg(arch, "qk_nope_head_dim"), cfg(arch, "qk_rope_head_dim"),
            cfg(arch, "v_head_dim"), cfg(arch, "q_lora_rank", 0))
