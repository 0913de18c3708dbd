"""GEMM helpers shared by the GEMM-based experiments."""

from __future__ import annotations

from typing import Any

from flopkb.verify.context import Context

CHECK_ROWS = 256


def bf16(ctx: Context, *shape: int, seed: int = 0) -> Any:
    import torch

    g = torch.Generator(device=ctx.device).manual_seed(ctx.seed(seed))
    return torch.randn(*shape, device=ctx.device, generator=g, dtype=torch.bfloat16)


def check_rows(ctx: Context, label: str, out: Any, a: Any, b: Any) -> None:
    """out [M, N] vs fp32 a[:rows] @ b: the first rows of the very product that is timed."""
    ref = ctx.load("gemm", "reference")
    rows = min(CHECK_ROWS, a.shape[0])
    ctx.check(label, out[:rows], ref.matmul_reference(a[:rows], b))


def timed_matmul(ctx: Context, label: str, fn, m: int, k: int, n: int, **point: Any):
    """Check then time fn(a [m, k], b [k, n]) with bf16 operands rotated past L2."""
    cost = ctx.load("gemm", "cost")
    a, b = bf16(ctx, m, k), bf16(ctx, k, n, seed=1)
    check_rows(ctx, label, fn(a, b), a, b)
    per_set = (m * k + k * n) * 2
    sets = [(a, b)] + [(bf16(ctx, m, k, seed=2 * i), bf16(ctx, k, n, seed=2 * i + 1))
                       for i in range(1, ctx.rotations(per_set))]
    return ctx.time(label, fn, sets, flops=cost.flops(m, n, k), nbytes=cost.bytes_moved(m, n, k),
                    m=m, n=n, k=k, **point)


def timed_linear(ctx: Context, label: str, fn, m: int, k: int, n: int, pass_: str,
                 **point: Any):
    """A linear layer's GEMM y = x [m, k] @ w [k, n] in the given pass: forward (1 GEMM),
    forward+backward (3: y, dx, dw) or backward (2), by torch autograd over `fn`. The forward
    output is checked; the floor counts the GEMMs the pass runs."""
    from flopkb.verify.experiments import _training

    if pass_ == "forward":
        return timed_matmul(ctx, label, fn, m, k, n, **point)
    cost = ctx.load("gemm", "cost")
    a, b = bf16(ctx, m, k), bf16(ctx, k, n, seed=1)
    check_rows(ctx, label, fn(a, b), a, b)
    gemms = 3 if pass_ == "forward+backward" else 2
    step, args = _training.step(fn, (a, b), (0, 1), pass_)
    return ctx.time(label, step, [args], flops=gemms * cost.flops(m, n, k),
                    nbytes=gemms * cost.bytes_moved(m, n, k), m=m, n=n, k=k, pass_=pass_,
                    **point)
