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


# A decode step (step.py) against its reference step: fp32 inputs 1e-5 (the same float32
# arithmetic in another order), bf16 inputs 1e-2 (y rounded once).
STEP_TOL = {torch.float32: 1e-5, torch.bfloat16: 1e-2}


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


def step_inputs(dtype: torch.dtype, *, state: tuple[int, ...], x: tuple[int, ...],
                dt: tuple[int, ...], A: tuple[int, ...], BC: tuple[int, ...], D: int) -> dict:
    """A Mamba decode step's inputs of these shapes: x, dt, B and C in `dtype` (the
    activations), the state, A (negative), D and dt_bias in float32."""
    return {
        "state": torch.randn(*state),
        "x": torch.randn(*x, dtype=dtype),
        "dt": torch.randn(*dt, dtype=dtype) - 1.0,
        "A": -torch.rand(*A) - 0.1,
        "Bm": torch.randn(*BC, dtype=dtype),
        "Cm": torch.randn(*BC, dtype=dtype),
        "D": torch.randn(D),
        "dt_bias": torch.randn(D) * 0.5,
    }


def assert_step_matches(run: tuple, args: dict, dtype: torch.dtype) -> None:
    """`run_step`'s answer on `args`: y in `dtype` within STEP_TOL, the state within 1e-5 of the
    reference's, and changed, so that comparison tests the kernel's write-back."""
    y, y_ref, state, state_ref = run
    assert y.dtype == dtype
    assert rel_err(y, y_ref) < STEP_TOL[dtype]
    assert rel_err(state, state_ref) < 1e-5
    assert rel_err(state, args["state"]) > 1e-3
