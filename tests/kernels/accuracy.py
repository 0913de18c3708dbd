"""How the kernel tests compare a kernel with its reference: the error measure, and a decode step
run beside its reference step."""

from __future__ import annotations

from collections.abc import Callable

import torch


def rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    """||out - ref|| / ||ref|| in float64; a NaN or inf in `out` fails here, named, rather than
    as an error figure that compares oddly."""
    assert torch.isfinite(out).all(), "NaN or inf in the output"
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


def run_step(step: Callable[..., torch.Tensor], reference: Callable[..., torch.Tensor],
             args: dict, **kw) -> tuple:
    """A decode step kernel and its reference on copies of one state (both update it in place):
    (y, y_ref, state after the kernel, state after the reference); the kernel's `out` is
    NaN-filled, so an element it never writes shows."""
    k_args = {**args, "state": args["state"].clone()}
    r_args = {**args, "state": args["state"].clone()}
    y = step(**k_args, out=torch.full_like(args["x"], float("nan")), **kw)
    # block sizes are the kernel's own; every other option goes to both
    y_ref = reference(**r_args, **{k: v for k, v in kw.items() if not k.startswith("block_")})
    return y, y_ref, k_args["state"], r_args["state"]
