"""Pieces shared by the state-space-model kernels (selective scan and SSD, chunked and step).

Argument checks: wrappers call these before launching so that a wrong shape, dtype, device or
layout fails with a `ValueError("expected ..., got ...")` instead of a silent out-of-bounds read in
a kernel. `_softplus`: the `@triton.jit` dt' = softplus(dt) both families' kernels apply.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch
import triton
import triton.language as tl

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def interpreting() -> bool:
    """True when Triton runs kernels through its CPU interpreter (tensors then live on the CPU)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def check_tensor(
    name: str,
    t: object,
    shape: Sequence[int | None],
    dtypes: Sequence[torch.dtype],
    device: torch.device | None = None,
) -> torch.Tensor:
    """Validate one kernel argument; `None` in `shape` accepts any size on that axis."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"expected {name} to be a torch.Tensor, got {type(t).__name__}")
    want = tuple("*" if s is None else s for s in shape)
    sizes_ok = all(s is None or s == n for s, n in zip(shape, t.shape, strict=False))
    if t.dim() != len(shape) or not sizes_ok:
        raise ValueError(f"expected {name} of shape {want}, got {tuple(t.shape)}")
    if t.dtype not in dtypes:
        names = ", ".join(str(d).removeprefix("torch.") for d in dtypes)
        got = str(t.dtype).removeprefix("torch.")
        raise ValueError(f"expected {name} of dtype {names}, got {got}")
    if device is not None and t.device != device:
        raise ValueError(f"expected {name} on {device}, got {t.device}")
    if not t.is_contiguous():
        raise ValueError(f"expected {name} to be contiguous, got strides {t.stride()}")
    return t


def check_device(t: torch.Tensor) -> torch.device:
    """The device kernels run on: CUDA, or the CPU only under TRITON_INTERPRET=1."""
    if t.device.type != "cuda" and not interpreting():
        raise ValueError(
            f"expected CUDA tensors (or TRITON_INTERPRET=1 for CPU tensors), got {t.device}"
        )
    return t.device


def check_optional(name: str, t: torch.Tensor | None, shape: Sequence[int | None],
                   device: torch.device) -> None:
    """`check_tensor` for an optional float argument (D, dt_bias): None passes."""
    if t is not None:
        check_tensor(name, t, shape, FLOAT_DTYPES, device)


def check_state(state: object, shape: Sequence[int | None], device: torch.device) -> torch.Tensor:
    # fp32 only: the step kernels update it in place and a bf16 state loses slow decays
    return check_tensor("state", state, shape, (torch.float32,), device)


@triton.jit
def _softplus(x):
    # Same threshold as torch.nn.functional.softplus: linear above 20.
    return tl.where(x <= 20.0, tl.log(1.0 + tl.exp(tl.minimum(x, 20.0))), x)
