"""The CPU check of Mamba-1's fused selective scan called as a Mamba-1 layer calls it (raw dt
projection, delta_bias, delta_softplus): one check for the hooks that time that call (A2's
`ssd_vs_scan`, A6's `prefill_trend`), so both check the call they time the same way."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from flopkb.verify.context import Context


def check_layer_scan(ctx: Context) -> None:
    import torch

    scan_bench = ctx.load("selective_scan", "bench")
    scan = ctx.load("selective_scan", "forward")
    ref = ctx.load("selective_scan", "reference")
    args = scan_bench.layer_inputs(2, 6, 23, 8, dtype=torch.float32)
    ctx.check("selective_scan.forward.selective_scan (softplus, bias)",
              scan.selective_scan(*args, True), ref.selective_scan_reference(*args, True))
