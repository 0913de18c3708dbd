"""CPU checks that more than one hook runs, so that every hook timing a call checks it the same
way: Mamba-1's fused selective scan called as a Mamba-1 layer calls it, and causal attention on
the math backend."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flopkb.verify.context import Context


def check_layer_scan(ctx: Context) -> None:
    """The scan as a Mamba-1 layer calls it (raw dt projection, delta_bias, delta_softplus): A2's
    `ssd_vs_scan` and A6's `prefill_trend` time that call."""
    import torch

    scan_bench = ctx.load("selective_scan", "bench")
    scan = ctx.load("selective_scan", "forward")
    ref = ctx.load("selective_scan", "reference")
    args = scan_bench.layer_inputs(2, 6, 23, 8, dtype=torch.float32)
    ctx.check("selective_scan.forward.selective_scan (softplus, bias)",
              scan.selective_scan(*args, True), ref.selective_scan_reference(*args, True))


def check_causal_attention(ctx: Context, batch: int, heads: int) -> None:
    """Causal attention (the math backend, the one a CPU has) against its reference on random
    [batch, 19, heads, 16] q, k, v: the attention side `scan_benchmark` and `ssd_vs_attention`
    time."""
    import torch

    att = ctx.load("attention", "sdpa")
    ref = ctx.load("attention", "reference")
    q, k, v = (torch.randn(batch, 19, heads, 16) for _ in range(3))
    ctx.check("attention.sdpa.causal_attention[math]",
              att.causal_attention(q, k, v, backend="math"),
              ref.causal_attention_reference(q, k, v))
