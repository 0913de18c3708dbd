"""Argument checks of the MLA decode wrappers and of the MoE decode wrapper (kernels/moe/forward.py
imports them): a wrong shape, dtype, device or layout fails with `ValueError("expected ...,
got ...")` before a launch, never as an out-of-bounds read."""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch

FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)
INDEX_DTYPES = (torch.int32, torch.int64)


def interpreting() -> bool:
    """True when Triton runs kernels through its CPU interpreter (tensors then live on the CPU)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def kernel_device(t: object, name: str) -> torch.device:
    """The device the kernels run on: CUDA, or the CPU only under TRITON_INTERPRET=1."""
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"expected {name} to be a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cuda" and not interpreting():
        raise ValueError(
            f"expected CUDA tensors (or TRITON_INTERPRET=1 for CPU tensors), got {t.device}"
        )
    return t.device


def check(
    name: str,
    t: object,
    shape: Sequence[int | None],
    dtypes: Sequence[torch.dtype],
    device: torch.device,
    *,
    contiguous: bool = True,
) -> torch.Tensor:
    """One argument; `None` in `shape` accepts any size on that axis."""
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
    if t.device != device:
        raise ValueError(f"expected {name} on {device}, got {t.device}")
    if contiguous and not t.is_contiguous():
        raise ValueError(f"expected {name} to be contiguous, got strides {t.stride()}")
    return t


def sm_count(device: torch.device) -> int:
    """Multiprocessors of `device`; 4 on the CPU (interpreter), so splits stay few there."""
    if device.type != "cuda":
        return 4
    return torch.cuda.get_device_properties(device).multi_processor_count
