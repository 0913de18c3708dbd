"""The `pass` condition: forward, backward, or forward+backward (a training step).

Claims about training are judged on a forward+backward step, with the forward-only figure kept
beside it. A step differentiates with respect to every floating input an implementation learns or
passes gradients to (`wrt`), against a fixed random upstream gradient `dy`, through
`torch.autograd.grad` (no `.grad` accumulation between repetitions). The backward pass alone is
timed by replaying the backward of one retained forward graph.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from flopkb.evidence.measurement import PASSES
from flopkb.verify.errors import ExperimentError


def step(fn: Callable[..., Any], args: Sequence[Any], wrt: Sequence[int], pass_: str,
         seed: int = 0) -> tuple[Callable[..., Any], tuple]:
    """(callable, its arguments) that runs `fn(*args)` as the pass asks.

    forward: `fn` unchanged. forward+backward: leaf copies of args[i] (i in wrt) that require
    grad, and a call that runs the forward and returns the gradients. backward: one forward is
    run now and kept; the call replays its backward (retain_graph), so only backward kernels are
    timed.
    """
    import torch

    if pass_ == "forward":
        return fn, tuple(args)
    leaves = tuple(a.detach().clone().requires_grad_(True) if i in wrt else a
                   for i, a in enumerate(args))
    wanted = [leaves[i] for i in wrt]
    with torch.no_grad():
        probe = fn(*args)
    g = torch.Generator(device=probe.device).manual_seed(seed)
    dy = torch.randn(probe.shape, generator=g, device=probe.device).to(probe.dtype)
    del probe
    if pass_ == "forward+backward":
        def train(*a: Any) -> Any:
            y = fn(*a)
            return torch.autograd.grad(y, [a[i] for i in wrt], dy)

        return train, leaves
    if pass_ == "backward":
        y = fn(*leaves)

        def backward() -> Any:
            return torch.autograd.grad(y, wanted, dy, retain_graph=True)

        return backward, ()
    raise ValueError(f"expected a pass in {PASSES}, got {pass_!r}")


def grads_of(fn: Callable[..., Any], args: Sequence[Any], wrt: Sequence[int],
             dy: Any) -> tuple:
    """Gradients of <fn(*args), dy> with respect to args[i] for i in wrt (fresh leaves)."""
    import torch

    leaves = [a.detach().clone().requires_grad_(True) if i in wrt else a
              for i, a in enumerate(args)]
    y = fn(*leaves)
    return torch.autograd.grad(y, [leaves[i] for i in wrt], dy)


def check_grads(ctx: Any, label: str, fn: Callable[..., Any], ref: Callable[..., Any],
                args: Sequence[Any], wrt: Sequence[int], names: Sequence[str]) -> None:
    """Every gradient of `fn` against the PyTorch reference's on the same inputs (a wrong
    gradient ends the experiment with `error`, as a wrong output does)."""
    import torch

    probe = fn(*args)
    g = torch.Generator(device=probe.device).manual_seed(7)
    dy = torch.randn(probe.shape, generator=g, device=probe.device).to(probe.dtype)
    got = grads_of(fn, args, wrt, dy)
    want = grads_of(ref, args, wrt, dy)
    for name, a, b in zip(names, got, want, strict=True):
        ctx.check(f"{label} d{name}", a, b)


def all_floats(args: Sequence[Any]) -> tuple[int, ...]:
    """Indices of the floating-point tensors among args: what a training step differentiates."""
    import torch

    return tuple(i for i, a in enumerate(args)
                 if isinstance(a, torch.Tensor) and a.is_floating_point())


def timed_step(ctx: Any, label: str, fn: Callable[..., Any], args: Sequence[Any], pass_: str,
               **point: Any) -> Any:
    """Time `fn(*args)` in `pass_`, differentiating every floating input; the roofline floor is
    left to the forward timings (a step's own cost formulas are the kernels' business)."""
    step_fn, step_args = step(fn, args, all_floats(args), pass_)
    return ctx.time(label, step_fn, [step_args], pass_=pass_, **point)


def optional_step(ctx: Any, label: str, fn: Callable[..., Any], args: Sequence[Any],
                  pass_: str, **point: Any) -> Any:
    """`timed_step`, or None with a note when the implementation has no backward that runs here
    (fla-core 0.6.0 refuses its backward on Hopper under Triton < 3.7.1, for one)."""
    try:
        return timed_step(ctx, label, fn, args, pass_, **point)
    except Exception as exc:
        if isinstance(exc, ExperimentError):
            raise
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        ctx.notes.append(f"{label}: {pass_} not run ({type(exc).__name__}: {first})")
        return None
