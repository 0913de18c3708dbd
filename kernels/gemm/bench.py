"""The GEMM family as a side of an experiment: bf16 operands from the run's seeds, the check of
a timed product's first rows against the fp32 reference, and a checked, L2-rotated, roofline-
floored timing of one matmul.

`ctx` is the experiment's Context (flopkb.verify.context). Loaded by path like the kernels
(`ctx.load("gemm", "bench")`), so it is hashed with them.
"""

from __future__ import annotations

from typing import Any

import torch

from . import cost, reference

# Rows of a timed product checked against the fp32 reference (the whole product at large sizes
# would cost more than the timing).
CHECK_ROWS = 256


def bf16(ctx: Any, *shape: int, seed: int = 0) -> torch.Tensor:
    """A bf16 tensor of `shape`, normal values, drawn on the run's device from `ctx.seed(seed)`."""
    g = torch.Generator(device=ctx.device).manual_seed(ctx.seed(seed))
    return torch.randn(*shape, device=ctx.device, generator=g, dtype=torch.bfloat16)


def check_rows(ctx: Any, label: str, out: Any, a: Any, b: Any) -> None:
    """out [M, N] vs fp32 a[:rows] @ b: the first rows of the very product that is timed."""
    rows = min(CHECK_ROWS, a.shape[0])
    ctx.check(label, out[:rows], reference.matmul_reference(a[:rows], b))


def operands(ctx: Any, m: int, k: int, n: int) -> list[tuple[Any, Any]]:
    """(a [m, k], b [k, n]) bf16 pairs, rotated until one pair no longer fits in L2."""
    per_set = (m * k + k * n) * 2
    return [(bf16(ctx, m, k, seed=2 * i), bf16(ctx, k, n, seed=2 * i + 1))
            for i in range(ctx.rotations(per_set))]


def timed_matmul(ctx: Any, label: str, fn, m: int, k: int, n: int, **point: Any):
    """Check then time fn(a [m, k], b [k, n]) with bf16 operands rotated past L2."""
    sets = operands(ctx, m, k, n)
    check_rows(ctx, label, fn(*sets[0]), *sets[0])
    return ctx.time(label, fn, sets, flops=cost.flops(m, n, k), nbytes=cost.bytes_moved(m, n, k),
                    m=m, n=n, k=k, **point)
