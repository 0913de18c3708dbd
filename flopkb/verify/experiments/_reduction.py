"""Reduction helpers: inputs and the correctness check against the float64 sum with its bound."""

from __future__ import annotations

from typing import Any

from flopkb.verify.context import Context, ExperimentError


def inputs(ctx: Context, n: int, seed: int = 0) -> Any:
    """Normal values of mixed sign: the order of fp32 adds then changes the rounded sum."""
    import torch

    g = torch.Generator(device=ctx.device).manual_seed(seed)
    return torch.randn(n, generator=g, device=ctx.device)


def check_sum(ctx: Context, label: str, out: Any, x: Any, block: int) -> None:
    ref = ctx.load("reduction", "reference")
    want = float(ref.sum_reference(x).item())
    bound = ref.sum_error_bound(x, block)
    err = abs(float(out.item()) - want)
    ok = err <= bound
    ctx.checks.append({"kernel": label, "shape": [x.numel()], "dtype": "float32", "error": err,
                       "tolerance": bound, "ok": ok})
    if not ok:
        raise ExperimentError(f"{label}: |sum - exact| = {err:.3g} above the bound {bound:.3g}")
