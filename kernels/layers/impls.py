"""Which implementations each serving layer type has, per phase, and what each one runs.

A serving declaration's sides list implementation names (`experiments/serving-*.yaml`); for
every layer type the serving hook times the names both the side and this table list, checks each
against the layer's "reference" build first, and composes the fastest correct one. The first
name of a row is the layer's default (what `--impl bundled` would have run alone).

Projections: "bundled" runs them on the bundled Triton GEMM, every other implementation through
cuBLAS (`_build.Maker.mm`).
"""

from __future__ import annotations

# what each implementation name runs, for the evidence
WHAT = {
    "bundled": "the KB's kernels (kernels/attention split_kv / window, kernels/mla, kernels/moe, "
               "selective_scan, ssd), projections on the bundled Triton GEMM",
    "sdpa": "torch scaled_dot_product_attention (flash; sliding-window prefill: block-banded "
            "masks on the memory-efficient backend), cuBLAS projections",
    "torch": "plain PyTorch (MLA: the latent expanded to every head into SDPA's efficient "
             "kernel; MoE: a loop over the reached experts; Mamba: the fp32 step references), "
             "cuBLAS projections",
    "cublas": "the bundled layer with every projection through cuBLAS (torch.matmul)",
    "mamba_ssm": "mamba_ssm's Triton selective_state_update, cuBLAS projections",
    "fla": "flash-linear-attention's chunk_kda / fused_recurrent_kda, cuBLAS projections",
    "mamba_cuda": "Mamba's CUDA selective scan (built from the mamba-ssm source), cuBLAS "
                  "projections",
}

DECODE: dict[str, tuple[str, ...]] = {
    "attention": ("bundled", "sdpa"),
    "sliding_attention": ("bundled", "sdpa"),
    "mla": ("bundled", "torch"),
    "moe": ("bundled", "torch"),
    "mamba1": ("bundled", "mamba_ssm", "torch"),
    "mamba2": ("bundled", "mamba_ssm", "torch"),
    "mlp": ("bundled", "cublas"),
    "kda": ("fla",),
}

PREFILL: dict[str, tuple[str, ...]] = {
    "attention": ("bundled", "sdpa"),
    "sliding_attention": ("bundled", "sdpa"),
    "mla": ("torch",),
    "moe": ("torch",),  # kernels/moe is for decode-sized batches (T <= 64)
    "mamba1": ("bundled", "mamba_cuda"),
    "mamba2": ("bundled",),
    "mlp": ("bundled", "cublas"),
    "kda": ("fla",),
}

# Relative L2 error allowed between a layer's output (bf16) and its float32 reference: a sublayer
# chains 3-5 bf16 roundings (projections, activations, the op) where one op's check allows 2e-2;
# a wrong kernel, other weights or a missed mask give errors of order 1.
LAYER_TOLERANCE = 5e-2

# Implementations that synchronise with the host inside a decode step (so no CUDA graph can hold
# them): refused before any capture is tried, a capture that syncs can leave the stream unusable.
HOST_SYNC = {("decode", "moe", "torch"): "the expert loop reads the routing on the host "
                                         "(torch.unique(...).tolist())"}

# layer types whose reference build exists (KDA's would be fla's own naive code: not wired)
HAS_REFERENCE = frozenset(DECODE) - {"kda"}


def for_layer(phase: str, kind: str, declared: tuple[str, ...]) -> tuple[str, ...]:
    """The implementations of layer `kind` in `phase` ('prefill' / 'decode') that the side
    declares, in this table's order (default first)."""
    table = DECODE if phase == "decode" else PREFILL
    if kind not in table:
        raise ValueError(f"expected a layer type among {sorted(table)}, got {kind!r}")
    return tuple(i for i in table[kind] if i in declared)
